"""A fused backward kernel as a differentiable op, so that every order of derivative runs one code path.

An op's backward is a fused kernel. Its gradient is itself an op of (g, the saved inputs), and under
``create_graph`` it is differentiated again. ``FusedBackward`` is that op: its forward is the fused
kernel (so the gradient is the kernel's at every order, with the kernel's launches), its backward
the vector-Jacobian product of ``recorded``, the same gradients written with differentiable ops (the
op's composed form differentiated by autograd, ``composed_grads``, or its derivative formula traced
on Tensors), differentiated by autograd. Whether that backward is itself recorded is the engine's
decision (``create_graph``), as for any Function.
"""
from __future__ import annotations

from ..modes import enable_grad
from .engine import grad
from .function import BuiltinFunction, recording_backward

__all__ = ["FusedBackward", "composed_grads", "fused_backward"]


class _Use(BuiltinFunction):
    """``t`` again, as a new graph node: a gradient taken at its edge counts only the uses of this
    result, never a path through ``t``'s own history (where an upstream gradient may lead back to
    an input that is also differentiated). It launches nothing."""
    node_name = "AliasBackward0"

    @staticmethod
    def forward(ctx, t):
        return t

    @staticmethod
    def backward(ctx, g):
        return g


def _vjp(outputs, inputs, grads, create_graph):
    """The gradients at ``inputs`` (None where unreached) of ``outputs`` against ``grads``, each
    output/gradient pair skipped where either is None or the output has no history."""
    pairs = [(o, g) for o, g in zip(outputs, grads) if o is not None and g is not None and o._requires_grad]
    if not pairs or not inputs:
        return (None,) * len(inputs)
    return grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs], create_graph=create_graph,
                allow_unused=True)


def composed_grads(forward, inputs, needs, grads):
    """The gradients of ``forward(*inputs)`` (a Tensor or a tuple) against ``grads``, recorded, at
    the inputs that ``needs`` marks (None elsewhere): a ``recorded`` form for ``FusedBackward``
    from an op's composed form."""
    with enable_grad():
        inputs = [_Use.apply(t) if n else t for t, n in zip(inputs, needs)]
        outs = forward(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        wanted = [t for t, n in zip(inputs, needs) if n]
        found = iter(_vjp(outs, wanted, grads, True))
    return tuple(next(found) if n else None for n in needs)


class FusedBackward(BuiltinFunction):
    """``kernel(*inputs)``: an op's fused gradients (a Tensor, or a tuple with None for those not
    computed) as an op of ``inputs`` (g and what the op saved; None allowed). Its backward is the
    vjp of ``recorded(*inputs)``, which returns the same gradients from differentiable ops.
    ``depends``: per output, the positions in ``inputs`` it depends on (None: all), so that a
    gradient of inputs that need none is recorded as none, as separate ops would record it."""

    @staticmethod
    def forward(ctx, kernel, recorded, depends, *inputs):
        ctx.recorded = recorded
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(*inputs)
        outs = kernel(*inputs)
        if depends is not None:
            need = ctx.needs_input_grad[3:]
            ctx.mark_non_differentiable(*(o for o, on in zip(outs, depends)
                                          if o is not None and on is not None and not any(need[i] for i in on)))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        need = ctx.needs_input_grad[3:]
        # one gradient per tensor: an input passed twice gets its (total) gradient once
        first = {}
        for i, t in enumerate(inputs):
            if need[i]:
                first.setdefault(id(t), i)
        record = recording_backward()
        with enable_grad():
            uses = [_Use.apply(t) if need[i] and first[id(t)] == i else t for i, t in enumerate(inputs)]
            outs = ctx.recorded(*uses)
            outs = outs if isinstance(outs, tuple) else (outs,)
            wanted = [i for i in range(len(uses)) if need[i] and first[id(inputs[i])] == i]
            found = _vjp(outs, [uses[i] for i in wanted], grads, record)
        result = [None] * len(inputs)
        for i, d in zip(wanted, found):
            result[i] = d
        return (None, None, None) + tuple(result)


_CLASSES = {}


def fused_backward(ctx, kernel, recorded, *inputs, depends=None):
    """``FusedBackward`` applied from the backward of the node ``ctx``, its node named after it
    (``NativeLayerNormBackward0`` -> ``NativeLayerNormBackwardBackward0``). Without a recorded
    graph (no create_graph) this is only ``kernel(*inputs)``."""
    if not recording_backward():  # what apply would do, without its bookkeeping (the first-order path)
        return kernel(*inputs)
    head, _, tail = type(ctx).__name__.rpartition("Backward")
    name = f"{head}BackwardBackward{tail}"
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (FusedBackward,), {"node_name": name})
    return cls.apply(kernel, recorded, depends, *inputs)
