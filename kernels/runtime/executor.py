"""The CPU executor: interpret a launch the first time, record it the second, replay it after.

A launch's *signature* (``kernels/runtime/signature.py``) is its kernel, constexpr values (functions by
identity), tensor dtypes, grid, scalar arguments, the interpreter's options and the builder. A
scalar position is part of the signature until it is seen with two different values under an
otherwise equal signature; from then on it is a replay input (a learning rate that changes every
step, a random kernel's seed and offset). The first sighting of a signature
interprets; the second interprets under the recorder (``kernels/runtime/recorder.py``) and compiles the
trace (``kernels/runtime/trace.py``); later ones replay it. A static part's second recording (other values)
probes its value-keyed scalars (``KernelState.settle``): its trace as recorded, with the scalars no
guard reads as inputs, is the static part's generic trace, which replays the first sighting of other
values of them; folded (``recorder.fold_probes``) it is the launch's own. A trace whose guards (Python decisions on
arguments or data) do not hold records another variant. What the recorder refuses interprets every
time. Each kernel's traces are bounded in memory (oldest dropped first). The trace cache
(``kernels/runtime/trace_cache.py``) keeps traces on disk: a first sighting looks there first.

Verify mode (``TGRAD_REPLAY_VERIFY=1`` or ``set_replay(verify=True)``) proves a replay is the
interpreter's computation: every replayed launch also runs fully interpreted from the same memory
snapshot, every fresh trace is replayed from its pre-launch snapshot, and the bytes of every tensor
the launch can reach must be equal (``ReplayMismatch`` otherwise). ``TGRAD_REPLAY=0`` or
``set_replay(False)`` interprets everything. While something instruments the interpreter's builder
(a memory checker), launches interpret, so the instrument sees every access.

``replay_counts`` counts replayed, recorded and interpreted launches; ``fallback_reasons`` says
why launches interpreted.
"""
from __future__ import annotations

import threading

import numpy as np

from .interpreter import _interpreted, _interpreting
from .recorder import Recorder, Refused, builder_instrumented, fold_probes, recording
from . import trace_cache
from .signature import MAX_ENTRIES, KernelState
from .sites import plan_site
from .switches import (config as _config, count_replays, fallback_reasons, local as _local, replay_counts,
                       replay_disabled, replay_enabled, replay_verify, run_quietly, set_replay)
from .trace import compile_launch
from .verify import ReplayMismatch, Snapshot as _Snapshot, compare as _compare
from .triton_private import interpreter_builder

__all__ = ["replay_counts", "fallback_reasons", "count_replays", "set_replay", "replay_enabled", "replay_verify",
           "replay_disabled", "ReplayMismatch", "clear_replay_cache"]

_lock = threading.Lock()  # cache updates
MAX_VARIANTS = 8  # traces per signature (guard outcomes) before it interprets for good
KERNEL_BYTES = 64 << 20  # constants (offsets, masks, folded values) per kernel
COMPILE_ONLY_OPTIONS = ("num_warps", "num_stages", "num_ctas", "enable_fp_fusion", "maxnreg")


_states: list = []  # every kernel's KernelState (for clear_replay_cache)


def clear_replay_cache() -> None:
    with _lock:
        for state in _states:
            state.clear()
            trace_cache.forget(state)


def _interpret(runner, grid, args, meta, reason):
    replay_counts["interpreted"] += 1
    fallback_reasons[f"{runner.fn.__name__}: {reason}"] += 1
    grid3, call = runner.prepare(grid, args, meta)
    with _interpreting(), np.errstate(all="ignore"):
        runner.execute(grid3, call)


class _Entry:
    __slots__ = ("variants", "refused", "nbytes")

    def __init__(self):
        self.variants, self.refused, self.nbytes = [], None, 0

    def select(self, A, tensors):
        for v in self.variants:
            if v.guards is None:
                return v
            with np.errstate(all="ignore"):
                got = v.guards(A)
            if got is None:
                return "aliasing"
            if got == v.expected:
                return v
        return None


def _state(kernel):
    state = kernel.__dict__.get("_tgrad_replay")
    if state is None:
        with _lock:
            state = kernel.__dict__.get("_tgrad_replay")
            if state is None:
                state = kernel.__dict__["_tgrad_replay"] = KernelState(_interpreted(kernel))
                state.learned = lambda static: trace_cache.learned_varying(kernel, state, static)
                _states.append(state)
    return state


def _replay(variant, A):
    run_quietly(variant.run, A)


class _Launch:
    """One launch's arguments, bound: what run() needs, and what a graph replay re-runs."""
    __slots__ = ("kernel", "state", "grid", "args", "meta", "keep_alive", "key", "A", "tensors", "variant")

    def __init__(self, kernel, state, grid, args, meta, keep_alive, bound):
        self.kernel, self.state, self.grid, self.args, self.meta = kernel, state, grid, args, meta
        self.keep_alive = keep_alive
        self.key, self.A, self.tensors = bound if bound is not None else (None, None, None)
        self.variant = None  # the trace this launch last ran (a graph step replays it directly)

    def run(self, force_record=False):
        state, runner = self.state, self.state.runner
        if self.key is None:
            return _interpret(runner, self.grid, self.args, self.meta, "arguments it cannot key")
        first, generic = False, None
        with _lock:
            entry = state.entries.get(self.key)
            if entry is not None:
                state.entries.move_to_end(self.key)
            elif not force_record and self.key not in state.seen:
                if len(state.seen) > 4 * MAX_ENTRIES:
                    state.seen.clear()
                state.seen.add(self.key)
                first = True
                generic_key = state.generic_key(self.key)
                generic = state.entries.get(generic_key) if generic_key is not None else None
        if first:  # the static part's generic trace replays it, if there is one; its own trace comes next time
            variant = generic.select(self.A, self.tensors) if generic is not None and generic.variants else None
            if variant is not None and variant != "aliasing":
                replay_counts["replayed"] += 1
                return self._verify_replay(variant) if _config["verify"] else _replay(variant, self.A)
            found = trace_cache.first_sighting(self.kernel, state, self.key)
            if found is not None and found is not trace_cache.SEEN:  # stored by an earlier run: replays at once
                with _lock:
                    entry = state.entries.get(self.key) or _install(state, self.key, *found)
            elif found is None and not any(isinstance(k, np.dtype) for k in self.key[1]):
                return _interpret(runner, self.grid, self.args, self.meta, "first sighting")
            # seen by an earlier run, or a scalar of this static part took another value before: record it now
        if entry is not None:
            if entry.refused is not None:
                return _interpret(runner, self.grid, self.args, self.meta, entry.refused)
            variant = entry.select(self.A, self.tensors) if entry.variants else None
            if variant == "aliasing":
                return _interpret(runner, self.grid, self.args, self.meta, "a guard reads memory an earlier "
                                                                           "store of the launch writes")
            if variant is not None:
                self.variant = variant
                replay_counts["replayed"] += 1
                if _config["verify"]:
                    return self._verify_replay(variant)
                return _replay(variant, self.A)
            if len(entry.variants) >= MAX_VARIANTS:
                return _interpret(runner, self.grid, self.args, self.meta, "guards keep failing")
        return self._record(entry)

    def _reachable(self):
        return list(self.tensors) + list(self.keep_alive)

    def _verify_replay(self, variant):
        snap = _Snapshot(self._reachable())
        _replay(variant, self.A)
        replayed = snap.now()
        snap.restore()
        grid3, call = self.state.runner.prepare(self.grid, self.args, self.meta)
        with _interpreting(), np.errstate(all="ignore"):
            self.state.runner.execute(grid3, call)
        _compare(self.kernel.__name__, "the replay and the interpreter", replayed, snap.now())

    def _record(self, entry):
        state, runner = self.state, self.state.runner
        snap = _Snapshot(self._reachable()) if _config["verify"] else None
        recorder = Recorder([])
        grid = self.grid
        with _interpreting(), np.errstate(all="ignore"):
            # probe a static part recorded before for other values only: one recorded once (a training
            # step's shapes) would keep a generic trace beside its own for nothing
            probe = entry is None and state.recordings.get(self.key[0], 0) > 0 and state.generic_key(self.key) is None
            call = state.recording_call(recorder, self.key, self.args, self.meta, probe=probe)
            with recording(recorder):
                interpreter_builder.set_grid_dim(*grid)
                for x in range(grid[0]):
                    for y in range(grid[1]):
                        for z in range(grid[2]):
                            interpreter_builder.set_grid_idx(x, y, z)
                            recorder.begin_program((x, y, z))
                            runner.fn(**call)
        compiled, reason = None, recorder.refused
        if reason is None:
            compiled, reason = _compile(recorder.record)
        record, generic = recorder.record, None
        del recorder
        if record.probes and compiled is not None:  # the trace as recorded serves other values; folded, this one
            generic = compiled
            compiled, reason = _compile(fold_probes(record))
        with _lock:
            if generic is not None:
                generic_key, implied = state.settle(self.key, record)
                if implied:
                    generic.guards = None  # they read only scalars the signature holds the values of
                if generic_key != self.key:
                    _store(state, state.entries.setdefault(generic_key, _Entry()), generic_key, generic)
            elif record.probes:
                state.settle(self.key, record, refused=True)
            if entry is None:
                entry = state.entries.setdefault(self.key, _Entry())
            if compiled is None:
                entry.refused = reason
            else:
                _store(state, entry, self.key, compiled)
            variants = list(entry.variants)
        trace_cache.store(self.kernel, state, self.key, variants, reason)
        if compiled is None:
            replay_counts["interpreted"] += 1
            fallback_reasons[f"{self.kernel.__name__}: {reason}"] += 1
            return None
        replay_counts["recorded"] += 1
        self.variant = compiled
        if snap is not None:  # the fresh traces, replayed from the pre-launch memory, must write the same
            interpreted = snap.now()
            for trace, what in ((compiled, "a fresh trace"), (generic, "a fresh generic trace")):
                if trace is not None:
                    snap.restore()
                    _replay(trace, self.A)
                    _compare(self.kernel.__name__, f"{what} and the interpreter", snap.now(), interpreted)
        return None


def _compile(record):
    """(trace, None) or (None, why it is not replayable)."""
    try:
        compiled = compile_launch(record, [g[2] for g in record.guards])
    except Refused as e:
        return None, str(e)
    if compiled.nbytes > KERNEL_BYTES:
        return None, "a trace larger than the kernel's replay budget"
    return compiled, None


def _store(state, entry, key, compiled):
    """Add a trace to ``key``'s entry, dropping the oldest signatures past the kernel's bounds."""
    entry.variants.append(compiled)
    entry.nbytes += compiled.nbytes
    state.nbytes += compiled.nbytes
    _bound(state, key)


def _bound(state, key):
    """Drop the kernel's oldest signatures while its traces are over budget (``key``'s last)."""
    while state.entries and (state.nbytes > KERNEL_BYTES or len(state.entries) > MAX_ENTRIES):
        old_key, old = state.entries.popitem(last=False)
        state.nbytes -= old.nbytes
        if old_key == key:
            break


def _install(state, key, variants, refused):
    """A signature's entry as the trace cache stored it (its variants, or why it is refused)."""
    entry = state.entries[key] = _Entry()
    entry.variants, entry.refused = list(variants[:MAX_VARIANTS]), refused
    entry.nbytes = sum(v.nbytes for v in entry.variants)
    state.nbytes += entry.nbytes
    _bound(state, key)
    return entry


def run_site(kernel, site, tensors, build, keep_alive=()) -> bool:
    """Run a launch of a call site (``launch.launch_site``): a site seen before replays from its
    tensors' addresses alone (True); otherwise (a site not planned yet, a trace with guards or not
    recorded yet, verify mode, replay off, an instrumented builder) ``build()`` gives the launch's
    (grid, args, meta) and it runs as ``run`` runs it, planning the site once its trace replays
    (False)."""
    plan = site_plan(kernel, site)
    if plan is not None and plan(tensors):
        return True
    grid, args, meta = build()
    run(kernel, grid, args, meta, keep_alive, site=(site, tensors))
    return False


def site_plan(kernel, site):
    """The executor's ``SitePlan`` of a ``launch_site`` site (``runtime/sites.py``), or None."""
    state = kernel.__dict__.get("_tgrad_replay")
    return state.sites.get(site) if state is not None else None


def run(kernel, grid, args, meta, keep_alive=(), capturing=False, site=None):
    """Run one CPU launch (``launch()`` calls this). In a graph capture, returns the bound launch
    the graph replays (recorded now, so replays run no Triton frontend). ``site``: (site key,
    tensors) of a ``launch_site`` call, planned here for ``run_site`` once its trace replays."""
    for option in COMPILE_ONLY_OPTIONS:  # meaningful to the compiler only
        meta.pop(option, None)
    state = _state(kernel)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    if not _config["enabled"] or _local.disabled or builder_instrumented():
        _interpret(state.runner, grid, args, meta, "replay off" if not _config["enabled"] else
                   "an instrumented interpreter")
        return _Launch(kernel, state, grid, args, meta, keep_alive, None) if capturing else None
    with _lock:
        bound = state.bind(grid, args, meta)
        entry = state.entries.get(bound[0]) if bound is not None else None
        if entry is not None:
            state.entries.move_to_end(bound[0])
            if site is not None and entry.variants:
                plan = state.sites.get(site[0])
                if plan is None:
                    plan_site(state, site[0], site[1], bound, entry)
                elif _config["verify"] and plan.key == bound[0]:  # the plan must be what binding finds
                    planned = plan.inputs(site[1])
                    if planned is not None and planned != bound[1]:
                        raise ReplayMismatch(f"verify mode: {kernel.__name__}: a launch_site plan gives other "
                                             "replay inputs than binding the launch's arguments")
    if entry is not None and not capturing and entry.variants and not _config["verify"]:
        variant = entry.variants[0]
        if variant.guards is None:  # the common case, without building a _Launch: one trace, no guards
            replay_counts["replayed"] += 1
            return _replay(variant, bound[1])
    launch = _Launch(kernel, state, grid, args, dict(meta), tuple(keep_alive), bound)
    launch.run(force_record=capturing)
    return launch if capturing else None


def graph_stepper():
    """``graph_step`` for one replay of a CPU graph, with the executor's switches (replay on, verify
    mode, an instrumented builder) read once for the whole replay instead of once per launch."""
    if not _config["enabled"] or _config["verify"] or _local.disabled or builder_instrumented():
        return graph_step

    def step(launch: _Launch):
        variant = launch.variant
        if variant is None or variant.guards is not None or launch.key is None:
            return graph_step(launch)
        replay_counts["replayed"] += 1
        return variant.run(launch.A)  # the graph's replay runs under np.errstate(all="ignore")
    return step


def graph_step(launch: _Launch):
    """A captured launch replayed by a CPU graph: the trace recorded for it at capture when its
    guards hold (the graph keeps it, cached or not), else what an eager launch would do."""
    if launch.key is None or not _config["enabled"] or _local.disabled or builder_instrumented():
        return _interpret(launch.state.runner, launch.grid, launch.args, launch.meta, "replay off")
    variant = launch.variant
    if variant is not None and variant.guards is None and not _config["verify"]:
        replay_counts["replayed"] += 1
        return variant.run(launch.A)  # the graph's replay runs under np.errstate(all="ignore")
    return launch.run(force_record=True)
