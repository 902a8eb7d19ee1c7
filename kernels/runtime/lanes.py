"""Live-lane traces: a launch computed on the live lanes of its block alone.

A small tensor launches one program over a block of at least 64 lanes (``helpers.layout``), whose
mask ``lane < numel`` the signature makes constant. When every access of such a 1-d block reads or
writes its first n lanes and every op between is lane-wise (each output lane a function of the same
lane of the inputs), the trace computes on those n lanes alone: the emitter (``runtime/emitter.py``)
slices block-shaped constants, reads a load's lanes in place (a view of the tensor's memory), and
refuses (``NotLaneWise``) anything else, which is then emitted over whole blocks. ``finish`` makes
the lines safe and short: a load read in place is copied where it, or a value that may view it, is
read after a store, and a ufunc's value stored at once is written by the ufunc (``out=``).
"""
from __future__ import annotations

import re

import numpy as np

from .recorder import PID, LaunchRecord

__all__ = ["LiveLanes", "NotLaneWise", "live_lanes"]

_MASKED = {"create_masked_load": 1, "create_masked_store": -1}  # where an access's mask is among its operands
_ACCESSES = ("create_masked_load", "create_load", "create_masked_store", "create_store")


class NotLaneWise(Exception):
    """A live-lane trace cannot express this launch: it is emitted over whole blocks instead."""


def live_lanes(record: LaunchRecord, ops):
    """``LiveLanes`` when the first masked access among ``ops`` (op indices) has a constant mask over
    a 1-d block of B lanes whose live lanes are its first n (0 < n < B), else None."""
    nodes = record.nodes
    for k in ops:
        op = record.ops[k]
        if op.name not in _MASKED or len(op.ins) < 2:
            continue
        node = nodes[op.ins[_MASKED[op.name]]]
        if node.op is not None or node.tag > PID or node.value.ndim != 1 or node.value.dtype != np.bool_:
            return None
        live = int(np.count_nonzero(node.value))
        if 0 < live < node.value.size and node.value[:live].all():
            return LiveLanes(node.value.size, live)
        return None
    return None


class LiveLanes:
    """The lanes a trace computes: the first ``n`` of a block of ``B``, and the loads it reads in place."""

    def __init__(self, B, n):
        self.block, self.n, self.slice = (B,), n, slice(0, n)
        self.view_loads: set = set()  # the values of loads read in place (views of memory until a store)

    def live(self, value):
        """A constant as the trace holds it: a block-shaped array's first n lanes."""
        return np.ascontiguousarray(value[:self.n]) if np.shape(value) == self.block else value

    def shape(self, shape):
        shape = tuple(shape)
        return (self.n,) if shape == self.block else shape

    def check(self, op, in_nodes, out_nodes, lane_wise):
        """Refuse an op on the block that is not lane-wise (``lane_wise``: the emitter's names), or values
        of another shape than the block's or a scalar's."""
        shapes = {np.shape(n.value) for n in in_nodes} | {np.shape(n.value) for n in out_nodes}
        if not shapes <= {self.block, (1,), ()}:
            raise NotLaneWise(f"{op.name} on shapes {sorted(shapes)}")
        if self.block in shapes and op.name not in lane_wise and op.name not in _ACCESSES:
            raise NotLaneWise(op.name)

    def finish(self, lines, ns):
        """The emitted ``lines`` (in ``ns``) made safe and short (see the module docstring)."""
        first = next((j for j, line in enumerate(lines) if not _ASSIGNMENT.match(line)), len(lines))
        # a value that may be a view of a load read in place (a broadcast, a bitcast, a builder call) reads it too
        root = {name: name for name in self.view_loads}
        for line in lines[:first]:
            targets, _, value = line.strip().partition(" = ")
            if _FRESH.match(value) and isinstance(ns.get(value.partition("(")[0]), (np.ufunc, type(None))):
                continue
            for ref in _NAMES.findall(value):
                if ref in root:
                    root.update({target: root[ref] for target in targets.split(", ")})
        for name in self.view_loads:
            used = re.compile(rf"\b({'|'.join(v for v, r in root.items() if r == name)})\b")
            if any(used.search(line) for line in lines[first:]):
                j = next(j for j, line in enumerate(lines) if line.startswith(f"    {name} = "))
                lines[j] += ".copy()"
        for j in range(len(lines) - 1, 0, -1):
            store, value = _STORE.match(lines[j]), _UFUNC_LINE.match(lines[j - 1])
            if store is None or value is None or store[2] != value[1] or not isinstance(ns.get(value[2]), np.ufunc) \
                    or sum(len(re.findall(rf"\b{value[1]}\b", line)) for line in lines) != 2:
                continue
            lines[j - 1:j + 1] = [f"    {value[2]}({value[3]}, out={store[1]})"]
        return lines


_ASSIGNMENT = re.compile(r"    [vp]\d+(, [vp]\d+)* = ")
_NAMES = re.compile(r"\bv\d+\b")
# values the lines make anew, never a view of an operand: a ufunc's, np.where's, np.full's, an astype's
_FRESH = re.compile(r"(f\d+(_\d+)?\(|np\.where\(|np\.full\(|v\d+\.astype\(\w+\)$)")
_STORE = re.compile(r"    (memory_view\([^()]*\))\.__setitem__\(slice\(None\), (v\d+)\)$")
_UFUNC_LINE = re.compile(r"    (v\d+) = (f\d+(?:_\d+)?)\(([\w, ]*)\)$")
