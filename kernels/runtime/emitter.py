"""Emitting a recorded launch's ops (``runtime/recorder.py``) as lines of straight-line numpy.

One line per op: a numpy expression where the builder's method is a plain numpy call (the
interpreter's own formula, including its dtype fix-ups), otherwise a call of the recorded builder
method on fresh handles. Loads and stores go through the interpreter's own C++ load/store on
absolute addresses, or, when an argument's offsets are fixed and the mask is constant, through a
numpy view of that tensor's memory, or through a run of memory found at replay
(``runtime/memory.py``). ``runtime/trace.py`` chooses which ops to emit and compiles the lines.
"""
from __future__ import annotations

import numpy as np
import triton.language as tl

from .memory import (address_range, atomic_add_addresses, fill_live, gather, load_addresses, load_rows, memory_view, overlaps,
                     prefix_load, prefix_store, run_load, run_range, run_store, store_addresses)
from .lanes import NotLaneWise
from .recorder import ATOMICS, PID, SIDE_EFFECTS, LaunchRecord, Refused, _Arg
from .triton_private import TensorHandle, get_np_dtype, native

__all__ = ["Emitter", "access", "BASE_NAMESPACE", "builder_call", "single_output"]

_BINARY = {
    "create_fadd": np.add, "create_fmul": np.multiply, "create_fdiv": np.divide, "create_frem": np.fmod,
    "create_fsub": np.subtract, "create_mul": np.multiply, "create_precise_divf": np.divide,
    "create_approx_divf": np.divide, "create_srem": np.fmod, "create_urem": np.fmod, "create_add": np.add,
    "create_sub": np.subtract, "create_shl": np.left_shift, "create_lshr": np.right_shift,
    "create_minsi": np.minimum, "create_minui": np.minimum, "create_minimumf": np.minimum, "create_minnumf": np.fmin,
    "create_maxsi": np.maximum, "create_maxui": np.maximum, "create_maximumf": np.maximum,
    "create_maxnumf": np.fmax, "create_and": np.bitwise_and, "create_xor": np.bitwise_xor,
    "create_or": np.bitwise_or,
}
for _cmp, _uf in (("LE", np.less_equal), ("LT", np.less), ("GE", np.greater_equal), ("GT", np.greater),
                  ("EQ", np.equal), ("NE", np.not_equal)):
    for _prefix in ("create_icmpS", "create_icmpU", "create_fcmpO", "create_fcmpU"):
        if _prefix.startswith("create_icmp") and _cmp in ("EQ", "NE"):
            _BINARY["create_icmp" + _cmp] = _uf
        else:
            _BINARY[_prefix + _cmp] = _uf
_LOGICAL = ("create_and", "create_or", "create_xor")
_UNARY = {"create_fneg": np.negative, "create_cos": np.cos, "create_exp": np.exp, "create_exp2": np.exp2,
          "create_iabs": np.abs, "create_floor": np.floor, "create_ceil": np.ceil, "create_log": np.log,
          "create_log2": np.log2, "create_precise_sqrt": np.sqrt, "create_sqrt": np.sqrt, "create_sin": np.sin}
_CASTS = {"create_si_to_fp", "create_ui_to_fp", "create_fp_to_si", "create_fp_to_ui", "create_fp_ext",
          "create_fp_trunc", "create_int_cast"}


def _handle(data, dtype):
    h = TensorHandle.__new__(TensorHandle)
    h.data, h.dtype, h.attr = data, dtype, {}
    return h


def builder_call(fn, template, dtypes, n_out, name):
    """A recorded builder call replayed on fresh handles (the interpreter's code, not a copy).
    ``spec`` describes it for the trace cache (``runtime/trace_codec.py``), which rebuilds it so."""
    positions = [k for k, a in enumerate(template) if isinstance(a, _Arg)]
    base = list(template)
    pairs = list(zip(positions, dtypes))

    def call(*datas):
        args = base.copy()
        for (k, dt), d in zip(pairs, datas):
            args[k] = _handle(d, dt)
        out = fn(*args)
        if out is None:
            return None
        if isinstance(out, tuple):
            return tuple(o.data for o in out) if n_out > 1 else out[0].data
        return out.data
    call.spec = ("builder", name, fn, template, dtypes, n_out)
    return call


def single_output(fn):
    def call(*datas):
        out = fn(*datas)
        return out[0] if isinstance(out, tuple) else out
    call.spec = ("single", fn)
    return call


# the names the emitted source calls (a trace loaded from disk runs in a copy of these too)
BASE_NAMESPACE = {"np": np, "native": native, "memory_view": memory_view, "overlaps": overlaps, "_fill": fill_live,
                  "_run_load": run_load, "_run_store": run_store, "_run_range": run_range, "_gather": gather,
                  "_prefix_load": prefix_load, "_prefix_store": prefix_store, "address_range": address_range,
                  "_load_addresses": load_addresses, "_load_rows": load_rows, "_store_addresses": store_addresses,
                  "_atomic_add": atomic_add_addresses}
_ADDABLE = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64)}


class _Operands:
    """An op's operand expressions, each emitted (a materialised address, a constant) when first used."""

    def __init__(self, emitter, ids, lines, ready):
        self.emitter, self.ids, self.lines, self.ready = emitter, ids, lines, ready

    def __getitem__(self, j):
        return self.emitter.expr(self.ids[j], self.lines, self.ready)

    def __len__(self):
        return len(self.ids)


class Emitter:
    """Emits a recorded launch's ops as lines of one numpy function (see the module docstring);
    ``ns`` is the namespace the lines run in, ``nbytes`` the constants they hold."""
    def __init__(self, record: LaunchRecord):
        self.record = record
        self.ns = dict(BASE_NAMESPACE)
        self.nbytes = 0
        self.slot_of = record.slot_of  # node id -> input slot (arguments that are replay inputs)
        self.arrays_used: set = set()
        self.acting: set = set()  # indices of the lines of ops with effects (kept whatever they compute)
        self.lanes = None  # a LiveLanes when the trace computes on a block's live lanes alone (runtime/lanes.py)
        self._read = None  # node ids some op or guard reads (``read``)

    def block_shape(self, shape):
        """A value's shape as the trace computes it (a live-lane trace's block: its live lanes)."""
        return self.lanes.shape(shape) if self.lanes is not None else tuple(shape)

    def read(self, node_id) -> bool:
        """Whether an op or a guard of the launch reads node ``node_id``."""
        if self._read is None:
            self._read = {i for op in self.record.ops for i in op.ins} | {g[0] for g in self.record.guards}
        return node_id in self._read

    def slot_array(self, slot):
        """An input as the interpreter holds it (a 1-element array), made once per run if needed."""
        self.arrays_used.add(slot)
        return f"a{slot}"

    def header(self):
        lines = [f"    a{s} = np.array((A[{s}],), dtype={self.const(f'D{s}', self.record.slots[s][1])})"
                 for s in sorted(self.arrays_used)]
        return "".join(line + "\n" for line in lines)

    def const(self, name, value):
        """A module-level name of the compiled function bound to ``value`` (unique per value)."""
        if name in self.ns:
            name = f"{name}_{len(self.ns)}"
        self.ns[name] = value
        self.nbytes += getattr(value, "nbytes", 0)
        return name

    def expr(self, i, lines, ready):
        """The expression of node ``i``'s value, emitting what it needs into ``lines`` once."""
        nodes = self.record.nodes
        node = nodes[i]
        if i in ready:
            return ready[i]
        if node.op is not None:
            raise AssertionError("an op's output used before its op")  # recorded order forbids this
        if i in self.slot_of:
            name = self.slot_array(self.slot_of[i])
        elif node.base is not None:  # argument address + constant offsets
            base_node = nodes[self.record.slot_nodes[node.base]]
            offsets = (node.value - base_node.value).astype(np.uint64)
            name = f"p{i}"
            lines.append(f"    {name} = {self.const(f'o{i}', offsets)} + {self.slot_array(node.base)}")
        elif node.tag <= PID:
            name = self.const(f"c{i}", self.lanes.live(node.value) if self.lanes is not None else node.value)
        else:
            raise Refused("a value of unknown origin")
        ready[i] = name
        return name

    def emit(self, op_index, lines, ready):
        rec = self.record
        op = rec.ops[op_index]
        nodes = rec.nodes
        name = op.name
        ins = _Operands(self, op.ins, lines, ready)  # emitted on first use: a view access needs no address
        outs = [f"v{o}" for o in op.outs]
        target = ", ".join(outs) + " = " if outs else ""
        line = None
        in_nodes = [nodes[i] for i in op.ins]
        out_node = nodes[op.outs[0]] if op.outs else None
        k = op_index
        if self.lanes is not None:
            self.lanes.check(op, in_nodes, [nodes[o] for o in op.outs], _LANE_WISE)
        bools = all(n.value.dtype == np.bool_ for n in in_nodes)
        if name in _LOGICAL and len(ins) == 2 and bools:
            # masks combined: on bools the interpreter's int8 round trip (its 1-bit wrap-around for
            # arithmetic) gives numpy's own bitwise result
            line = f"{self.const(f'f{k}', _BINARY[name])}({ins[0]}, {ins[1]})"
        elif name in _BINARY and len(ins) == 2 and not bools:
            uf = _BINARY[name]
            with np.errstate(all="ignore"):
                raw = uf(np.zeros(1, in_nodes[0].value.dtype), np.zeros(1, in_nodes[1].value.dtype)).dtype
            fix = "" if raw == out_node.value.dtype else f".astype({self.const(f'd{k}', out_node.value.dtype)})"
            line = f"{self.const(f'f{k}', uf)}({ins[0]}, {ins[1]}){fix}"
        elif name in _UNARY and len(ins) == 1:
            line = f"{self.const(f'f{k}', _UNARY[name])}({ins[0]})"
        elif name in _CASTS and not _bf16(in_nodes[0].dtype, op.args[1]):
            line = f"{ins[0]}.astype({self.const(f'd{k}', get_np_dtype(op.args[1]))})"
        elif name == "create_bitcast":
            line = f"{ins[0]}.view({self.const(f'd{k}', get_np_dtype(op.args[1]))})"
        elif name == "create_select":
            raw = np.where(np.zeros(1, bool), np.zeros(1, in_nodes[1].value.dtype),
                           np.zeros(1, in_nodes[2].value.dtype)).dtype
            fix = "" if raw == out_node.value.dtype else f".astype({self.const(f'd{k}', out_node.value.dtype)})"
            line = f"np.where({ins[0]}, {ins[1]}, {ins[2]}){fix}"
        elif name == "create_broadcast":
            line = f"np.broadcast_to({ins[0]}, {self.block_shape(op.args[1])!r})"
        elif name == "create_expand_dims":
            axis = op.args[1]
            if type(axis) is int and 0 <= axis <= np.ndim(in_nodes[0].value):  # the same view, without
                line = f"{ins[0]}[{', '.join([':'] * axis + ['None'])}]"    # expand_dims' ~3 us of Python
            else:
                line = f"np.expand_dims({ins[0]}, {axis!r})"
        elif name == "create_reshape":
            line = f"{ins[0]}.reshape({tuple(op.args[1])!r})"
        elif name == "create_trans":
            line = f"np.transpose({ins[0]}, {tuple(op.args[1])!r})"
        elif name == "create_addptr" and isinstance(in_nodes[0].dtype, tl.pointer_type):
            elem = in_nodes[0].dtype.element_ty
            width = max(1, elem.primitive_bitwidth // 8)
            if in_nodes[1].op is None and in_nodes[1].tag <= PID:  # constant offsets: scaled once, here
                line = f"{ins[0]} + {self.const(f'c{k}', width * in_nodes[1].value.astype(np.uint64))}"
            else:
                line = f"{ins[0]} + {width} * {ins[1]}.astype(np.uint64)"
        elif name in ("create_masked_load", "create_load"):
            line = self.load(op, ins, in_nodes, out_node, lines, ready)
        elif name in ("create_masked_store", "create_store"):
            line = self.store(k, op, ins, in_nodes, lines, ready)
        elif name == "create_umulhi" and in_nodes[0].value.dtype.itemsize <= 4 and \
                in_nodes[1].value.dtype.itemsize == in_nodes[0].value.dtype.itemsize:
            # the interpreter's formula for narrow integers (Philox's rounds), without a builder call
            dt = in_nodes[0].value.dtype
            u, w = self.const(f"u{k}", np.dtype(f"uint{8 * dt.itemsize}")), \
                self.const(f"w{k}", np.dtype(f"uint{16 * dt.itemsize}"))
            line = (f"np.right_shift(np.multiply({ins[0]}.view({u}).astype({w}), {ins[1]}.view({u}).astype({w})), "
                    f"{8 * dt.itemsize}).astype({u}).view({self.const(f'd{k}', dt)})")
        elif name == "create_splat" and self.lanes is not None and out_node.value.dtype == in_nodes[0].value.dtype \
                and self.block_shape(op.args[0].shape) == np.shape(in_nodes[0].value):
            ready[op.outs[0]] = ins[0]  # a scalar splat over one live lane: the scalar itself
            return
        elif name == "create_splat":
            line = f"np.full({self.block_shape(op.args[0].shape)!r}, {ins[0]}, dtype={self.const(f'd{k}', out_node.value.dtype)})"
        elif name in ("create_int_to_ptr", "create_ptr_to_int"):
            line = f"{ins[0]}.view({self.const(f'd{k}', out_node.value.dtype)})"
        elif name == "create_atomic_rmw" and getattr(op.args[0], "name", None) in ("ADD", "FADD") and \
                len(op.ins) == 3 and not self.read(op.outs[0]) and in_nodes[1].value.dtype in _ADDABLE and \
                get_np_dtype(in_nodes[0].dtype.element_ty) == in_nodes[1].value.dtype:
            # a scatter-add whose old values nothing reads: np.add.at on the memory its lanes reach
            interpreted = self.const(f"g{k}", builder_call(op.fn, op.args, [n.dtype for n in in_nodes], len(op.outs),
                                                           op.name))
            line = (f"_atomic_add({ins[0]}, {ins[1]}, {ins[2]}, {self.const(f'd{k}', in_nodes[1].value.dtype)}, "
                    f"{interpreted})")
        if line is None:
            if _is_numpy_step(op):
                call = self.const(f"g{k}", single_output(op.fn) if len(op.outs) == 1 else op.fn)
            else:
                call = self.const(f"g{k}", builder_call(op.fn, op.args, [n.dtype for n in in_nodes], len(op.outs),
                                                        op.name))
            line = f"{call}({', '.join(ins[j] for j in range(len(op.ins)))})"
        for o, v in zip(op.outs, outs):
            ready[o] = v
        if name in SIDE_EFFECTS or name in ATOMICS or not outs:
            self.acting.add(len(lines))
        lines.append(f"    {target}{line}")

    def live_addresses(self, op, lines, ready):
        """An expression: the addresses (uint64, flat) the access's live lanes touch."""
        ptr, mask = access(op)
        p = self.expr(ptr, lines, ready) if self.record.nodes[ptr].op is None else ready[ptr]
        if mask is None:
            return f"{p}.reshape(-1)"
        m = self.expr(mask, lines, ready) if self.record.nodes[mask].op is None else ready[mask]
        return f"np.broadcast_to({p}, np.shape({p}))[np.broadcast_to({m}, np.shape({p}))]"

    def store_range(self, op, lines, ready):
        """An expression: (addresses, lowest, highest) of a store's live lanes, for ``overlaps``;
        a store to a run of memory whose live lanes are a prefix is its interval alone."""
        ptr, mask = access(op)
        if op.name in ("create_store", "create_masked_store"):
            dt = get_np_dtype(self.record.nodes[ptr].dtype.element_ty)
            run = self.dynamic_run(self.record.nodes[ptr], dt, lines, ready)
            if run is not None:
                m = self.expr(mask, lines, ready) if mask is not None and self.record.nodes[mask].op is None else \
                    ready[mask] if mask is not None else self.const("m_all", np.ones(self.record.nodes[ptr].value.shape,
                                                                                     bool))
                return f"_run_range({run[0]}, {run[1]}, {m}, {self.record.nodes[ptr].value.shape!r}, {dt.itemsize})"
        return f"address_range({self.live_addresses(op, lines, ready)})"

    def load(self, op, ins, in_nodes, out_node, lines, ready):
        k = op.outs[0]
        ptr = in_nodes[0]
        shape = ptr.value.shape
        dt = out_node.value.dtype
        if op.name == "create_load" or op.name == "create_atomic_load":
            mask_node, other_node = None, None
        else:
            mask_node, other_node = in_nodes[1], (in_nodes[2] if len(in_nodes) > 2 else None)
        # the interpreter's load returns the pointers' memory layout, which decides how numpy later
        # sums it (pairwise order): a view's C-ordered copy is the same only for C-ordered pointers
        view = self.view_access(ptr, mask_node, dt, "load") if out_node.value.flags.c_contiguous else None
        if view is not None and other_node is not None and (other_node.value.dtype != dt or other_node.tag > PID):
            view = None if view[4] is not None else view  # np.where would promote; the interpreter casts
        other = ins[2] if other_node is not None else self.const(f"z{k}", np.zeros(shape, dt))
        if self.lanes is not None and shape == self.lanes.block:
            if view is None or view[5] != self.lanes.slice:
                raise NotLaneWise("a load of other lanes")
            # the live lanes are the view: read in place until a store (``LiveLanes.finish`` copies it then)
            self.lanes.view_loads.add(f"v{k}")
            return _view_expr(view[0], view[1], view[2], self.const(f'd{k}', dt))
        if view is not None:
            slot, start, nbytes, index, live, contiguous = view
            v = _view_expr(slot, start, nbytes, self.const(f'd{k}', dt))
            if contiguous:
                if live is None and self.lanes is not None:
                    self.lanes.view_loads.add(f"v{k}")  # read in place until a store, as a block's lanes
                    return f"{v}.reshape({shape!r})"
                if live is None:
                    return f"{v}.reshape({shape!r}).copy()"
                # the live lanes read the view in order: the masked lanes' values, then the view into them
                filled = np.ascontiguousarray(np.broadcast_to(other_node.value if other_node is not None
                                                              else np.zeros(shape, dt), shape))
                where = contiguous if contiguous is not True else live
                return f"_fill({self.const(f'z{k}', filled)}, {self.const(f'm{k}', where)}, {v})"
            strided = _strided(index, dt.itemsize) if live is None else None
            if strided is not None:  # a strided tile: a copy of a strided view, not a gather
                first, grid, steps = strided
                view = f"np.ndarray({grid!r}, {self.const(f'd{k}s', dt)}, {v}, *{self.const(f's{k}', (first, steps))})"
                return f"{view}.copy()" if grid == shape else f"{view}.copy().reshape({shape!r})"
            idx = self.const(f"i{k}", index)
            if live is None:
                return f"{v}[{idx}]"
            return f"np.where({self.const(f'm{k}', live)}, {v}[{idx}], {other})"
        mask = ins[1] if mask_node is not None else self.const(f"m{k}", np.ones(shape, bool))
        whole = self.view_access(ptr, None, dt, "load") if out_node.value.flags.c_contiguous and \
            mask_node is not None and mask_node.tag > PID and mask_node.value.shape == shape and \
            mask_node.value.dtype == np.bool_ and (other_node is None or other_node.value.dtype == dt) else None
        if whole is not None:  # a mask from data over fixed offsets: the live lanes read from a view
            slot, start, nbytes, index, _, _ = whole
            v = _view_expr(slot, start, nbytes, self.const(f'd{k}', dt))
            filled = self.masked_fill(k, other_node, other, shape, dt)
            prefix = self.prefix_mask(mask_node, index, lines, ready)
            if prefix is not None:
                return f"_prefix_load({v}, {prefix}, {filled})"
            return f"_gather({v}, {self.const(f'i{k}', index)}, {mask}, {filled})"
        run = self.dynamic_run(ptr, dt, lines, ready) if out_node.value.flags.c_contiguous else None
        if run is not None and (other_node is None or other_node.value.dtype == dt):
            base, start = run
            filled = self.masked_fill(k, other_node, other, shape, dt)
            return f"_run_load({base}, {start}, {mask}, {filled}, {other}, {self.const(f'd{k}', dt)})"
        rows = self.row_gather(ptr, lines, ready) if out_node.value.flags.c_contiguous else None
        if rows is not None:
            return f"_load_rows({rows[0]}, {rows[1]}, {mask}, {other}, {self.const(f'd{k}', dt)})"
        return f"_load_addresses({ins[0]}, {mask}, {other}, {self.const(f'd{k}', dt)})"

    def row_gather(self, ptr, lines, ready):
        """(expression of a (R, 1) column of addresses, name of constant (1, C) byte offsets) when
        ``ptr`` is that column broadcast to (R, C) plus offsets equal in every row (a row gather:
        ``w + i[:, None] * stride + cols[None, :]``), else None."""
        nodes, ops = self.record.nodes, self.record.ops
        if ptr.op is None or ops[ptr.op].name != "create_addptr" or ptr.value.ndim != 2:
            return None
        base, off = (nodes[i] for i in ops[ptr.op].ins)
        if base.op is None or ops[base.op].name != "create_broadcast" or off.op is not None or off.tag > PID:
            return None
        column_id = ops[base.op].ins[0]
        column = nodes[column_id]
        offsets = np.broadcast_to(off.value, ptr.value.shape)
        if column.value.shape != (ptr.value.shape[0], 1) or offsets.dtype.kind not in "iu" or \
                not (offsets == offsets[:1]).all():
            return None
        width = max(1, base.dtype.element_ty.primitive_bitwidth // 8)
        expr = self.expr(column_id, lines, ready) if column.op is None else ready[column_id]
        cols = self.const(f"r{ptr.op}", np.ascontiguousarray(offsets[:1].astype(np.int64) * width).astype(np.uint64))
        return expr, cols

    def masked_fill(self, k, other_node, other, shape, dt):
        """The values of a load's masked lanes: its ``other`` broadcast to the load's shape, a constant
        when ``other`` is one (or absent: zeros)."""
        if other_node is None or other_node.tag <= PID:
            return self.const(f"z{k}", np.ascontiguousarray(np.broadcast_to(
                other_node.value if other_node is not None else np.zeros(shape, dt), shape)))
        return f"np.broadcast_to({other}, {shape!r})"

    def dynamic_run(self, ptr, dt, lines, ready):
        """(expression of a scalar address, first byte) when ``ptr`` is that address splat over the
        block plus constant offsets that walk ``dt`` elements in C order (a pointer read from a
        table, plus ``tl.arange``): a prefix of live lanes is then a run of memory found at replay."""
        nodes, ops = self.record.nodes, self.record.ops
        if ptr.op is None or ops[ptr.op].name != "create_addptr":
            return None
        add = ops[ptr.op]
        base_node, off_node = nodes[add.ins[0]], nodes[add.ins[1]]
        if off_node.op is not None or off_node.tag > PID or base_node.op is None \
                or ops[base_node.op].name != "create_splat" or off_node.value.shape != ptr.value.shape:
            return None
        width = max(1, base_node.dtype.element_ty.primitive_bitwidth // 8)
        offsets = off_node.value.astype(np.int64).reshape(-1) * width
        if width != dt.itemsize or offsets.size == 0 or \
                not np.array_equal(offsets - offsets[0], np.arange(offsets.size, dtype=np.int64) * width):
            return None
        scalar = ops[base_node.op].ins[0]
        return self.expr(scalar, lines, ready), int(offsets[0])

    def store(self, k, op, ins, in_nodes, lines, ready):
        op_key = k
        ptr, value = in_nodes[0], in_nodes[1]
        mask_node = in_nodes[2] if op.name == "create_masked_store" else None
        dt = get_np_dtype(ptr.dtype.element_ty)  # the interpreter stores the value's bytes: views need equal dtypes
        if self.lanes is not None and ptr.value.shape == self.lanes.block:
            view = self.view_access(ptr, mask_node, dt, "store", unique=True) if value.value.dtype == dt else None
            if view is None or view[5] != self.lanes.slice:
                raise NotLaneWise("a store to other lanes")
            full = ins[1] if value.value.shape == ptr.value.shape else \
                f"np.broadcast_to({ins[1]}, {self.block_shape(ptr.value.shape)!r})"
            return f"{_view_expr(view[0], view[1], view[2], self.const(f'd{op_key}', dt))}.__setitem__(" \
                   f"slice(None), {full})"
        if value.value.dtype == dt:
            view = self.view_access(ptr, mask_node, dt, "store", unique=True)
            if view is not None:
                slot, start, nbytes, index, live, contiguous = view
                v = _view_expr(slot, start, nbytes, self.const(f'd{op_key}', dt))
                full = ins[1] if value.value.shape == ptr.value.shape else \
                    f"np.broadcast_to({ins[1]}, {ptr.value.shape!r})"
                if live is None and contiguous:
                    return f"{v}.__setitem__(slice(None), {full}.reshape(-1))"
                if contiguous:  # the live lanes, in order, are the view's elements in order
                    where = self.const(f"m{k}", contiguous if contiguous is not True else live)
                    return f"{v}.__setitem__(slice(None), {full}[{where}])"
                strided = _strided(index, dt.itemsize) if live is None else None
                if strided is not None:
                    first, grid, steps = strided
                    value = ins[1] if grid == ptr.value.shape else f"{full}.reshape({grid!r})"
                    return f"np.ndarray({grid!r}, {self.const(f'd{op_key}s', dt)}, {v}, " \
                        f"*{self.const(f's{k}', (first, steps))}).__setitem__(Ellipsis, {value})"
                if live is None:
                    return f"{v}.__setitem__({self.const(f'i{k}', index)}, {ins[1]})"
                sel = self.const(f"i{k}", index[live])
                return f"{v}.__setitem__({sel}, np.broadcast_to({ins[1]}, {live.shape!r})[{self.const(f'm{k}', live)}])"
            data_mask = mask_node is not None and mask_node.tag > PID and \
                mask_node.value.shape == ptr.value.shape and mask_node.value.dtype == np.bool_
            whole = self.view_access(ptr, None, dt, "store", unique=True) if data_mask else None
            if whole is None and data_mask:
                # offsets that repeat (a 2-d block's padding lanes alias the next row): the live lanes
                # in C order through a 1-d index, which numpy assigns one by one as the interpreter's
                # loop stores (the last of a repeated address wins)
                whole = self.view_access(ptr, None, dt, "store")
                if whole is not None:
                    v = _view_expr(whole[0], whole[1], whole[2], self.const(f'd{op_key}', dt))
                    full = ins[1] if value.value.shape == ptr.value.shape else \
                        f"np.broadcast_to({ins[1]}, {ptr.value.shape!r})"
                    return f"{v}.__setitem__({self.const(f'i{k}', whole[3])}[{ins[2]}], {full}[{ins[2]}])"
            if whole is not None:  # a mask computed at replay over fixed offsets: the live lanes, into a view
                slot, start, nbytes, index, _, _ = whole
                v = _view_expr(slot, start, nbytes, self.const(f'd{op_key}', dt))
                full = ins[1] if value.value.shape == ptr.value.shape else \
                    f"np.broadcast_to({ins[1]}, {ptr.value.shape!r})"
                prefix = self.prefix_mask(mask_node, index, lines, ready)
                if prefix is not None:
                    return f"_prefix_store({v}, {prefix}, {full})"
                return f"{v}.__setitem__({self.const(f'i{k}', index)}[{ins[2]}], {full}[{ins[2]}])"
        mask = ins[2] if mask_node is not None else self.const(f"m{k}", np.ones(ptr.value.shape, bool))
        run = self.dynamic_run(ptr, dt, lines, ready) if value.value.dtype == dt else None
        if run is not None:
            return f"_run_store({run[0]}, {run[1]}, {mask}, {ins[1]}, {ptr.value.shape!r}, {self.const(f'd{k}', dt)})"
        if value.value.dtype == dt:
            return f"_store_addresses({ins[0]}, {ins[1]}, {mask})"
        return f"native.store({ins[0]}, {ins[1]}, {mask})"

    def prefix_mask(self, mask_node, index, lines, ready):
        """``"n, first"`` (expressions) when the mask is ``first + tl.arange(0, B) < n`` with ``n`` one
        scalar splat over the block and the access reads lanes 0..B-1 of its view in order: the
        live lanes are then the first ``clip(n - first, 0, B)``, a slice rather than a mask."""
        nodes, ops = self.record.nodes, self.record.ops
        if mask_node.op is None or ops[mask_node.op].name != "create_icmpSLT" or index.ndim != 1 or \
                not np.array_equal(index, np.arange(index.size)):
            return None
        offs, bound = (nodes[i] for i in ops[mask_node.op].ins)
        if offs.op is not None or offs.tag > PID or offs.value.shape != index.shape or bound.op is None or \
                ops[bound.op].name != "create_splat" or offs.value.dtype.kind != "i" or \
                bound.value.dtype != offs.value.dtype:
            return None
        scalar = nodes[ops[bound.op].ins[0]]
        first = int(offs.value[0])
        if scalar.value.dtype != bound.value.dtype or \
                not np.array_equal(offs.value, np.arange(first, first + index.size, dtype=offs.value.dtype)):
            return None
        return f"{self.expr(ops[bound.op].ins[0], lines, ready)}, {first}"

    def view_access(self, ptr, mask_node, dt, kind, unique=False):
        """(slot, first byte, span in bytes, element index array, live-lane mask or None, contiguous)
        when ``ptr`` is an argument's address plus constant offsets and the mask is constant: the
        access is then a numpy index into a view of that tensor's memory."""
        if ptr.base is None or ptr.op is not None or (mask_node is not None and mask_node.tag > PID):
            return None
        base_node = self.record.nodes[self.record.slot_nodes[ptr.base]]
        offsets = (ptr.value - base_node.value).astype(np.uint64).view(np.int64)
        live = None if mask_node is None else np.broadcast_to(mask_node.value.astype(bool), offsets.shape)
        if live is not None and live.all():
            live = None
        if live is not None and not live.any():
            return None  # nothing touched: leave it to the interpreter's path (cheap, rare)
        size = dt.itemsize
        used = offsets if live is None else offsets[live]
        if used.size == 0 or (used % size).any():
            return None
        lo, hi = int(used.min()), int(used.max())
        if lo < 0:
            return None
        index = (offsets - lo) // size
        if live is not None:
            index = np.where(live, index, 0)
        index = np.ascontiguousarray(index.astype(np.intp))
        if unique and np.unique(index if live is None else index[live]).size != (index.size if live is None
                                                                                   else int(live.sum())):
            return None  # repeated addresses: the interpreter's in-order writes decide
        if live is None:
            contiguous = np.array_equal(index.reshape(-1), np.arange(index.size))
        else:  # True: the live lanes in C order are the view's elements in order; a slice when a flat prefix
            n = int(live.sum())
            contiguous = np.array_equal(index[live], np.arange(n))
            if contiguous and live.ndim == 1 and live[:n].all():
                contiguous = slice(0, n)
        return ptr.base, lo, hi - lo + size, index, live, contiguous


# the ops a live-lane trace computes on the live lanes alone: each output lane is a function of the
# same lane of the inputs (the interpreter's numpy formulas on the handles' arrays)
_LANE_WISE = (set(_BINARY) | set(_UNARY) | _CASTS | {
    "create_bitcast", "create_select", "create_broadcast", "create_splat", "create_umulhi", "create_fp_to_fp",
    "create_erf", "create_fma", "create_fabs", "create_rsqrt", "create_clampf", "create_ashr", "create_idiv",
    "create_sdiv", "create_udiv", "create_sqrt", "create_precise_sqrt", "binary_op", "unary_op", "ternary_op",
    "cast_impl"})


def _view_expr(slot, start, nbytes, dtype_name):
    address = f"A[{slot}]" if start == 0 else f"A[{slot}] + {start}"
    return f"memory_view({address}, {nbytes}, {dtype_name})"


def _strided(index, size):
    """(first byte, grid shape, byte strides) when the element ``index`` array of an access, read
    in C order, is an affine grid with strides >= 0: a tile's own dims (a transposed or strided
    tile), or dims split where the offsets jump (batch norm's (C, N*H*W) tile of an NCHW tensor,
    a pool's taps over a flat block of outputs). The access is then a strided view of that shape,
    reshaped to the block's."""
    if index.ndim == 0 or index.size < 2:
        return None
    flat = index.reshape(-1).astype(np.int64)
    first, total = int(flat[0]), flat.size
    sizes, steps, block = [], [], 1
    while block < total and len(sizes) < 8:
        step = int(flat[block]) - first
        if step < 0:
            return None
        # the longest run of this step over multiples of ``block``, cut to a size dividing what is left
        run = flat[:total:block] - first
        ok = run == step * np.arange(run.size, dtype=np.int64)
        n = int(ok.argmin()) if not ok.all() else run.size
        rest = total // block
        while n > 1 and rest % n:
            n -= 1
        if n < 2:
            return None
        sizes.append(n)
        steps.append(step)
        block *= n
    if block != total:
        return None
    shape, strides = tuple(reversed(sizes)), tuple(reversed(steps))
    grid = np.full(shape, first, dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, strides)):
        grid += np.arange(n, dtype=np.int64).reshape((1,) * d + (n,) + (1,) * (len(shape) - d - 1)) * st
    if not np.array_equal(grid.reshape(-1), flat):
        return None
    return first * size, shape, tuple(st * size for st in strides)


def _bf16(src_dtype, dst_type):
    s = getattr(src_dtype, "scalar", src_dtype)
    d = getattr(dst_type, "scalar", dst_type)
    return tl.bfloat16 in (s, d) or s.is_fp8() or d.is_fp8()


def _is_numpy_step(op):
    return op.name in ("reduce", "associative_scan", "transpose")


def access(op):
    """(pointer node, mask node or None) of a load, store or atomic."""
    if op.name == "create_masked_load":  # (pointer, mask, other): the mask is not the last operand
        return op.ins[0], (op.ins[1] if len(op.ins) > 1 else None)
    masked = op.name in ("create_masked_store", "create_atomic_rmw", "create_atomic_store", "create_atomic_load")
    return op.ins[0], (op.ins[-1] if masked and len(op.ins) > 1 else None)
