"""Compiling a recorded launch (``runtime/recorder.py``) into straight-line numpy.

What depends only on constants and the program id was folded while recording; an argument's
address plus constants is (argument, one offset array). What is left are the ops whose operands can
change between launches. Ops that no store, atomic, print or guard needs are dropped; the rest are
emitted in recorded order (``runtime/emitter.py``) as one Python function of the launch's inputs
(addresses and varying scalars), one line per op. ``tl.dot`` stays the BLAS call the interpreter
runs (``runtime/interpreter.py``).

Guards (Python decisions on arguments or data) compile into a second function evaluated before
the launch stores anything; the replay runs only if it returns the recorded decisions.
"""
from __future__ import annotations

import re

from .emitter import Emitter, access
from .lanes import NotLaneWise, live_lanes
from .recorder import (ATOMICS, SIDE_EFFECTS, STORES, LaunchRecord, Refused,
                       trace_memory_check)

__all__ = ["CompiledLaunch", "compile_launch"]


class CompiledLaunch:
    """A recorded launch as two functions of its inputs ``A`` (per slot: an address or a scalar,
    each a 1-element numpy array): ``guards(A)`` (None when it has none) and ``run(A)``."""

    def __init__(self, record: LaunchRecord | None, source: str, guard_source: str, namespace: dict, expected,
                 nbytes: int):
        self.source, self.guard_source = source, guard_source
        self.namespace = dict(namespace)  # what the source names, before exec adds to it (the trace cache stores it)
        exec(compile(source, "<replay>", "exec"), namespace)
        self.run = namespace["_run"]
        self.guards = None
        if guard_source:
            exec(compile(guard_source, "<replay guards>", "exec"), namespace)
            self.guards = namespace["_guards"]
        self.expected = expected
        self.nbytes = nbytes
        self.n_ops = source.count("\n")
        self.memory = trace_memory_check(record)  # the builder methods whose patching makes it interpret
        # the input slots ``run`` reads (None: it reads ``A`` otherwise too)
        self.reads = None if _OTHER_USE.search(source) else sorted({int(s) for s in _SLOT_READ.findall(source)})

    def on_tensors(self, tensor_of, A):
        """``run`` as a function of a launch's tensors ``T`` (None when it reads its inputs otherwise than
        by slot): a slot ``tensor_of`` maps to a tensor reads ``T[tensor_of[slot]].data_ptr()``, any
        other its value in ``A``. For a caller that replays one launch site with other tensors: no
        input list is built per launch."""
        if self.reads is None:
            return None
        namespace = dict(self.namespace)

        def read(match):
            slot = int(match[1])
            if slot in tensor_of:
                return f"T[{tensor_of[slot]}].data_ptr()"
            namespace[f"_A{slot}"] = A[slot]
            return f"_A{slot}"
        source = _SLOT_READ.sub(read, self.source).replace("def _run(A):", "def _run(T):", 1)
        exec(compile(source, "<replay on tensors>", "exec"), namespace)
        return namespace["_run"]


def _needed(record: LaunchRecord, roots):
    """Op indices the given op indices need (transitively), in recorded order."""
    need = set()
    stack = list(roots)
    nodes = record.nodes
    while stack:
        k = stack.pop()
        if k in need:
            continue
        need.add(k)
        for i in record.ops[k].ins:
            if nodes[i].op is not None:
                stack.append(nodes[i].op)
    return sorted(need)


def compile_launch(record: LaunchRecord, expected_guards) -> CompiledLaunch:
    effects = [k for k, op in enumerate(record.ops) if op.name in SIDE_EFFECTS]
    needed = _needed(record, effects)
    # a launch whose accesses all read and write a block's first n lanes computes on those alone
    lanes = live_lanes(record, needed) if not record.guards else None
    if lanes is not None:
        try:
            return _compile(record, needed, expected_guards, lanes)
        except NotLaneWise:
            pass
    return _compile(record, needed, expected_guards, None)


def _compile(record, needed, expected_guards, lanes) -> CompiledLaunch:
    em = Emitter(record)
    em.lanes = lanes
    lines, ready = [], {}
    for k in needed:
        em.emit(k, lines, ready)
    lines = _live_lines(lines, em.acting)
    if lanes is not None:
        lines = lanes.finish(lines, em.ns)
    source = "def _run(A):\n" + em.header() + "\n".join(lines) + ("\n" if lines else "") + "    return None\n"
    guard_source = ""
    if record.guards:
        em.arrays_used, em.acting = set(), set()
        glines, gready = ["    S = []"], {}
        chain, stores = _hoisted(record)
        store_width = max((_width(record.nodes[record.ops[k].ins[0]]) for k in stores), default=1)
        for k in sorted(chain | stores):
            op = record.ops[k]
            if op.name in ATOMICS or op.name in STORES:
                if k in chain:
                    raise Refused("a guard that needs an atomic's result")
                glines.append(f"    S.append({em.store_range(op, glines, gready)})")
                continue
            if op.event is not None and any(record.ops[j].event < op.event for j in stores):
                # hoisted above a store: it reads what the interpreter read if no earlier store wrote there
                width = _width(record.nodes[op.ins[0]])
                glines.append(f"    if overlaps({em.live_addresses(op, glines, gready)}, {width}, S, {store_width}):")
                glines.append("        return None")
            em.emit(k, glines, gready)
        values = []
        for node_id, kind, _, _, _ in record.guards:
            e = em.expr(node_id, glines, gready)
            values.append(f"bool({e})" if kind == "bool" else f"int({e}.squeeze())")
        glines.append(f"    return ({', '.join(values)}{',' if len(values) == 1 else ''})")
        glines = _live_lines(glines, em.acting)
        guard_source = "def _guards(A):\n" + em.header() + "\n".join(glines) + "\n"
    return CompiledLaunch(record, source, guard_source, em.ns, tuple(expected_guards), em.nbytes)


_NAMES = re.compile(r"\b[vpa]\d+\b")
_SLOT_READ = re.compile(r"\bA\[(\d+)\]")
_OTHER_USE = re.compile(r"\bA\b(?!\[\d+\])(?!\):)")  # (``def _run(A):`` is no use)


def _live_lines(lines, acting):
    """The lines that act (``acting``: indices of stores, atomics and other side effects) or whose
    value a kept line uses: a value only a replaced access read (a pointer block that a run load
    no longer needs) is not computed."""
    used, kept = set(), []
    for k in range(len(lines) - 1, -1, -1):
        line = lines[k]
        if k not in acting:
            target, sep, _ = line.partition(" = ")
            names = _NAMES.findall(target) if sep and "(" not in target else None
            if names and not any(n in used for n in names):
                continue
        used.update(_NAMES.findall(line))
        kept.append(line)
    return kept[::-1]


def _width(ptr_node) -> int:
    return max(1, ptr_node.dtype.element_ty.primitive_bitwidth // 8)


def _hoisted(record: LaunchRecord):
    """The ops the guards need, evaluated before the launch stores anything, and the stores that come
    before one of their loads in launch order (their addresses are needed for the overlap check).

    A hoisted load reads what the interpreter read unless an earlier store of the launch wrote there;
    the guard function checks that no earlier store's addresses overlap it. Those addresses may
    themselves depend on loads (a pointer read from a table): those loads are hoisted and checked too,
    until nothing new is needed. By induction over launch order every hoisted load then sees the
    memory the interpreter saw."""
    nodes = record.nodes
    roots = {nodes[g[0]].op for g in record.guards if nodes[g[0]].op is not None}
    stores: set = set()
    while True:
        chain = set(_needed(record, roots))
        last = max((record.ops[k].event for k in chain if record.ops[k].event is not None), default=-1)
        before = {k for kind, k, _ in record.events[:last] if kind == "store"}
        if before <= stores:
            return chain, stores
        stores |= before
        for k in before:
            for i in access(record.ops[k]):
                if i is not None and nodes[i].op is not None:
                    roots.add(nodes[i].op)
