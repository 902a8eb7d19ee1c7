"""The public elementwise functions written by hand: those whose arguments need more than a table
row says (``alpha``, ``rounding_mode``, ``decimals``, ``approximate``, tensor-or-number bounds and
exponents), the comparisons and logical ops, and ``where``. Each is registered as ``tgrad.<name>``
and as a method; the Functions they call are table rows or ``pointwise.py``'s classes."""
from __future__ import annotations

import math
import numbers

import torch

from .. import _dtype
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from . import integer
from . import pointwise as P
from .call_plans import PLANS, call_key, plan_compare
from .common import as_operand, check_runnable, legacy_scalar_first, result_type
from .formula import fused
from .generated import function_class
from .inplace import in_place
from . import registry
from .registry import op
from .table import BY_NAME

_Round, _Gelu, _GeluTanh = (function_class(BY_NAME[n]) for n in ("round", "gelu", "gelu_tanh"))
_Clamp, _PowScalar = function_class(BY_NAME["clamp"]), function_class(BY_NAME["pow_scalar"])
_PowBoolExponent = function_class(BY_NAME["pow_bool_exponent"])
_Polygamma = function_class(BY_NAME["polygamma"])
_Pow, _PowNumberBase = function_class(BY_NAME["pow"]), function_class(BY_NAME["pow"], "PowBackward2")
_Add, _Sub, _Mul, _Div, _Maximum, _Minimum = (function_class(BY_NAME[n]) for n in ("add", "sub", "mul", "div",
                                                                                  "maximum", "minimum"))


@op("round")
def round(x, decimals=None):  # noqa: A001
    # PyTorch's round.decimals overload (any decimals given, 0 too) has no integer kernel; plain
    # round of an integer is a copy
    if not x.dtype.is_floating_point and (decimals is not None or x.dtype is _dtype.bool):
        kernel = "round_cpu" if decimals else "round_vml_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type}\'')
    if decimals:
        scale = 10.0 ** decimals
        return _Round.apply(x * scale) / scale
    return _Round.apply(x)


@op("gelu")
def gelu(x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    if isinstance(x, Tensor) and not x.dtype.is_floating_point:  # PyTorch has no integer kernel
        raise NotImplementedError(f'"GeluKernelImpl" not implemented for \'{x.dtype.scalar_type}\'')
    return _Gelu.apply(x) if approximate == "none" else _GeluTanh.apply(x)


@op("polygamma", method=False)
def polygamma(n, input):  # noqa: A002
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _Polygamma.apply(input, n)


op("polygamma", function=False)(lambda self, n: polygamma(n, self))
in_place("polygamma_", lambda self, n: polygamma(n, self), function=False)


@op("clamp", "clip")
def clamp(x, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(x, *(b for b in (min, max) if b is not None))
    if dtype is _dtype.bool:
        check_bool_clamp(min, max)
    if isinstance(min, Tensor) or isinstance(max, Tensor) or dtype is not x.dtype or not dtype.is_floating_point:
        # the scalar kernel takes +-inf for an absent bound, which integers cannot hold
        return P.ClampTensor.apply(x, min, max)
    lo, hi = -math.inf if min is None else min, math.inf if max is None else max
    if x.dtype in (_dtype.float16, _dtype.bfloat16):
        # PyTorch's ClampBackward1 compares x with the bounds in x's dtype (x == fp16(0.7) > 0.7
        # passes the gradient); the forward is the same either way once rounded to x's dtype
        lo, hi = torch.tensor([float(lo), float(hi)], dtype=torch.float64).to(x.dtype.torch).tolist()
    return _Clamp.apply(x, lo, hi)


def check_bool_clamp(min, max):  # noqa: A002
    """PyTorch clamps bools only by one tensor bound: a number bound, or two, have no bool kernel."""
    kernel = "clamp_cpu" if min is not None and max is not None else None
    if any(b is not None and not isinstance(b, Tensor) for b in (min, max)):
        kernel = "clamp_scalar_cpu" if kernel else "clamp_min_scalar_cpu" if max is None else "clamp_max_scalar_cpu"
    if kernel:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _one_bound(fn, which):
    """clamp_min/clamp_max (function, method, in place) with the bool refusals of clamp."""
    def op(x, bound):
        if isinstance(x, Tensor) and result_type(x, bound) is _dtype.bool:
            check_bool_clamp(bound if which == "min" else None, bound if which == "max" else None)
        return fn(x, bound)
    op.__name__ = op.__qualname__ = fn.__name__
    return op


def _check_alpha(a, b, alpha):
    if isinstance(alpha, float) and not result_type(a, b).is_floating_point:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _check_bool_sub(a, b):
    is_bool = [isinstance(x, Tensor) and x.dtype is _dtype.bool or isinstance(x, bool) for x in (a, b)]
    if all(is_bool):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if any(is_bool):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")


@op("add")
def add(a, b, alpha=1):
    if isinstance(alpha, Tensor):  # the deprecated add(input, alpha, other)
        (b,), alpha = legacy_scalar_first("add", "Tensor input, Number alpha, Tensor other",
                                          "Tensor input, Tensor other, *, Number alpha = 1", b, (alpha,))
    _check_alpha(a, b, alpha)
    return _Add.apply(a, b, alpha) if alpha != 1 else _Add.apply(a, b)


@op("sub", "subtract")
def sub(a, b, alpha=1):
    if isinstance(alpha, Tensor):  # the deprecated sub(input, alpha, other)
        (b,), alpha = legacy_scalar_first("sub", "Tensor input, Number alpha, Tensor other",
                                          "Tensor input, Tensor other, *, Number alpha = 1", b, (alpha,))
    _check_alpha(a, b, alpha)
    _check_bool_sub(a, b)
    return _Sub.apply(a, b, alpha) if alpha != 1 else _Sub.apply(a, b)


@op("rsub", method=False)
def rsub(a, b):
    _check_bool_sub(a, b)
    return P.Rsub.apply(a, b)


@op("mul", "multiply")
def mul(a, b):
    return _Mul.apply(a, b)


@op("div", "divide", "true_divide")
def div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return _Div.apply(a, b)
    return integer.rounded_div(a, b, rounding_mode)


@op("pow")
def pow(a, b):  # noqa: A001
    if result_type(a, b) is _dtype.bool:  # bools: only a Python bool exponent (PyTorch has no bool pow kernel)
        if not (isinstance(a, Tensor) and isinstance(b, bool)):
            raise NotImplementedError('"pow" not implemented for \'Bool\'')
        return integer.pow_int(a, int(b), _dtype.int64).to(_dtype.bool)
    if isinstance(a, Tensor) and isinstance(b, bool) and a.dtype.is_floating_point:
        return _PowBoolExponent.apply(a, float(b))
    if isinstance(a, Tensor) and isinstance(b, numbers.Number) and not isinstance(b, bool):
        dtype = result_type(a, b)
        if not dtype.is_floating_point:
            if b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return integer.pow_int(a, b, dtype)
        return _PowScalar.apply(a, b)
    dtype = result_type(a, b)
    if not dtype.is_floating_point:  # an integer result, by squaring: exact, never differentiable
        ref = a if isinstance(a, Tensor) else b
        ta, tb = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
        check_runnable(ta, tb)
        return P.int_pow(ta, tb, dtype)
    return (_Pow if isinstance(a, Tensor) else _PowNumberBase).apply(a, b)


def tensors_only(name, a, b):
    """PyTorch's TypeError for a number where its signature takes only tensors (``maximum(x, 2)``)."""
    for i, (arg, t) in enumerate((("input", a), ("other", b))):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {i + 1}) must be Tensor, not {type(t).__name__}")


@op("maximum")
def maximum(a, b):
    tensors_only("maximum", a, b)
    return _Maximum.apply(a, b)


@op("minimum")
def minimum(a, b):
    tensors_only("minimum", a, b)
    return _Minimum.apply(a, b)


@op("where", method=False)
def where(condition, input=None, other=None):  # noqa: A002
    if input is None and other is None:  # where(condition): nonzero(condition, as_tuple=True)
        return registry.FUNCTIONS["nonzero"](condition, as_tuple=True)
    return P.Where.apply(condition, input, other)


def compare(formula, a, b, compute=None):
    """Comparisons and logical ops: bool results, never differentiable. ``compute``: the dtype the
    operands are compared in (default: their result type)."""
    key = call_key(formula, (a, b))  # a repeated signature replays its plan (call_plans.py)
    if key is not None:
        key += (compute,)
        plan = PLANS.get(key)
        if plan is not None:
            return plan((a, b))
    dtype = compute or result_type(a, b)
    ref = a if isinstance(a, Tensor) else b
    ta, tb = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
    check_runnable(ta, tb)
    out = fused(formula, [ta, tb], _dtype.bool, compute=dtype)
    if key is not None:
        plan_compare(key, formula, (a, b), (ta, tb), dtype)
    return out


def _comparison(formula, name=None):
    if name is not None:  # the logical ops take tensors only
        return lambda a, b: (tensors_only(name, a, b), compare(formula, a, b))[1]
    return lambda a, b: compare(formula, a, b)


def _test(formula):
    return lambda x: fused(formula, [x], _dtype.bool, compute=x.dtype)


@op("clone")
def clone(x, memory_format=None):
    return P.Clone.apply(x, str(memory_format).endswith("contiguous_format"))


def _square_of_bools(fn, inplace):
    """square is pow(x, 2): a bool squares to int64, which a bool tensor cannot hold in place."""
    def op(x):
        if isinstance(x, Tensor) and x.dtype is _dtype.bool:
            if inplace:
                raise RuntimeError("result type Long can't be cast to the desired output type Bool")
            x = x.to(_dtype.int64)
        return fn(x)
    op.__name__ = op.__qualname__ = fn.__name__
    return op


op("square")(_square_of_bools(registry.FUNCTIONS["square"], False))
op("square_", function="square_" in registry.FUNCTIONS)(
    _square_of_bools(registry.METHODS["square_"], True))
for _which in ("min", "max"):
    op(f"clamp_{_which}")(_one_bound(registry.FUNCTIONS[f"clamp_{_which}"], _which))
    op(f"clamp_{_which}_", function=False)(_one_bound(registry.METHODS[f"clamp_{_which}_"], _which))
for _names, _formula in ((("eq",), M.eq), (("ne",), M.ne), (("lt", "less"), M.lt), (("le", "less_equal"), M.le),
                         (("gt", "greater"), M.gt), (("ge", "greater_equal"), M.ge),
                         (("logical_and",), M.logical_and), (("logical_or",), M.logical_or),
                         (("logical_xor",), M.logical_xor)):
    op(*_names)(_comparison(_formula, _names[0] if _names[0].startswith("logical") else None))
for _name, _formula in (("logical_not", M.logical_not), ("isnan", M.isnan), ("isinf", M.isinf),
                        ("isfinite", M.isfinite)):
    op(_name)(_test(_formula))
