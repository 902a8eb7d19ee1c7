"""Planned call sites: a ``launch_site`` call whose trace replays from its tensors' addresses alone.

Once a call site's launch has bound to a recorded signature with one unguarded trace, the executor
(``runtime/executor.py``) keeps a ``SitePlan`` for the site: the signature, its replay inputs with
the scalars filled in, and which input slots are which of the site's tensors. A later launch of
the site replays the trace without building or binding its arguments. A caller that decided its
whole launch from metadata (``launch.site_replayer``) holds the plan itself and skips the lookups.
"""
from __future__ import annotations

from operator import itemgetter

from .recorder import _BASE_ATTRS, builder_instrumented
from .signature import MAX_ENTRIES
from .switches import _ERRORS, _IGNORE_ERRORS, config, local, replay_counts, run_quietly
from .triton_private import InterpreterBuilder, interpreter_builder

__all__ = ["SitePlan", "plan_site"]


class SitePlan:
    """``plan(tensors)``: replay the site's trace for these tensors and return True, or return False
    having run nothing (replay off, verify mode, an instrumented builder, other interpreter options,
    a tensor off the CPU, the signature evicted from the cache, a trace with guards)."""

    __slots__ = ("key", "A", "slots", "pick", "run", "options", "entry", "entries", "sites", "site")

    def __init__(self, key, A, slots, entry, state, site):
        self.key, self.A, self.slots, self.entry = key, list(A), slots, entry
        # the replay inputs in one step: the plan's scalars and the tensors' addresses, picked by slot
        fill = dict(slots)
        picks = [len(self.A) + fill[s] if s in fill else s for s in range(len(self.A))]
        self.pick = itemgetter(*picks) if len(picks) > 1 else lambda src: (src[picks[0]],)
        # the trace as a function of the tensors (their addresses read where it reads their slots)
        self.run = entry.variants[0].on_tensors(fill, self.A) if entry.variants else None
        self.options = id(interpreter_builder.options)
        self.entries, self.sites, self.site = state.entries, state.sites, site

    def inputs(self, tensors):
        """The replay inputs for these tensors: the plan's, with their addresses in its slots (None
        when the plan does not apply: other interpreter options, a tensor off the CPU)."""
        if self.options != id(interpreter_builder.options):
            return None
        for t in tensors:
            if not t.is_cpu:
                return None
        return list(self.pick(self.A + [t.data_ptr() for t in tensors]))

    def __call__(self, tensors) -> bool:
        if not config["enabled"] or config["verify"] or local.disabled:
            return False
        A = self.inputs(tensors)
        if A is None or builder_instrumented():
            return False
        return _replay(self.entry, self.entries, self.key, self.sites, self.site, A)

    def bound(self, observers, captures, counts, name):
        """``self`` as a function of CPU tensors for a launching layer whose caller checked their
        devices once (its call signature has them): it replays only while ``observers`` is empty
        and this thread's ``captures`` record nothing, and counts each replay in ``counts[name]``.
        The same steps as ``__call__`` and ``_replay``, written out with what they read bound: it
        runs on every planned eager op, where each call saved is a share of the op's time."""
        options, key, entries, entry, sites, site = self.options, self.key, self.entries, self.entry, self.sites, \
            self.site
        A0, pick, builder, direct = self.A, self.pick, interpreter_builder, self.run
        base, cls = _BASE_ATTRS.issuperset, InterpreterBuilder

        def run(tensors) -> bool:
            # (builder_instrumented, asking only for the memory methods the trace's launch calls)
            if observers or captures.recorders or captures.cuda or not config["enabled"] or config["verify"] or \
                    local.disabled or options != id(builder.options) or \
                    not base(builder.__dict__) and builder_instrumented():
                return False
            variants = entry.variants
            if not variants or variants[0].guards is not None:
                return False
            getter, methods = variants[0].memory
            if getter(cls) != methods:
                return False
            try:  # as _replay: refreshed as the least recently used, the plan dropped once evicted
                entries.move_to_end(key)
            except KeyError:
                sites.pop(site, None)
                return False
            replay_counts["replayed"] += 1
            counts[name] += 1
            if direct is None:
                run_quietly(variants[0].run, pick(A0 + [t.data_ptr() for t in tensors]))
            elif _ERRORS is None:
                run_quietly(direct, tensors)
            else:
                token = _ERRORS.set(_IGNORE_ERRORS)  # run_quietly's steps
                try:
                    direct(tensors)
                finally:
                    _ERRORS.reset(token)
            return True
        return run


def _replay(entry, entries, key, sites, site, A) -> bool:
    """Replay ``entry``'s one unguarded trace on the inputs ``A`` while the cache ``entries`` holds it
    under ``key`` (True); False having run nothing (a trace with guards, or the entry evicted, which
    drops the plan of ``site`` from ``sites``: the site binds and plans again)."""
    variants = entry.variants
    if not variants or variants[0].guards is not None:
        return False
    try:  # refreshed as the least recently used: one call, atomic, no lock (an eviction in between raises)
        entries.move_to_end(key)
    except KeyError:
        sites.pop(site, None)
        return False
    replay_counts["replayed"] += 1
    run_quietly(variants[0].run, A)
    return True


def plan_site(state, site, tensors, bound, entry):
    """Plan ``site`` (a ``launch_site`` key) from its launch's binding ``bound`` (signature, replay
    inputs, the tensor bound to each slot): nothing when a tensor argument is not one of the site's
    ``tensors``."""
    key, A, bound_tensors = bound
    slots = []
    for s, t in enumerate(bound_tensors):
        if t is not None:
            index = next((i for i, u in enumerate(tensors) if u is t), None)
            if index is None:  # a tensor argument the site did not name: no plan
                return
            slots.append((s, index))
    if len(state.sites) > 8 * MAX_ENTRIES:
        state.sites.clear()
    state.sites[site] = SitePlan(key, A, tuple(slots), entry, state, site)
