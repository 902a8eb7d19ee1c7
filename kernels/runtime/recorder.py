"""Recording one interpreted launch: every builder call, each value tagged by what it depends on.

While a launch is recorded, every method of the interpreter's builder is wrapped at its outermost
call (a call it makes on itself is part of the same step), as are the interpreter's own numpy
paths that bypass the builder (``tl.reduce`` / ``tl.associative_scan`` and ``tensor.T``) and the
places Python reads a value (``bool()``, ``int()``, ``__index__``, ``range()`` on a tensor).

Each value (a ``TensorHandle``) becomes a node tagged by what may change between launches of the
same signature: constant < program id < argument (a pointer's address, a scalar that varies) <
loaded data. Constants and program-id values are folded: their recorded numbers are the replay's
(the trace is per program id). A pointer that is an argument's address plus constants is kept as
(that argument, one offset array). Everything else is an op the replay recomputes.

A Python decision on an argument or on loaded data becomes a guard, checked before a replay
stores anything. What the recorder does not understand refuses the signature (``Refused``), so it
interprets every time: values made outside the builder, unknown builder methods, tensor
descriptors, decisions on an atomic's result, reductions with a Python combine function, and
guards on memory read after a store unless only other tensors were stored to.
"""
from __future__ import annotations

import operator
import threading

import numpy as np
import triton.language as tl

from .triton_private import (InterpreterBuilder, TensorHandle, get_np_dtype, interpreter_builder,
                             module as _interp_module)

CONST, PID, ARG, DATA = 0, 1, 2, 3

LOADS = {"create_masked_load", "create_load", "create_atomic_load"}
STORES = {"create_masked_store", "create_store", "create_atomic_store"}
ATOMICS = {"create_atomic_rmw", "create_atomic_cas"}
SIDE_EFFECTS = STORES | ATOMICS | {"create_print", "create_assert", "create_assume", "create_barrier"}
# value-to-value methods of the builder (Triton 3.9): their result depends on their operands only
PURE = {
    "binary_op", "cast_impl", "create_add", "create_addptr", "create_and", "create_approx_divf", "create_ashr",
    "create_bitcast", "create_broadcast", "create_cat", "create_ceil", "create_clampf", "create_cos", "create_dot",
    "create_erf", "create_exp", "create_exp2", "create_expand_dims", "create_fabs", "create_fadd",
    "create_fcmpOEQ", "create_fcmpOGE", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOLT", "create_fcmpONE",
    "create_fcmpUEQ", "create_fcmpUGE", "create_fcmpUGT", "create_fcmpULE", "create_fcmpULT", "create_fcmpUNE",
    "create_fdiv", "create_floor", "create_fma", "create_fmul", "create_fneg", "create_fp_ext", "create_fp_to_fp",
    "create_fp_to_si", "create_fp_to_ui", "create_fp_trunc", "create_frem", "create_fsub", "create_gather",
    "create_get_num_programs", "create_get_program_id", "create_histogram", "create_iabs", "create_icmpEQ", "create_icmpNE",
    "create_icmpSGE", "create_icmpSGT", "create_icmpSLE", "create_icmpSLT", "create_icmpUGE", "create_icmpUGT",
    "create_icmpULE", "create_icmpULT", "create_idiv", "create_int_cast", "create_int_to_ptr", "create_join",
    "create_log", "create_log2", "create_lshr", "create_make_range", "create_maximumf", "create_maxnumf",
    "create_maxsi", "create_maxui", "create_minimumf", "create_minnumf", "create_minsi", "create_minui",
    "create_mul", "create_or", "create_precise_divf", "create_precise_sqrt", "create_ptr_to_int", "create_reshape",
    "create_rsqrt", "create_sdiv", "create_select", "create_shl", "create_si_to_fp", "create_sin", "create_splat",
    "create_split", "create_sqrt", "create_srem", "create_sub", "create_trans", "create_udiv", "create_ui_to_fp",
    "create_umulhi", "create_unsplat", "create_urem", "create_xor", "get_all_ones_value", "get_bf16", "get_fp16",
    "get_fp32", "get_fp64", "get_int1", "get_int16", "get_int32", "get_int64", "get_int8", "get_null_value",
    "get_uint16", "get_uint32", "get_uint64", "get_uint8", "unary_op", "create_dot_scaled",
}
STATE = {"set_grid_idx", "set_grid_dim", "get_cache_policy"}  # builder bookkeeping, no values
# ops that move an argument's address without arithmetic on it: (argument, offsets) stays so
AFFINE = {"create_addptr", "create_broadcast", "create_expand_dims", "create_reshape", "create_splat",
          "create_trans"}


def _pointer_cast(name, dtype) -> bool:
    """A bitcast to a pointer type: the same addresses (Triton's load and store of a bool pointer go
    through an int8 pointer), so an argument's address plus constant offsets stays one."""
    return name == "create_bitcast" and isinstance(dtype, tl.pointer_type)


_FAST_REDUCE = {"_sum_combine", "_elementwise_max", "_elementwise_min", "_argmin_combine_tie_break_left",
                "_argmin_combine_tie_break_fast", "_argmax_combine_tie_break_left", "_argmax_combine_tie_break_fast"}
_FAST_SCAN = {"_sum_combine", "_prod_combine"}


class Refused(Exception):
    """This signature cannot be replayed; the message says why (counted under that reason)."""


class Node:
    __slots__ = ("tag", "value", "dtype", "op", "base", "prov", "atomic", "event")

    def __init__(self, tag, value, dtype, op=None, base=None, prov=None, atomic=False):
        self.tag, self.value, self.dtype, self.op = tag, value, dtype, op
        self.base = base  # argument slot when the value is that argument's address + constant offsets
        self.prov = prov  # pointer values: frozenset of argument slots its addresses come from; None unknown
        self.atomic = atomic  # derived from an atomic's result
        self.event = None  # loads: position in the launch's memory events


class Op:
    """One recorded call: ``outs = fn(*args)`` where args mix node ids (``ins``) and static values."""
    __slots__ = ("name", "fn", "args", "ins", "outs", "pid", "event")

    def __init__(self, name, fn, args, ins, outs, pid):
        self.name, self.fn, self.args, self.ins, self.outs, self.pid = name, fn, args, ins, outs, pid
        self.event = None


class _Arg:  # marks a node id inside Op.args
    __slots__ = ("id",)

    def __init__(self, i):
        self.id = i


class LaunchRecord:
    """What one recorded launch did: nodes, ops per program, guards, memory events in order."""

    def __init__(self, slots):
        self.slots = slots  # per replay input: ("ptr"|"scalar", numpy dtype)
        self.nodes: list[Node] = []
        self.programs: list[tuple] = []  # (grid index, [op indices], [guards])
        self.ops: list[Op] = []
        self.events: list[tuple] = []  # ("load"|"store", op index, provenance)
        self.guards: list[tuple] = []  # (node id, "bool"|"index", expected, program index, event count)
        self.slot_of: dict = {}  # argument node id -> input slot
        self.slot_nodes: dict = {}  # input slot -> argument node id
        self.probes: dict = {}  # input slot -> position of a scalar recorded as an input to probe it


def fold_probes(record: LaunchRecord) -> LaunchRecord:
    """``record`` as if its probed scalars (``LaunchRecord.probes``) had been constants: what they
    reach without memory is folded to its recorded numbers, as the recorder folds constants, an
    address plus such offsets is (argument, offsets) again, and guards on folded values are gone.
    The record a launch keyed by those scalars' values replays fastest; ``record`` is left as it is."""
    nodes = [Node(n.tag, n.value, n.dtype, n.op, n.base, n.prov, n.atomic) for n in record.nodes]
    for new, old in zip(nodes, record.nodes):
        new.event = old.event
    folded = LaunchRecord(record.slots)
    folded.nodes, folded.programs, folded.ops, folded.events = nodes, record.programs, record.ops, record.events
    probe_nodes = {record.slot_nodes[s] for s in record.probes}
    folded.slot_of = {i: s for i, s in record.slot_of.items() if i not in probe_nodes}
    folded.slot_nodes = {s: i for s, i in record.slot_nodes.items() if i not in probe_nodes}
    for i in probe_nodes:
        nodes[i].tag = CONST
    for op in record.ops:
        if op.name in LOADS or op.name in SIDE_EFFECTS or op.name in ATOMICS:
            continue
        ins = [nodes[i] for i in op.ins]
        tag = max((n.tag for n in ins), default=CONST)
        if tag <= PID:
            for o in op.outs:
                nodes[o].op, nodes[o].tag, nodes[o].base, nodes[o].prov = None, tag, None, None
        elif (op.name in AFFINE or _pointer_cast(op.name, nodes[op.outs[0]].dtype)) and len(op.outs) == 1 and \
                ins[0].base is not None and all(n.tag <= PID for n in ins[1:]):
            out = nodes[op.outs[0]]
            out.op, out.tag, out.base, out.prov = None, ARG, ins[0].base, ins[0].prov
        else:
            for o in op.outs:
                nodes[o].tag = tag
    folded.guards = [g for g in record.guards if nodes[g[0]].tag > PID]
    return folded


_local = threading.local()  # .recorder: the Recorder of this thread's launch being recorded, if any


def _current():
    return getattr(_local, "recorder", None)


class Recorder:
    def __init__(self, slots):
        self.record = LaunchRecord(slots)
        self.handles: dict = {}  # id(handle) -> node id (the handles are kept alive in self.keep)
        self.keep: list = []
        self.arg_ids: dict = {}
        self.depth = 0
        self.program = None  # (ops, guards) of the program being recorded
        self.refused = None  # the reason, once the launch turned out not replayable

    def refuse(self, reason):
        """Stop recording (the launch itself runs on, interpreted): this signature is not replayable."""
        if self.refused is None:
            self.refused = str(reason)
        _local.recorder = None

    # -- nodes
    def node(self, handle, node: Node) -> int:
        nodes = self.record.nodes
        nodes.append(node)
        self.handles[id(handle)] = len(nodes) - 1
        self.keep.append(handle)
        return len(nodes) - 1

    def argument(self, handle, tag, slot=None):
        base = slot if tag == ARG and isinstance(handle.dtype, tl.pointer_type) else None
        prov = frozenset((slot,)) if base is not None else None
        i = self.node(handle, Node(tag, handle.data, handle.dtype, base=base, prov=prov))
        self.arg_ids[id(handle)] = i
        if tag == ARG:
            self.record.slot_of[i] = slot
            self.record.slot_nodes[slot] = i

    def begin_program(self, grid_idx):
        # values do not outlive their program (the kernel function returns); arguments do
        self.handles = {k: v for k, v in self.handles.items() if k in self.arg_ids}
        self.program = ([], [])
        self.record.programs.append((grid_idx,) + self.program)

    def lookup(self, handle, what) -> int:
        i = self.handles.get(id(handle))
        if i is None:
            raise Refused(f"{what}: an operand made outside the builder")
        return i

    # -- one builder call
    def call(self, name, fn, args, out):
        if name in STATE:
            return
        if name not in PURE and name not in LOADS and name not in SIDE_EFFECTS:
            raise Refused(f"unknown builder method {name}")
        if name == "create_print":
            raise Refused("a device_print (it prints the program id it runs as)")
        nodes = self.record.nodes
        ins, template = [], []
        for a in args:
            if type(a) is TensorHandle:
                i = self.lookup(a, name)
                ins.append(i)
                template.append(_Arg(i))
            elif isinstance(a, (list, tuple, dict)) or hasattr(a, "materialize_pointers"):
                if any(isinstance(x, TensorHandle) for x in (a.values() if isinstance(a, dict) else a)) \
                        or hasattr(a, "materialize_pointers"):
                    raise Refused(f"{name}: operands inside a container (tensor descriptors, prints)")
                template.append(a)
            else:
                template.append(a)
        if not ins and name not in PURE:
            raise Refused(f"{name} without operands")
        tag = max((nodes[i].tag for i in ins), default=CONST)
        atomic = any(nodes[i].atomic for i in ins)
        if name == "create_get_program_id":
            tag = PID
        elif name in LOADS or name in ATOMICS:
            tag = DATA
        outs = out if isinstance(out, tuple) else (out,) if out is not None else ()
        if any(type(o) is not TensorHandle for o in outs):
            if ins:
                raise Refused(f"{name} returned {type(out).__name__}")
            return  # a type or policy: static
        if tag <= PID and name not in SIDE_EFFECTS:  # folded: the recorded numbers are the replay's
            for o in outs:
                self.node(o, Node(tag, o.data, o.dtype))
            return
        if (name in AFFINE or _pointer_cast(name, outs[0].dtype if outs else None)) and len(outs) == 1:
            first = nodes[ins[0]]
            rest_const = all(nodes[i].tag <= PID for i in ins[1:])
            if first.base is not None and rest_const:
                o = outs[0]
                self.node(o, Node(ARG, o.data, o.dtype, base=first.base, prov=first.prov))
                return
        rec = self.record
        op_index = len(rec.ops)
        out_ids = []
        for o in outs:
            prov = None
            if isinstance(o.dtype, tl.pointer_type) and name != "create_int_to_ptr":
                provs = [nodes[i].prov for i in ins if isinstance(nodes[i].dtype, tl.pointer_type)]
                prov = None if not provs or any(p is None for p in provs) else frozenset().union(*provs)
            out_ids.append(self.node(o, Node(tag, o.data, o.dtype, op=op_index, prov=prov,
                                             atomic=atomic or name in ATOMICS)))
        op = Op(name, fn, tuple(template), tuple(ins), tuple(out_ids), len(rec.programs) - 1)
        rec.ops.append(op)
        self.program[0].append(op_index)
        if name in LOADS or name in STORES or name in ATOMICS:
            kind = "load" if name in LOADS else "store"
            op.event = len(rec.events)
            rec.events.append((kind, op_index, nodes[ins[0]].prov))
            if name in ATOMICS:  # an atomic also reads
                rec.events.append(("load", op_index, nodes[ins[0]].prov))

    def numpy_step(self, name, fn, inputs, outputs):
        """A step the interpreter does in numpy outside the builder (reduce, scan, .T)."""
        nodes = self.record.nodes
        ins = [self.lookup(t.handle, name) for t in inputs]
        tag = max((nodes[i].tag for i in ins), default=CONST)
        if tag <= PID:
            for t in outputs:
                self.node(t.handle, Node(tag, t.handle.data, t.handle.dtype))
            return
        rec = self.record
        op_index = len(rec.ops)
        out_ids = tuple(self.node(t.handle, Node(tag, t.handle.data, t.handle.dtype, op=op_index,
                                                 atomic=any(nodes[i].atomic for i in ins))) for t in outputs)
        rec.ops.append(Op(name, fn, tuple(_Arg(i) for i in ins), tuple(ins), out_ids, len(rec.programs) - 1))
        self.program[0].append(op_index)

    def decide(self, handle, kind, result):
        i = self.lookup(handle, f"a Python {kind}() on a tensor")
        node = self.record.nodes[i]
        if node.tag <= PID:
            return
        if node.atomic:
            raise Refused("a Python decision on an atomic's result")
        self.record.guards.append((i, kind, result, len(self.record.programs) - 1, len(self.record.events)))


def _wrap_builder_method(name, fn):
    def recorded(*args, **kwargs):
        rec = _current()
        if rec is None or rec.depth:
            return fn(*args, **kwargs)
        if kwargs:
            rec.refuse(Refused(f"{name} called with keywords"))
            return fn(*args, **kwargs)
        rec.depth += 1
        try:
            out = fn(*args)
        finally:
            rec.depth -= 1
        try:
            rec.call(name, fn, args, out)
        except Refused as e:
            rec.refuse(e)
        return out
    return recorded


def _wrap_numpy_step(name, original, make_replay):
    def recorded(*args, **kwargs):
        rec = _current()
        if rec is None or rec.depth:
            return original(*args, **kwargs)
        rec.depth += 1
        try:
            out = original(*args, **kwargs)
        finally:
            rec.depth -= 1
        try:
            inputs, replay = make_replay(*args, **kwargs)
            rec.numpy_step(name, replay, inputs, out if isinstance(out, tuple) else (out,))
        except Refused as e:
            rec.refuse(e)
        return out
    return recorded


def _reduce_replay(kind, fast):
    def make(input, axis, combine_fn, *rest, **kwargs):
        if not any(combine_fn is getattr(tl.standard, name, None) for name in fast):
            raise Refused(f"tl.{kind} with a Python combine function")
        inputs = input if isinstance(input, tuple) else (input,)
        option = rest[0] if rest else kwargs.get("keep_dims" if kind == "reduce" else "reverse", False)
        name = next(n for n in fast if combine_fn is getattr(tl.standard, n, None))
        spec = (kind, name, axis, bool(option), tuple(t.type for t in inputs), isinstance(input, tuple))
        return inputs, numpy_step(spec)
    return make


# (np.add.reduce is what np.sum runs for an ndarray, without its Python-level dispatch)
_DIRECT = {"_sum_combine": np.add.reduce, "_elementwise_max": np.nanmax, "_elementwise_min": np.nanmin}
_DIRECT_SCAN = {"_sum_combine": np.cumsum, "_prod_combine": np.cumprod}


def numpy_step(spec):
    """The replay of a numpy step from its description ``spec`` (kept on the function: the trace
    cache stores it and rebuilds the step with this): ``("transpose",)`` or (``"reduce"|"scan"``,
    combine function's name in ``tl.standard``, axis, keep_dims/reverse, input types, tuple input)."""
    if spec[0] == "transpose":
        def step(data):
            return np.transpose(data)
    else:
        kind, name, axis, option, types, tupled = spec
        if kind == "reduce" and not tupled and name in _DIRECT:
            # the interpreter's ReduceOps.sum / min_max and to_tensor, without building tensors
            fn, np_dtype = _DIRECT[name], get_np_dtype(types[0].scalar)

            def step(data):
                r = fn(data, axis=axis, keepdims=option)
                return r.astype(np_dtype) if r.shape else np.array([r]).astype(np_dtype)
        elif kind == "scan" and not tupled:
            # the interpreter's ScanOps.cumsum / cumprod (flipped for reverse) and to_tensor, without building tensors
            fn, np_dtype = _DIRECT_SCAN[name], get_np_dtype(types[0].scalar)

            def step(data):
                if option:
                    data = np.ascontiguousarray(np.flip(data, axis=axis))
                r = fn(data, axis=axis)
                r = r.astype(np_dtype) if r.shape else np.array([r]).astype(np_dtype)
                return np.ascontiguousarray(np.flip(r, axis=axis)) if option else r
        else:
            cls = _interp_module.ReduceOps if kind == "reduce" else _interp_module.ScanOps
            combine_fn = getattr(tl.standard, name)

            def step(*datas):
                tensors = tuple(tl.tensor(TensorHandle(d, ty.scalar), ty) for d, ty in zip(datas, types))
                out = cls(axis, combine_fn, option).apply(tensors if tupled else tensors[0])
                return tuple(t.handle.data for t in out) if isinstance(out, tuple) else out.handle.data
    step.spec = spec
    return step


def _transpose_replay(self):
    return (self,), numpy_step(("transpose",))


_BASE_ATTRS = frozenset(InterpreterBuilder().__dict__) | {"grid_idx", "grid_dim"}


_MEMORY_NAMES = tuple(sorted(LOADS | STORES | ATOMICS))
# builder methods that call no other memory method (``create_load`` calls ``create_masked_load``)
_LEAF_MEMORY = frozenset({"create_masked_load", "create_masked_store"})


def memory_check(names=_MEMORY_NAMES) -> tuple:
    """``(getter, methods)``: ``getter(InterpreterBuilder) != methods`` when one of the builder's
    memory methods ``names`` calls (``names`` and what they call) is patched on its class."""
    names = tuple(sorted(names)) if names and _LEAF_MEMORY.issuperset(names) else _MEMORY_NAMES
    return operator.attrgetter(*names), operator.attrgetter(*names)(InterpreterBuilder)


def trace_memory_check(record) -> tuple:
    """``memory_check`` for the memory methods a recorded launch (``record``, None: unknown) calls:
    only those can be bypassed by its replay."""
    return _ALL_MEMORY if record is None else memory_check({op.name for op in record.ops} & MEMORY)


MEMORY = LOADS | STORES | ATOMICS
_ALL_MEMORY = memory_check()  # one C call and a tuple comparison: asked before every replay


def builder_instrumented(memory=_ALL_MEMORY) -> bool:
    """True when something else (a memory checker, a profiler) has patched the builder's methods:
    any method on the builder, or one of the ``memory`` methods (``memory_check``) on its class.
    Replay would bypass it, so launches interpret while it is active."""
    keys = interpreter_builder.__dict__
    if not _BASE_ATTRS.issuperset(keys) and any(k not in _BASE_ATTRS and k != "create_dot" for k in keys):
        return True
    getter, methods = memory
    return getter(InterpreterBuilder) != methods  # functions: by identity


class recording:
    """Context: record the interpreted launch run inside it (the language patch already applied)."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def __enter__(self):
        b = interpreter_builder
        self.saved = dict(b.__dict__)
        for name in PURE | LOADS | SIDE_EFFECTS | STATE:
            fn = getattr(b, name, None)
            if fn is not None:
                setattr(b, name, _wrap_builder_method(name, fn))
        self.saved_lang = []

        def patch(obj, name, value):
            self.saved_lang.append((obj, name, obj.__dict__[name] if name in obj.__dict__ else None))
            setattr(obj, name, value)
        for kind, fast in (("reduce", _FAST_REDUCE), ("associative_scan", _FAST_SCAN)):
            for mod in (tl, tl.core):
                patch(mod, kind, _wrap_numpy_step(kind, getattr(mod, kind),
                                                  _reduce_replay("reduce" if kind == "reduce" else "scan", fast)))
        tensor = tl.tensor
        transpose = tensor.__dict__["T"]
        patch(tensor, "T", property(_wrap_numpy_step("transpose", transpose.fget, _transpose_replay)))
        for dunder, kind in (("__bool__", "bool"), ("__index__", "index")):
            patch(tensor, dunder, _decision(tensor.__dict__[dunder], kind))
        _local.recorder = self.recorder
        return self.recorder

    def __exit__(self, *exc):
        _local.recorder = None
        b = interpreter_builder
        for k in list(b.__dict__):
            if k not in self.saved:
                delattr(b, k)
        b.__dict__.update(self.saved)
        for obj, name, old in reversed(self.saved_lang):
            if old is None:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        return False


def _decision(original, kind):
    def decided(self):
        result = original(self)
        rec = _current()
        if rec is not None and not rec.depth and (kind == "index" or self.handle.data.size == 1):
            try:
                rec.decide(self.handle, kind, result)
            except Refused as e:
                rec.refuse(e)
        return result
    return decided
