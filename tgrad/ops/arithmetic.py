"""Elementwise functions composed from core ops (each a kernel), so their values and gradients are
the composition's; where PyTorch defines a gradient by hand, the composition is chosen to give the
same one.

- ``nan_to_num``: three ``where``s; the gradient is g where x is finite, 0 elsewhere.
- ``fmax``/``fmin``: ``where(a >= b or b is NaN, a, b)``: NaN-ignoring, the gradient to ``a``
  on ties (PyTorch's choice).
- ``logit(x)`` = log(x) - log1p(-x) (d/dx = 1/(x(1-x)), infinite at 0 and 1); with ``eps``, x is
  clamped to [eps, 1-eps] first (gradient 0 outside).
- ``sinc(x)`` = sin(pi x)/(pi x), 1 at 0 with gradient 0 there (the division sees 1 in place of 0).
- ``addcmul``/``addcdiv``: input + value * t1 * t2 (or / t2); ``float_power``: pow in float64.
- ``copysign(a, b)`` = |a| with b's sign bit (``signbit`` reads the bit through an integer view of
  the storage, so -0.0 and -NaN count as negative); d/da = sign(a) * sign(result), 0 at a = 0.
"""
from __future__ import annotations

import math

import torch

from .. import _dtype
from ..tensor import Tensor
from ..autograd.function import BuiltinFunction
from . import factories
from .common import legacy_scalar_first, sum_to_shape, wrap
from .elementwise import clamp, where
from .inplace import in_place, write_result
from .registry import FUNCTIONS, op


def _fn(name):
    return FUNCTIONS[name]  # a core op registered by another module (the table's rows)


def _check_tensor(name, x, arg="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _float(x):
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


@op("nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    _check_tensor("nan_to_num", input)
    if not input.dtype.is_floating_point:
        return input.clone()
    info = torch.finfo(input.dtype.torch)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    y = where(input.isnan(), nan, input)
    y = where(input == math.inf, posinf, y)
    return where(input == -math.inf, neginf, y)


@op("nan_to_num_")
def nan_to_num_(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    return input.copy_(nan_to_num(input, nan, posinf, neginf))


# ----------------------------------------------------------------------------- elementwise

@op("fmax")
def fmax(input, other):  # noqa: A002
    return where((input >= other).logical_or(_isnan(other)), input, other)


@op("fmin")
def fmin(input, other):  # noqa: A002
    return where((input <= other).logical_or(_isnan(other)), input, other)


def _isnan(x):
    return x.isnan() if isinstance(x, Tensor) else math.isnan(x) if isinstance(x, float) else False


@op("logit")
def logit(input, eps=None):  # noqa: A002
    x = _float(input)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    else:  # outside [0, 1] PyTorch's gradient is NaN too: a NaN added (a constant) carries it
        x = x + where((x < 0).logical_or(x > 1), math.nan, 0.0)
    return x.log() - (-x).log1p()


@op("sinc")
def sinc(input):  # noqa: A002
    x = _float(input)
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, px.sin() / px)


def _scalar_first(name, tensor1, tensor2, legacy, value):
    """addcmul(input, value, tensor1, tensor2), PyTorch's deprecated order, as today's."""
    if not legacy:
        return tensor1, tensor2, value
    (t1, t2), value = legacy_scalar_first(name, "Number value, Tensor tensor1, Tensor tensor2",
                                          "Tensor tensor1, Tensor tensor2, *, Number value = 1", tensor1,
                                          (tensor2, *legacy))
    return t1, t2, value


@op("addcmul")
def addcmul(input, tensor1, tensor2, *legacy, value=1):  # noqa: A002
    tensor1, tensor2, value = _scalar_first("addcmul", tensor1, tensor2, legacy, value)
    return input + value * tensor1 * tensor2 if value != 1 else input + tensor1 * tensor2


def _check_addcdiv(tensor1, tensor2):
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                           "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
                           "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter implementation: "
                           "(input + value * tensor1 / tensor2), for all dtypes.")


@op("addcdiv")
def addcdiv(input, tensor1, tensor2, *legacy, value=1):  # noqa: A002
    tensor1, tensor2, value = _scalar_first("addcdiv", tensor1, tensor2, legacy, value)
    _check_addcdiv(tensor1, tensor2)
    return input + value * tensor1 / tensor2 if value != 1 else input + tensor1 / tensor2


@op("addcmul_", function=False)
def addcmul_(input, tensor1, tensor2, *legacy, value=1):  # noqa: A002
    tensor1, tensor2, value = _scalar_first("addcmul_", tensor1, tensor2, legacy, value)
    return input.add_(value * tensor1 * tensor2 if value != 1 else tensor1 * tensor2)


@op("addcdiv_", function=False)
def addcdiv_(input, tensor1, tensor2, *legacy, value=1):  # noqa: A002
    tensor1, tensor2, value = _scalar_first("addcdiv_", tensor1, tensor2, legacy, value)
    _check_addcdiv(tensor1, tensor2)
    return input.add_(value * tensor1 / tensor2 if value != 1 else tensor1 / tensor2)


@op("float_power")
def float_power(input, exponent):  # noqa: A002
    if not isinstance(input, Tensor):
        return exponent.to(_dtype.float64).__rpow__(float(input))
    e = exponent.to(_dtype.float64) if isinstance(exponent, Tensor) else float(exponent)
    return input.to(_dtype.float64) ** e


_BITS = {_dtype.float64: torch.int64, _dtype.float32: torch.int32, _dtype.float16: torch.int16,
         _dtype.bfloat16: torch.int16}


@op("signbit")
def signbit(input):  # noqa: A002
    _check_tensor("signbit", input)
    if input.dtype is _dtype.bool or input.dtype is _dtype.uint8:
        return input != input  # never negative
    if not input.dtype.is_floating_point:
        return input < 0
    return wrap(input._data.detach().view(_BITS[input.dtype])) < 0  # the sign bit, -0.0 and -NaN included


class Copysign(BuiltinFunction):
    """y = |a| with the sign bit of b; dy/da = y / a (0 at a = 0: NaN at a = +-inf or NaN, as
    PyTorch's result / self); b gets a zero gradient."""
    node_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, a, b):
        negative = signbit(b) if isinstance(b, Tensor) else math.copysign(1.0, b) < 0
        mag = a.abs()
        y = (-mag if negative else mag) if isinstance(negative, bool) else where(negative, -mag, mag)
        ctx.save_for_backward(a, y)
        ctx.b_shape = b.shape if isinstance(b, Tensor) else None
        return y

    @staticmethod
    def backward(ctx, g):
        a, y = ctx.saved_tensors
        ga = sum_to_shape(g * where(a == 0, 0.0, y / a), a.shape) if ctx.needs_input_grad[0] else None
        gb = factories.zeros(ctx.b_shape, dtype=g.dtype, device=g.device) if ctx.needs_input_grad[1] else None
        return ga, gb


@op("copysign")
def copysign(input, other):  # noqa: A002
    x = _float(input)
    if isinstance(other, Tensor) and other.dtype.is_floating_point and other.dtype is not x.dtype:
        x = x.to(_dtype.promote(x.dtype, other.dtype))
    return Copysign.apply(x, other)


@op("sgn")
def sgn(input):  # noqa: A002
    return input.sign()


@op("positive")
def positive(input):  # noqa: A002
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@op("deg2rad")
def deg2rad(input):  # noqa: A002
    return _float(input) * (math.pi / 180.0)


@op("rad2deg")
def rad2deg(input):  # noqa: A002
    return _float(input) * (180.0 / math.pi)


op("absolute")(_fn("abs"))
op("absolute_", function=False)(_fn("abs_"))


# ----------------------------------------------------------------------------- in-place variants

@op("float_power_", function=False)
def _float_power_(self, exponent):
    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.scalar_type} but the operation's "
                           "result requires dtype Double")
    return write_result("float_power_", self, float_power, exponent)


for _name, _f in (("logit_", logit), ("sinc_", sinc), ("deg2rad_", deg2rad), ("rad2deg_", rad2deg)):
    in_place(_name, _f)
in_place("copysign_", copysign, function=False)
op("sgn_", function=False)(_fn("sign_"))
