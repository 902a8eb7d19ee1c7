"""Eager call plans of matrix products (``mm``, ``bmm``, ``matmul``'s matrix and batched forms,
``@``; ``nn.functional.linear`` through ``plan_launch``): what a call decides from its operands'
metadata (the broadcast batch, the output's shape and dtype, the launch site), decided once per call
signature and replayed, as the elementwise ops' plans are (``call_plans.py``: the same signature,
``call_key``, and table, ``PLANS``).

The first call of a signature runs the general path (``Function.apply``); once the CPU executor
replays its launch, a plan is kept and later calls allocate the output and replay the launch
directly (``kernels.linalg.matmul.planned``, which launches as ``matmul`` does whenever a replay is
not allowed: a graph capture, an observer, verify mode). A recorded call's plan builds its node as
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

__all__ = ["plan_product", "plan_launch"]


def plan_product(cls, key, a, b, save):
    """After a call ``key`` of ``cls`` (a ``Matmul``) on ``a`` and ``b`` ran the general path: keep
    its plan, if its launch replays. ``save(ctx, a, b)``: what the forward saves, as it saves it."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or not a.dtype.is_floating_point or \
            a.dtype is not b.dtype:
        return
    sa, sb = a._data.shape, b._data.shape
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    ea, eb = batch + tuple(sa[-2:]), batch + tuple(sb[-2:])
    # the forward's site: two distinct (expanded) operands, even for x @ x (a replay reads them by address)
    run = planned(a._data.expand(ea), b._data.expand(eb))
    if (ea, eb) == (tuple(sa), tuple(sb)):  # the operands are the kernel's as they are
        operands = lambda args: (args[0]._data, args[1]._data)
    else:
        operands = lambda args: (args[0]._data.expand(ea), args[1]._data.expand(eb))
    plan_launch(cls, key, (a, b), run, operands, lambda out, args: Tensor._wrap(out), lambda ctx, args, y: save(
        ctx, *args), lambda args: args)


def plan_launch(cls, key, args, run, operands, result, save, node_args):
    """Keep the plan of a call ``key`` on ``args`` whose general path is ``cls.apply(*node_args(args))``
    with a forward of one planned launch ``run`` (None: no plan): ``run(*operands(args))`` gives the
    output's torch tensor, ``result(out, args)`` the Tensor the call returns and ``save(ctx, nodes, y)``
    saves what the forward saves from the Function's arguments ``nodes``."""
    if run is None:
        return
    nodes = node_args(args)
    needs = tuple([requires_grad(a) if isinstance(a, Tensor) else False for a in nodes]) if is_grad_enabled() \
        else (False,) * len(nodes)
    recorded = True in needs
    if recorded and cls.no_grad_args is not None:
        return
    if len(PLANS) > 4096:
        PLANS.clear()
    if not recorded:
        PLANS[key] = lambda args: result(run(*operands(args)), args)
        return
    node = cls._backward_cls

    def plan(args):  # the node, the result from the planned launch, what it saves, the graph's links
        ctx = node()
        ctx.needs_input_grad = needs
        nodes = node_args(args)
        y = result(run(*operands(args)), args)
        save(ctx, nodes, y)
        return record(cls, ctx, nodes, needs, y)
    PLANS[key] = plan
