"""The thresholds: ``threshold`` and ``hardshrink`` (``masked_fill``), ``softshrink`` (x minus its
clamp). Each passes the gradient where the input is kept and gives 0 elsewhere; NaN passes
(NaN <= t is false). ``heaviside``, the step, has no derivative (as in PyTorch)."""
from __future__ import annotations

import torch

from .. import _dtype
from tgrad.kernels import elementwise as M
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from .elementwise import clamp, compare, where
from .inplace import in_place
from .integer import _NoDerivative
from .registry import op


def _outside(x, lambd):
    return (x >= -lambd).logical_and(x <= lambd).logical_not()


def _at_most(x, t):
    """x <= t, fp16/bf16 compared in fp32 as PyTorch's threshold kernels do (x = fp16(0.7) > 0.7 is
    kept): one launch, the fp32 compare inside it."""
    return compare(M.le, x, t, compute=_dtype.float32 if x.dtype in (_dtype.float16, _dtype.bfloat16) else None)


# kind: (keep(x, a): where the gradient passes, value(x, a, b, keep))
_GATED = {
    "threshold": (lambda x, t: _at_most(x, t).logical_not(),
                  lambda x, t, v, keep: x.masked_fill(keep.logical_not(), v)),
    "hardshrink": (_outside, lambda x, lambd, _, keep: x.masked_fill(keep.logical_not(), 0)),
    "softshrink": (_outside, lambda x, lambd, _, keep: x - clamp(x, -lambd, lambd)),
}


class _Gated(BuiltinFunction):
    """y = f(x) with dy/dx = 1 where ``keep(x)``, else 0 (NaN fails every comparison: kept)."""
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, a, b, kind):
        keep_fn, value_fn = _GATED[kind]
        keep = keep_fn(x, a)
        ctx.save_for_backward(keep)
        return value_fn(x, a, b, keep)

    @staticmethod
    def backward(ctx, g):
        (keep,) = ctx.saved_tensors
        return g.masked_fill(keep.logical_not(), 0), None, None, None


class Threshold(_Gated):
    node_name = "ThresholdBackward0"


class Hardshrink(_Gated):
    node_name = "HardshrinkBackward0"


class Softshrink(_Gated):
    node_name = "SoftshrinkBackward0"


@op("threshold", method=False)
def threshold(input, threshold, value):  # noqa: A002
    return Threshold.apply(input, threshold, value, "threshold")


@op("threshold_", method=False)
def threshold_(input, threshold, value):  # noqa: A002
    return input.masked_fill_(_at_most(input, threshold), value)


@op("hardshrink")
def hardshrink(input, lambd=0.5):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"hardshrink_cpu\" not implemented for '{input.dtype.scalar_type}'")
    return Hardshrink.apply(input, lambd, None, "hardshrink")


@op("softshrink", function=False, method=False, nn_functional=True)
def softshrink(input, lambd=0.5):  # noqa: A002  (torch.nn.functional only)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"softshrink_check\" not implemented for '{input.dtype.scalar_type}'")
    if not lambd >= 0:
        raise RuntimeError(f"lambda must be in range [0, {torch.finfo(input.dtype.torch).max:g}] for input dtype "
                           f"{input.dtype.scalar_type}, but found {lambd:g}")
    return Softshrink.apply(input, lambd, None, "softshrink")




class _Heaviside(_NoDerivative):
    aten = "heaviside"


@op("heaviside")
def heaviside(input, values):  # noqa: A002
    """The step: 0 below zero, 1 above, ``values`` at zero (NaN gives 0, as PyTorch's kernel)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    run = lambda x, v: where(x == 0, v, (x > 0).to(x.dtype))  # noqa: E731
    return _Heaviside.apply(input, values, run) if input.requires_grad or values.requires_grad else run(input, values)


in_place("heaviside_", heaviside, function=False)
