"""Eager call plans: what an unrecorded call of a table row decides from its operands' metadata
(result dtype and promotion, numbers as 0-d constants, the broadcast shape, the formula, the
output's layout and allocation, the kernel's launch site), decided once per call signature and
replayed.

A call's signature (``call_key``) is its Function and, per operand, a tensor's dtype, shape,
strides and device, or a Python number's type and value; with which operands are one tensor. The
first call of a signature runs the general path (``RowFunction.forward``); once the CPU executor
replays its launch, ``plan_call`` keeps a plan of the same decisions (``RowFunction._decide``, the
one place they are made) and later calls allocate the output and replay the launch directly
(``kernels.elementwise.pointwise.planned``). A recorded call (grad mode on and an operand that
requires grad) takes the general path: its node is built there.
"""
from __future__ import annotations

from .. import _dtype
from ..autograd.function import _view_requires_grad
from ..modes import is_grad_enabled
from ..tensor import Tensor
from tgrad.kernels.elementwise.pointwise import planned
from .formula import broadcast_shape

__all__ = ["PLANS", "call_key", "plan_call"]

PLANS: dict = {}  # call signature -> plan(args) -> the result's torch tensor
_NUMBERS = (int, float, bool)


def call_key(cls, args):
    """The signature of a call of ``cls`` on ``args``; None when the call is recorded or an argument
    is neither a Tensor nor a Python number that a constant stands for."""
    enabled = is_grad_enabled()
    if len(args) == 2:  # the common case spelled out: two tensors
        a, b = args
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            if enabled and (a._requires_grad or b._requires_grad or a._base is not None and _view_requires_grad(a)
                            or b._base is not None and _view_requires_grad(b)):
                return None
            d, e = a._data, b._data
            return cls, d.dtype, d.shape, d.stride(), d.device, e.dtype, e.shape, e.stride(), e.device, d is e
    key = [cls]
    ids = []
    for a in args:
        if isinstance(a, Tensor):
            if enabled and (a._requires_grad or a._base is not None and _view_requires_grad(a)):
                return None
            d = a._data
            key += (d.dtype, d.shape, d.stride(), d.device)
            ids.append(id(d))
        elif type(a) in _NUMBERS and a == a and a != 0:  # as common.constant keeps them (no NaN, no +-0)
            key += (type(a), a)
        else:
            return None
    if len(ids) > 1:  # which operands are one tensor (x * x) decides the launch
        key.append(ids[0] == ids[1] if len(ids) == 2 else tuple([ids.index(i) for i in ids]))
    return tuple(key)


def plan_call(cls, key, args):
    """After a call of ``key`` ran the general path: keep its plan, if the launch replays and what
    the call decided depends on nothing but the key."""
    operands, out_dtype, formula, params = cls._decide(args, (), False)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if any(o is not a for o, a in zip(operands, args) if isinstance(a, Tensor)):
        return  # an operand cast first (bool to a number formula): an op of its own
    if _dtype.category(out_dtype) > max(_dtype.category(t.dtype) for t in tensors):
        return  # the default dtype decided the result (an int tensor and a float, a float-only row)
    data = [o._data for o in operands]
    run = planned(formula, data, broadcast_shape(data), [out_dtype.torch], params)
    if run is None:
        return
    fixed = [None if isinstance(a, Tensor) else o._data for a, o in zip(args, operands)]
    if len(PLANS) > 4096:
        PLANS.clear()
    if all(f is None for f in fixed):
        if len(args) == 1:
            PLANS[key] = lambda args: run([args[0]._data])[0]
        elif len(args) == 2:
            PLANS[key] = lambda args: run([args[0]._data, args[1]._data])[0]
        else:
            PLANS[key] = lambda args: run([a._data for a in args])[0]
    else:
        PLANS[key] = lambda args: run([a._data if f is None else f for a, f in zip(args, fixed)])[0]
