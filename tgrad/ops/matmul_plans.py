"""Eager call plans of matrix products (``mm``, ``bmm``, ``matmul``'s matrix and batched forms,
``@``): what a call of ``Matmul`` decides from its operands' metadata (the broadcast batch, the
output's shape and dtype, the launch site), decided once per call signature and replayed, as the
elementwise ops' plans are (``call_plans.py``: the same signature, ``call_key``, and table,
``PLANS``).

The first call of a signature runs ``Function.apply``; once the CPU executor replays its launch,
``plan_product`` keeps a plan and later calls allocate the output and replay the launch directly
(``kernels.linalg.matmul.planned``, which launches as ``matmul`` does whenever a replay is not
allowed: a graph capture, an observer, verify mode). A recorded call's plan builds its node as
``Function.apply`` does. Integer and bool products, empty products and calls off the CPU keep the
general path.
"""
from __future__ import annotations

from ..autograd.function import record, requires_grad
from ..modes import is_grad_enabled
from ..tensor import Tensor
from tgrad.kernels.linalg.matmul import planned
from .call_plans import PLANS
from .common import broadcast_shapes

__all__ = ["plan_product"]


def plan_product(cls, key, a, b, save):
    """After a call ``key`` of ``cls`` (a ``Matmul``) on ``a`` and ``b`` ran the general path: keep
    its plan, if its launch replays. ``save(ctx, a, b)``: what the forward saves, as it saves it."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or not a.dtype.is_floating_point or \
            a.dtype is not b.dtype:
        return
    needs = (requires_grad(a), requires_grad(b)) if is_grad_enabled() else (False, False)
    recorded = True in needs
    if recorded and cls.no_grad_args is not None:
        return
    sa, sb = a._data.shape, b._data.shape
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    expand = (batch + tuple(sa[-2:]), batch + tuple(sb[-2:]))
    # the forward's site: two distinct (expanded) operands, even for x @ x (a replay reads them by address)
    run = planned(a._data.expand(expand[0]), b._data.expand(expand[1]))
    if expand == (tuple(sa), tuple(sb)):
        expand = None  # the operands are the kernel's as they are
    if run is None:
        return
    if len(PLANS) > 4096:
        PLANS.clear()
    PLANS[key] = _recorded(cls, run, needs, expand, save) if recorded else _unrecorded(run, expand)


def _unrecorded(run, expand):
    if expand is None:
        return lambda a, b: Tensor._wrap(run(a._data, b._data))
    ea, eb = expand
    return lambda a, b: Tensor._wrap(run(a._data.expand(ea), b._data.expand(eb)))


def _recorded(cls, run, needs, expand, save):
    """The plan of a recorded call: the node, the result from the planned launch, what the node
    saves and the graph's links, as ``Function.apply`` makes them."""
    node = cls._backward_cls

    def plan(a, b):
        ctx = node()
        ctx.needs_input_grad = needs
        if expand is None:
            y = Tensor._wrap(run(a._data, b._data))
        else:
            y = Tensor._wrap(run(a._data.expand(expand[0]), b._data.expand(expand[1])))
        save(ctx, a, b)
        return record(cls, ctx, (a, b), needs, y)
    return plan
