"""Integer-exact elementwise ops and the operators PyTorch has for them: floor and truncating
division, remainder, powers, bitwise ``& | ^ ~`` and shifts. Integer operands are computed in their
own dtype (``kernels/math_integer.py``), never through floating point; an integer division or
remainder by zero raises PyTorch's ``RuntimeError: ZeroDivisionError``. PyTorch's errors for the
dtypes it has no kernel for (``"lshift_cpu" not implemented for 'Float'``)."""
from __future__ import annotations

import numbers

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.elementwise import integer as I
from tgrad.kernels import elementwise as M
from . import generated, registry  # noqa: F401  (the rows' remainder and fmod first)
from .common import as_operand, check_runnable, result_type
from .formula import fused


def _operands(a, b, dtype):
    """Both as tensors of ``dtype`` (a bool tensor cast when the result is not bool)."""
    ref = a if isinstance(a, Tensor) else b
    out = []
    for x in (a, b):
        x = as_operand(x, ref, dtype)
        if x.dtype is _dtype.bool and dtype is not _dtype.bool:
            x = x.to(dtype)
        out.append(x)
    check_runnable(*out)
    return out


def _not_for(kernel, dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_type}\'')


def refuse_zero_division(divisor, dividend=None):
    """PyTorch's integer division by zero: ``RuntimeError: ZeroDivisionError`` (nothing to divide in
    an empty dividend)."""
    if isinstance(dividend, Tensor) and dividend.numel() == 0:
        return
    if isinstance(divisor, Tensor):
        if divisor.numel() and bool(fused(I.any_zero, [divisor], _dtype.bool, compute=divisor.dtype).any()):
            raise RuntimeError("ZeroDivisionError")
    elif divisor == 0:
        raise RuntimeError("ZeroDivisionError")


class _NoDerivative(BuiltinFunction):
    """A float result PyTorch records with no derivative (``x // y``: a NotImplemented node whose
    backward raises)."""
    node_name, aten = "NotImplemented", None

    @classmethod
    def forward(cls, ctx, a, b, run):
        return run(a, b)

    @classmethod
    def backward(cls, ctx, g):
        raise RuntimeError(f"derivative for aten::{cls.aten} is not implemented")


class _FloorDivideNode(_NoDerivative):
    aten = "floor_divide"


class _RemainderNode(_NoDerivative):
    aten = "remainder"


class _RoundedDiv(BuiltinFunction):
    """``div(a, b, rounding_mode=...)`` of floats: PyTorch's DivBackward2, a zero gradient. Its
    formulas name the operands, so it saves what a needed gradient's formula reads: the divisor for
    either gradient, the dividend for the divisor's (an in-place change of one then breaks backward)."""
    node_name = "DivBackward2"

    @staticmethod
    def forward(ctx, a, b, run):
        ctx.meta = [(x.shape, x.dtype) if isinstance(x, Tensor) else None for x in (a, b)]
        needs_a, needs_b = ctx.needs_input_grad[:2]
        ctx.save_for_backward(a if needs_b and isinstance(a, Tensor) else None,
                              b if (needs_a or needs_b) and isinstance(b, Tensor) else None)
        return run(a, b)

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors  # noqa: B018  (their version check)
        return tuple(fused(M.fill, [g], g.dtype, (0.0,)) if m is not None else None for m in ctx.meta) + (None,)


def _divide(a, b, mode):
    dtype = result_type(a, b)
    if dtype is _dtype.bool:
        raise _not_for("div_floor_cpu" if mode == "floor" else "div_trunc_cpu", dtype)
    ta, tb = _operands(a, b, dtype)
    if dtype.is_floating_point:
        formula = I.floor_divide_float if mode == "floor" else I.trunc_divide_float
    else:
        refuse_zero_division(b, a)
        formula = I.floor_divide_int if mode == "floor" else I.trunc_divide_int
    return fused(formula, [ta, tb], dtype, compute=dtype)


def rounded_div(a, b, rounding_mode):
    """``tgrad.div(a, b, rounding_mode="floor" | "trunc")``."""
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    return _RoundedDiv.apply(a, b, lambda x, y: _divide(x, y, rounding_mode))


@registry.op("floor_divide")
def floor_divide(a, b):
    """``a // b`` (``tgrad.floor_divide``): PyTorch records no derivative for it."""
    return _FloorDivideNode.apply(a, b, lambda x, y: _divide(x, y, "floor"))


def remainder_int(a, b):
    """Integer ``a % b``: exact; a zero divisor raises."""
    dtype = result_type(a, b)
    if dtype is _dtype.bool:
        raise _not_for("remainder_cpu", dtype)
    refuse_zero_division(b, a)
    return fused(I.remainder_int, _operands(a, b, dtype), dtype, compute=dtype)


def pow_int(a, b, dtype):
    """An integer power: by squaring in ``dtype`` (exact, wrapping as PyTorch's)."""
    if isinstance(b, numbers.Number):
        ta = a.to(dtype) if a.dtype is not dtype else a
        check_runnable(ta)
        return fused(I.pow_int_scalar, [ta], dtype, (int(b),), compute=dtype)
    return fused(I.pow_int, _operands(a, b, dtype), dtype, compute=dtype)


_BITWISE = {"and": (M.logical_and, I.bitwise_and), "or": (M.logical_or, I.bitwise_or),
            "xor": (M.logical_xor, I.bitwise_xor)}


def bitwise(which, a, b):
    """``a & b``, ``a | b``, ``a ^ b``: logical on bools, bitwise on integers, refused on floats."""
    dtype = result_type(a, b)
    if dtype.is_floating_point:
        raise _not_for(f"bitwise_{which}_cpu", dtype)
    logical, integer = _BITWISE[which]
    return fused(logical if dtype is _dtype.bool else integer, _operands(a, b, dtype), dtype, compute=dtype)


@registry.op("bitwise_not")
def bitwise_not(a):
    if a.dtype.is_floating_point:
        raise _not_for("bitwise_not_cpu", a.dtype)
    check_runnable(a)
    return fused(M.logical_not if a.dtype is _dtype.bool else I.bitwise_not, [a], a.dtype, compute=a.dtype)


def shift(which, a, b):
    dtype = result_type(a, b)
    if dtype.is_floating_point:
        raise _not_for(f"{which}shift_cpu", dtype)
    if dtype is _dtype.bool:
        raise _not_for(f"{which}shift_cpu", dtype)
    formula = I.left_shift if which == "l" else I.right_shift
    return fused(formula, _operands(a, b, dtype), dtype, compute=dtype)


def _guard_zero(fn, kernel):
    """fmod/remainder: the row's formula, after PyTorch's refusal of bools and its integer
    zero-division check."""
    def op(a, b, *args, **kwargs):
        dtype = result_type(a, b)
        if dtype is _dtype.bool:
            raise _not_for(kernel, dtype)
        if not dtype.is_floating_point:
            refuse_zero_division(b, a)
        return fn(a, b, *args, **kwargs)
    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = fn.__doc__
    return op


# the row's remainder, read before this one takes its names
_ROW_REMAINDER = _guard_zero(registry.FUNCTIONS["remainder"], "remainder_cpu")


@registry.op("remainder")
def remainder(a, b):
    """``tgrad.remainder``: also a number as the dividend (``5 % t``, no derivative, as PyTorch)."""
    if not isinstance(a, Tensor):
        if isinstance(b, Tensor) and b.dtype.is_floating_point or isinstance(a, float):
            dtype = result_type(a, b)
            return _RemainderNode.apply(as_operand(a, b, dtype), b,
                                        lambda x, y: _ROW_REMAINDER(x.detach(), y.detach()))
        return remainder_int(a, b)
    return _ROW_REMAINDER(a, b)


registry.op("fmod")(_guard_zero(registry.FUNCTIONS["fmod"], "fmod_cpu"))
registry.op("fmod_", function=False)(_guard_zero(registry.METHODS["fmod_"], "fmod_cpu"))
for _w in ("and", "or", "xor"):
    registry.op(f"bitwise_{_w}")((lambda w: lambda a, b: bitwise(w, a, b))(_w))


def invert(a):
    """``~a``: Python's operator refuses floats with a TypeError before any kernel."""
    if a.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(a)
registry.op("bitwise_left_shift")(lambda a, b: shift("l", a, b))
registry.op("bitwise_right_shift")(lambda a, b: shift("r", a, b))


def _same_dtype_lerp(fn, inplace):
    """lerp: PyTorch refuses an end of another dtype than the input, and a weight of another unless
    it is 0-d; a 0-d weight takes part in the type promotion (all 0-d int, int, float computes in
    float), or in place is cast to the input's dtype."""
    def op(input, end, weight):  # noqa: A002
        if not isinstance(end, Tensor):
            raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not {type(end).__name__}")
        if end.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_c_name(input.dtype)} for `end` but got dtype {_c_name(end.dtype)}")
        if isinstance(weight, Tensor) and weight.dim() == 0:
            dtype = input.dtype if inplace else result_type(input, end, weight)
            if dtype is not input.dtype:
                input, end = input.to(dtype), end.to(dtype)
            # a bool weight stays bool: the row casts it for the formula and knows its backward raises
            weight = weight.to(dtype) if weight.dtype not in (dtype, _dtype.bool) else weight
        elif isinstance(weight, Tensor) and weight.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {_c_name(input.dtype)} for `weight` but got dtype "
                               f"{_c_name(weight.dtype)}")
        if not input.dtype.is_floating_point:  # before any cast check (PyTorch's weight is no operand)
            kind = "tensor" if isinstance(weight, Tensor) else "scalar"
            raise NotImplementedError(f'"lerp_kernel_{kind}" not implemented for \'{input.dtype.scalar_type}\'')
        return fn(input, end, weight)
    op.__name__ = op.__qualname__ = fn.__name__
    return op


def _c_name(dtype):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "bool": "bool"}.get(dtype.name, dtype.name)


registry.op("lerp")(_same_dtype_lerp(registry.FUNCTIONS["lerp"], inplace=False))
registry.op("lerp_", function=False)(_same_dtype_lerp(registry.METHODS["lerp_"], inplace=True))
