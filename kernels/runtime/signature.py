"""A CPU launch's signature: what its recorded trace may be replayed for (``kernels/runtime/executor.py``).

The signature is the kernel, its constexpr values (functions by identity), tensor dtypes, grid,
interpreter options and the builder, plus its scalar arguments: a scalar position is keyed by its
value until it is seen with two different values under an otherwise equal signature (``DISTINCT``:
the grid, constexprs and dtypes usually tell call sites apart, so their shapes stay folded into
their traces), then it is a replay input, keyed by its dtype only (a learning rate that changes every step, a random kernel's seed and offset). A
launch whose values repeat exactly reuses its bound plan without classifying anything again (plans
leave replay inputs' values out: a value that changes every launch adds no plan).

A tuple argument (nested or not: ``index_kernel``'s index tensors and their strides) is keyed by
its structure in the static part and its elements as the top level's are: tensors by dtype with
their addresses as replay inputs, ints and bools as scalars at position (argument, *path), floats
as constants.

Every scalar is a replay input slot, read or not. A static part's second recording probes the
value-keyed scalars (``recording_call``): ``settle`` finds those no guard reads (free: the static
part's generic signature keys them by dtype, ``generic_key``) and pins those a guard reads (a loop
bound: keyed by value in this kernel from then on, never probed or varying again).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch
import triton.language as tl

from .interpreter import _pointer
from .recorder import ARG, CONST, DATA
from .triton_private import implicit_cvt, interpreter_builder, tuple_create

MAX_HOLE_PATTERNS = 8  # patterns of replay-input positions a kernel's plans are looked up under
TENSOR, VARYING, KEYED = 0, 1, 2  # what a replay input is: an address, a scalar keyed by dtype, by value
DISTINCT = 1  # values a scalar position may take under one static signature before it is a replay input
MAX_ENTRIES = 512  # signatures per kernel

_MISSING = object()


def _nothing_learned(static):
    return (), ()


def _kind(v):
    if type(v) is bool:
        return np.dtype(np.bool_)
    if -2**31 <= v < 2**31:
        return np.dtype(np.int32)
    if 0 <= v < 2**32:
        return np.dtype(np.uint32)
    if -2**63 <= v < 2**63:
        return np.dtype(np.int64)
    return np.dtype(np.uint64)


def _at(v, path):
    """The element of nested tuples ``v`` at index ``path``."""
    for j in path:
        v = v[j]
    return v


def _hole(atom, path, kind):
    """A tuple argument's atom with its element at ``path`` replaced by ``kind``; None when the
    atom has no element there (a pattern of another static part)."""
    if not path:
        return kind
    if type(atom) is not tuple or path[0] >= len(atom):
        return None
    inner = _hole(atom[path[0]], path[1:], kind)
    return None if inner is None else atom[:path[0]] + (inner,) + atom[path[0] + 1:]


def _holed(fast, holes, values):
    """``fast`` (a ``_fast_key``) with the values at ``holes`` replaced by their kinds: the plan of a
    launch whose replay inputs are those positions, whatever their values. The kind stays in the key,
    as it does in the signature: a value of another kind is another signature. None when the
    launch's values do not fit the pattern (an argument that is no integer there)."""
    atoms = list(fast)
    for k, j in holes:
        if k >= len(values):
            return None
        v = values[k]
        if j is None:
            if type(v) is not int and type(v) is not bool:
                return None
            atoms[k + 2] = ("replay input", _kind(v))
        else:
            try:
                e = _at(v, j)
            except (TypeError, IndexError):
                return None  # a pattern of another static part: it cannot match
            if type(e) is not int and type(e) is not bool:
                return None
            atom = _hole(atoms[k + 2], j, ("replay input", _kind(e)))
            if atom is None:
                return None
            atoms[k + 2] = atom
    return tuple(atoms)


def _guard_sources(record):
    """(the input slots the guards of ``record`` depend on, whether they depend on memory)."""
    nodes, ops = record.nodes, record.ops
    slots, stack, done, reads_data = set(), [g[0] for g in record.guards], set(), False
    while stack:
        i = stack.pop()
        if i in done:
            continue
        done.add(i)
        node = nodes[i]
        if node.tag == DATA:
            reads_data = True
        if node.op is not None:
            stack.extend(ops[node.op].ins)
        elif i in record.slot_of:
            slots.add(record.slot_of[i])
        elif node.base is not None:  # an argument's address plus offsets
            slots.add(node.base)
    return slots, reads_data


def _constexpr_key(v):
    t = type(v)
    if t is int or t is bool or t is str or v is None:
        return (t, v)
    if t is float:
        return (t, v.hex())
    if t is tuple:
        return tuple(_constexpr_key(x) for x in v)
    if isinstance(v, tl.dtype):
        return ("dtype", v.name)
    return ("id", id(v))  # functions and other objects by identity (held in _KernelState.refs)


def _atom(v):
    """A value in ``_fast_key``: ints, None and strings as they are, tensors by dtype (their
    addresses are replay inputs), tuples element by element, other values tagged by type;
    ``_MISSING`` for a value it cannot key."""
    t = type(v)
    if t is int or v is None or t is str:
        return v
    if t is torch.Tensor:
        return v.dtype if v.device.type == "cpu" else _MISSING
    if t is tuple:
        atoms = tuple(_atom(e) for e in v)
        return _MISSING if _MISSING in atoms else atoms
    if t is bool:
        return (bool, v)
    if t is float:
        return (float, v.hex())
    return _MISSING


def _tuple_static(v, pos, scalars):
    """A tuple argument's part of the static signature: its structure (length, nesting), tensors'
    dtypes and floats' values; its ints, bools and tensors are appended to ``scalars`` at their
    positions (argument index, *path), depth first. None for an element it cannot key."""
    part = ["T"]
    for j, e in enumerate(v):
        t = type(e)
        if t is int or t is bool:
            part.append(1)
            scalars.append((pos + (j,), e))
        elif isinstance(e, torch.Tensor):
            if e.device.type != "cpu":
                return None
            part.append(e.dtype)
            scalars.append((pos + (j,), e))
        elif t is tuple:
            e = _tuple_static(e, pos + (j,), scalars)
            if e is None:
                return None
            part.append(e)
        elif t is float:
            part.append(("F", e.hex()))
        else:
            return None
    return tuple(part)


class KernelState:
    def __init__(self, runner):
        self.runner = runner
        self.names = runner.names
        self.is_const = [n in runner.constexprs for n in self.names]
        self.index = {n: k for k, n in enumerate(self.names)}
        self.refs: dict = {}
        self.learned = _nothing_learned  # static part -> (positions an earlier run found varying, pinned)
        self.clear()

    def clear(self):
        self.plans: dict = {}  # _fast_key, replay inputs' values left out -> (signature, where the replay inputs are)
        self.holes: list = []  # which positions plans leave out: one tuple of (position, tuple index) per pattern
        self.sites: dict = {}  # launch_site key -> (signature, replay inputs, tensor slots, options id)
        self.contexts: dict = {}  # static part -> (distinct values per scalar position, varying, free slots, kept)
        self.recordings: dict = {}  # static part -> recordings made under it
        self.pinned: set = set()  # scalar positions some guard read: keyed by value, never probed or varying
        self.entries: OrderedDict = OrderedDict()  # signature -> _Entry
        self.seen: set = set()
        self.nbytes = 0

    def bind(self, grid, args, meta):
        """(signature, replay inputs, tensors by input slot), or None for arguments it cannot key.

        The signature is (static part, scalars): the static part is the grid, constexprs, tensor
        dtypes and options; a scalar position is keyed by its value until it has taken more than
        DISTINCT values under the same static part, then it is a replay input (keyed by its dtype)."""
        names = self.names
        n = len(args)
        if n > len(names):
            return None
        values = list(args)
        if meta:
            index = self.index
            for k in meta:
                if index.get(k, -1) < n:
                    return None
        if n < len(names):
            defaults = self.runner.defaults
            for name in names[n:]:
                v = meta.get(name, _MISSING)
                if v is _MISSING:
                    v = defaults.get(name, _MISSING)
                    if v is _MISSING:
                        return None
                values.append(v)
        fast = self._fast_key(grid, values)
        if fast is not None:
            plan = self.plans.get(fast)
            if plan is None and self.holes:
                for holes in self.holes:
                    holed = _holed(fast, holes, values)
                    plan = self.plans.get(holed) if holed is not None else None
                    if plan is not None:
                        break
            if plan is not None:
                key, picks = plan
                A, tensors = [], []
                for k, j, what in picks:
                    v = values[k] if j is None else _at(values[k], j)
                    if what == TENSOR:
                        A.append(v.data_ptr())
                        tensors.append(v)
                    else:
                        A.append(v)
                        tensors.append(None)
                return key, A, tensors
        bound = self._bind(grid, values)
        if bound is not None and fast is not None:
            if len(self.plans) > 8 * MAX_ENTRIES:
                self.plans.clear()
            # a plan is stored with its replay inputs' values left out, so values that change every
            # launch (a seed, a learning rate's bits) reuse one plan instead of adding one per launch
            holes = tuple((k, j) for k, j, what in bound[3] if what == VARYING)
            if holes:
                if holes not in self.holes:
                    if len(self.holes) >= MAX_HOLE_PATTERNS:
                        self.holes.pop(0)
                    self.holes.append(holes)
                fast = _holed(fast, holes, values)
            self.plans[fast] = (bound[0], bound[3])
        return bound[:3] if bound is not None else None

    def _fast_key(self, grid, values):
        """The launch's values as one hashable tuple (addresses left out), or None: the plan of a
        launch seen before with the same tuple is reused without classifying anything again."""
        atoms = [grid, id(interpreter_builder.options)]
        is_const = self.is_const
        for k, v in enumerate(values):
            t = type(v)
            if t is int or v is None or t is str:
                atoms.append(v)
            elif t is torch.Tensor:
                if v.device.type != "cpu":
                    return None
                atoms.append(v.dtype)
            else:
                atom = _atom(v)
                if atom is _MISSING:
                    if not is_const[k]:
                        return None
                    atom = ("id", id(v))
                atoms.append(atom)
        return tuple(atoms)

    def _bind(self, grid, values):
        static, scalars, A, tensors = [grid], [], [], []
        is_const = self.is_const
        for k, v in enumerate(values):
            if is_const[k]:
                key = _constexpr_key(v)
                if key[0] == "id":
                    self.refs[id(v)] = v
                static.append(key)
                continue
            t = type(v)
            if t is int or t is bool:
                static.append(1)
                scalars.append((k, v))
            elif isinstance(v, torch.Tensor):
                if v.device.type != "cpu":
                    return None
                static.append(v.dtype)
                scalars.append((k, v))
            elif t is tuple:
                part = _tuple_static(v, (k,), scalars)
                if part is None:
                    return None
                static.append(part)
            elif t is float:
                static.append(("F", v.hex()))  # passed as a Python float: a constant of the trace
            elif v is None:
                static.append(None)
            else:
                return None
        options = interpreter_builder.options
        static.append((id(interpreter_builder), options.debug, options.sanitize_overflow))
        static = tuple(static)
        distinct, varying, _, kept = self._context(static)
        pinned = self.pinned
        keys, picks = [], []
        for pos, v in scalars:
            k, j = (pos[0], pos[1:]) if type(pos) is tuple else (pos, None)
            if type(v) is not int and type(v) is not bool:  # a tensor: its address is an input
                keys.append(0)
                A.append(v.data_ptr())
                tensors.append(v)
                picks.append((k, j, TENSOR))
                continue
            A.append(v)  # every scalar is an input: a probing recording reads it (``recording_call``)
            tensors.append(None)
            if pos not in varying and pos not in pinned and pos not in kept:
                seen = distinct.get(pos)
                if seen is None:
                    seen = distinct[pos] = set()
                if (type(v), v) not in seen:
                    seen.add((type(v), v))
                    if len(seen) > DISTINCT:
                        varying.add(pos)
                        del distinct[pos]
            if pos in varying:
                keys.append(_kind(v))
                picks.append((k, j, VARYING))
            else:
                keys.append((type(v), v))
                picks.append((k, j, KEYED))
        return (static, tuple(keys)), A, tensors, tuple(picks)

    def _context(self, static):
        """(distinct values per scalar position, positions that vary, input slots a probe found free,
        positions an earlier run's probe of it pinned: keyed by value here) of a static part."""
        context = self.contexts.get(static)
        if context is None:
            if len(self.contexts) > 4 * MAX_ENTRIES:
                self.contexts.clear()
            varying, kept = self.learned(static)
            context = self.contexts[static] = ({}, set(varying), set(), frozenset(kept))
        return context

    def generic_key(self, key):
        """The signature of the trace a probing recording (``settle``) made for ``key``'s static part,
        which serves any values of its free scalars; None before one was made."""
        context = self.contexts.get(key[0])
        if context is None or not context[2]:
            return None
        free = context[2]
        return key[0], tuple(_kind(k[1]) if i in free and type(k) is tuple else k for i, k in enumerate(key[1]))

    def recording_call(self, recorder, key, args, meta, probe=False):
        """The launch's converted arguments with fresh handles, each registered with its tag.

        ``probe``: the scalars keyed by value (but not pinned) are recorded as inputs too, to learn
        which of them the trace's structure depends on (``settle``); ``record.probes`` maps their
        input slots to their positions."""
        names = self.names
        values = list(args) + [meta[n] if n in meta else self.runner.defaults[n] for n in names[len(args):]]
        call, slots, probes = {}, [], {}
        if len(self.recordings) > 4 * MAX_ENTRIES:
            self.recordings.clear()
        self.recordings[key[0]] = self.recordings.get(key[0], 0) + 1
        keys = iter(key[1])
        pinned = self.pinned

        def scalar(v, pos):
            t = implicit_cvt(v)
            part = next(keys)
            if isinstance(part, np.dtype):
                recorder.argument(t.handle, ARG, len(slots))
                slots.append(("scalar", part))
            elif probe and pos not in pinned:
                probes[len(slots)] = pos
                recorder.argument(t.handle, ARG, len(slots))
                slots.append(("scalar", _kind(v)))
            else:
                recorder.argument(t.handle, CONST)
                slots.append(("scalar", _kind(v)))  # an input the trace does not read: slots stay A's
            return t

        def pointer(v):
            next(keys)
            t = _pointer(v)
            recorder.argument(t.handle, ARG, len(slots))
            slots.append(("ptr", np.dtype(np.uint64)))
            return t

        def element(v, pos):  # an element of a tuple argument at position ``pos``, as ``_tuple_static`` keys it
            t = type(v)
            if t is tuple:
                return tuple_create(v, [element(e, pos + (j,)) for j, e in enumerate(v)])
            if t is int or t is bool:
                return scalar(v, pos)
            if isinstance(v, torch.Tensor):
                return pointer(v)
            return implicit_cvt(v)  # a float: a constant of the trace, as at the top level
        for k, (name, v) in enumerate(zip(names, values)):
            if self.is_const[k]:
                call[name] = v
            elif isinstance(v, torch.Tensor):
                call[name] = pointer(v)
            elif type(v) is tuple:
                call[name] = element(v, (k,))
            elif type(v) is int or type(v) is bool:
                call[name] = scalar(v, k)
            else:
                call[name] = implicit_cvt(v)
        recorder.record.slots = slots
        recorder.record.probes = probes
        return call

    def settle(self, key, record, refused=False):
        """(generic signature, guards implied) of a probing recording (``recording_call``), or None for
        a refused one, which a probed scalar may have caused: all are pinned, the next recording
        folds them.

        A probed scalar that no guard (a Python decision) reads is free: any value replays the
        trace, which is stored under the generic signature (``generic_key``) and replays the first
        sighting of this static part's other values. One a guard reads decides the trace's
        structure (a loop bound): it is pinned to its value in this kernel's signatures from now on.
        When the guards read nothing but pinned scalars, the signature (which holds their values)
        implies them: "guards implied" tells the caller to drop them."""
        probes = record.probes
        if refused:
            self.pinned.update(probes.values())
            return None
        slots, reads_data = _guard_sources(record)
        free = self._context(key[0])[2]
        for slot, pos in probes.items():
            if slot in slots:
                self.pinned.add(pos)
            else:
                free.add(slot)
        return self.generic_key(key) or key, bool(record.guards) and not reads_data and slots <= probes.keys()
