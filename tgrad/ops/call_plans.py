"""Eager call plans: what a call of a table row decides from its operands' metadata (result
dtype and promotion, numbers as 0-d constants, the broadcast shape, the formula, the output's
layout and allocation, the kernel's launch site), decided once per call signature and replayed.

A call's signature (``call_key``) is its Function and, per operand, a tensor's dtype, shape,
strides and device, or a Python number's type and value; with which operands are one tensor, and
which require grad when the call is recorded. The first call of a signature runs the general path
(``RowFunction.forward``); once the CPU executor replays its launch, ``plan_call`` keeps a plan of
the same decisions (``RowFunction._decide``, the one place they are made) and later calls allocate
the output and replay the launch directly (``kernels.elementwise.pointwise.planned``); a recorded
call's plan builds its node as ``Function.apply`` does. Comparisons (``elementwise.compare``,
``plan_compare``) and sum/mean (``reduce.py``, through ``kernels.reductions.reduce.planned``) keep
plans in the same table, keyed the same way.
"""
from __future__ import annotations

import torch

from .. import _dtype
from ..autograd.function import _view_requires_grad, record, requires_grad
from ..modes import _inference_mode_enabled, is_grad_enabled
from ..tensor import Tensor
from tgrad.kernels.elementwise.pointwise import planned
from tgrad.kernels.helpers.dtypes import compute_dtype
from .common import as_operand, result_type
from .formula import broadcast_shape

__all__ = ["PLANS", "call_key", "plan_call", "plan_compare"]

PLANS: dict = {}  # call signature -> plan(args) -> the result's torch tensor
_NUMBERS = (int, float, bool)


def call_key(cls, args):
    """The signature of a call of ``cls`` on ``args``, with which operands a recorded call records
    (grad mode on and an operand requiring grad, outside inference mode); None when an argument is
    neither a Tensor nor a Python number that a constant stands for, or inference mode would
    decide whether the call is recorded."""
    enabled = is_grad_enabled()
    if len(args) == 1 and isinstance(args[0], Tensor):  # the common cases spelled out (the keys the loop
        a = args[0]                                      # below makes): one tensor, two, a tensor and a number
        d = a._data
        key = cls, d.dtype, d.shape, d.stride(), d.is_cpu or d.device
        if enabled and (a._requires_grad or a._base is not None and _view_requires_grad(a)):
            return None if _inference_mode_enabled() else key + (True,)
        return key
    if len(args) == 2:
        a, b = args
        if isinstance(a, Tensor):
            d = a._data
            if isinstance(b, Tensor):
                e = b._data
                key = cls, d.dtype, d.shape, d.stride(), d.is_cpu or d.device, e.dtype, e.shape, e.stride(), \
                    e.is_cpu or e.device, d is e
                if enabled:
                    needs = (a._requires_grad or a._base is not None and _view_requires_grad(a),
                             b._requires_grad or b._base is not None and _view_requires_grad(b))
                    if True in needs:
                        return None if _inference_mode_enabled() else key + needs
                return key
            if type(b) in _NUMBERS and b == b and (b or type(b) is not float):
                key = cls, d.dtype, d.shape, d.stride(), d.is_cpu or d.device, type(b), b
                if enabled and (a._requires_grad or a._base is not None and _view_requires_grad(a)):
                    return None if _inference_mode_enabled() else key + (True, False)
                return key
    key = [cls]
    ids, needs = [], []
    for a in args:
        if isinstance(a, Tensor):
            d = a._data
            key += (d.dtype, d.shape, d.stride(), d.is_cpu or d.device)
            ids.append(id(d))
            needs.append(enabled and (a._requires_grad or a._base is not None and _view_requires_grad(a)))
        # no NaN (never an equal key) and no float zero (0.0 and -0.0 are equal keys, not equal values)
        elif type(a) in _NUMBERS and a == a and (a or type(a) is not float):
            key += (type(a), a)
            needs.append(False)
        else:
            return None
    if len(ids) > 1:  # which operands are one tensor (x * x) decides the launch
        key.append(ids[0] == ids[1] if len(ids) == 2 else tuple([ids.index(i) for i in ids]))
    if True in needs:
        if _inference_mode_enabled():
            return None
        key += needs
    return tuple(key)


def plan_call(cls, key, args):
    """After a call of ``key`` ran the general path: keep its plan, if the launch replays and what
    the call decided depends on nothing but the key."""
    needs = tuple([requires_grad(a) for a in args]) if is_grad_enabled() else (False,) * len(args)
    recorded = True in needs
    row = cls.row
    if recorded and (cls.no_grad_args is not None or row.bool_backward is not None):
        return  # refusals and errors that depend on which operand requires grad: the general path's
    operands, out_dtype, formula, params = cls._decide(args, (), recorded)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if any(o is not a for o, a in zip(operands, args) if isinstance(a, Tensor)):
        return  # an operand cast first (bool to a number formula): an op of its own
    if _dtype.category(out_dtype) > max(_dtype.category(t.dtype) for t in tensors):
        return  # the default dtype decided the result (an int tensor and a float, a float-only row)
    data = [o._data for o in operands]
    run = planned(formula, data, broadcast_shape(data), out_dtype.torch, params)
    if run is None:
        return
    if len(PLANS) > 4096:
        PLANS.clear()
    if recorded:
        numbers = [i for i, a in enumerate(args) if not isinstance(a, Tensor)]
        PLANS[key] = _recorded(cls, run, needs, numbers, result_type(*args))
    else:
        PLANS[key] = _unrecorded(run, args, operands)


def plan_compare(key, formula, args, operands, compute):
    """After a comparison's call ``key`` ran ``fused(formula, operands, bool, compute=compute)``
    (``elementwise.compare``: never recorded): keep its plan once the launch replays, unless the
    default dtype decided ``compute`` (an int tensor against a float)."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if _dtype.category(compute) > max(_dtype.category(t.dtype) for t in tensors):
        return
    data = [o._data for o in operands]
    run = planned(formula, data, broadcast_shape(data), torch.bool, (), compute=compute_dtype(compute.torch))
    if run is None:
        return
    if len(PLANS) > 4096:
        PLANS.clear()
    PLANS[key] = _unrecorded(run, args, operands)


def _unrecorded(run, args, operands):
    """The plan of an unrecorded call: the planned launch on the call's tensors, each number's 0-d
    operand kept (only read)."""
    numbers = [i for i, a in enumerate(args) if not isinstance(a, Tensor)]
    if not numbers:
        if len(args) == 1:
            return lambda args: Tensor._wrap(run(args[0]._data))
        if len(args) == 2:
            return lambda args: Tensor._wrap(run(args[0]._data, args[1]._data))
        return lambda args: Tensor._wrap(run(*[a._data for a in args]))
    fixed = [None if isinstance(a, Tensor) else o._data for a, o in zip(args, operands)]
    if numbers == [1] and len(args) == 2:
        number = fixed[1]
        return lambda args: Tensor._wrap(run(args[0]._data, number))
    return lambda args: Tensor._wrap(run(*[a._data if f is None else f for a, f in zip(args, fixed)]))


def _recorded(cls, run, needs, numbers, dtype):
    """The plan of a recorded call: the node, the result from the planned launch, what the node
    saves and the graph's links, as ``Function.apply`` and ``RowFunction.forward`` make them."""
    node, constants, same = cls._backward_cls, cls.constants, cls.row.same_operand is not None
    ref = next(i for i in range(len(needs)) if i not in numbers)
    saves = cls.row.derivative is not None  # (else ``_save`` keeps nothing: a linear row's gradients)
    two = len(needs) == 2 and not numbers

    def plan(args):
        ctx = node()
        ctx.needs_input_grad = needs
        operands = args
        if numbers:  # a number a recorded call saves is a tensor of its own (common.as_operand)
            operands = [as_operand(a, args[ref], dtype) for a in args]
        ctx.params = constants
        y = Tensor._wrap(run(args[0]._data, args[1]._data) if two else run(*[o._data for o in operands]))
        ctx.same = same and args[0] is args[1]
        if saves:
            cls._save(ctx, operands, y)
        return record(cls, ctx, args, needs, y)
    return plan
