"""tgrad's ops: functions (``tgrad.exp(x)``) and the matching Tensor methods and operators."""
from __future__ import annotations

import math
import numbers

from .. import _dtype
from ..tensor import Tensor
from tgrad.kernels import math_ops as M
from . import pointwise as P
from .factories import (DoubleTensor, FloatTensor, LongTensor, as_tensor, empty, empty_like,  # noqa: F401
                        from_dlpack, from_numpy, from_torch, full, full_like, ones, ones_like, tensor, zeros,
                        zeros_like)
from .pointwise import compare, inplace
from ._common import result_type, sum_to_shape  # noqa: F401

# ----------------------------------------------------------------------------- pointwise functions


def _unary(fn_cls, *params):
    return lambda x: fn_cls.apply(x, params) if params else fn_cls.apply(x)


neg = negative = lambda x: P.Neg.apply(x)
abs = lambda x: P.Abs.apply(x)  # noqa: A001
exp = lambda x: P.Exp.apply(x)
log = lambda x: P.Log.apply(x)
sqrt = lambda x: P.Sqrt.apply(x)
rsqrt = lambda x: P.Rsqrt.apply(x)
reciprocal = lambda x: P.Reciprocal.apply(x)
sin = lambda x: P.Sin.apply(x)
cos = lambda x: P.Cos.apply(x)
tanh = lambda x: P.Tanh.apply(x)
sigmoid = lambda x: P.Sigmoid.apply(x)
relu = lambda x: P.Relu.apply(x)
sign = lambda x: P.Sign.apply(x)


def _rounding(name, fn_cls):
    def op(x):
        if isinstance(x, Tensor) and not x.dtype.is_floating_point:
            if x.dtype is _dtype.bool:  # torch's type and text
                raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')
            return P.Clone.apply(x)  # an integer is its own floor and ceil (a copy, as torch)
        return fn_cls.apply(x)
    return op


floor = _rounding("floor", P.Floor)
ceil = _rounding("ceil", P.Ceil)
silu = lambda x: P.Silu.apply(x)


def round(x, decimals=0):  # noqa: A001
    if decimals:
        scale = 10.0 ** decimals
        return P.Round.apply(x * scale) / scale
    return P.Round.apply(x)


def gelu(x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return P.Gelu.apply(x) if approximate == "none" else P.GeluTanh.apply(x)


def softplus(x, beta=1.0, threshold=20.0):
    return P.Softplus.apply(x, (beta, threshold))


def leaky_relu(x, negative_slope=0.01):
    return P.LeakyRelu.apply(x, (negative_slope,))


def elu(x, alpha=1.0):
    return P.Elu.apply(x, (alpha,))


def clamp(x, min=None, max=None):  # noqa: A002
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(x, *(b for b in (min, max) if b is not None))
    if isinstance(min, Tensor) or isinstance(max, Tensor) or dtype is not x.dtype or not dtype.is_floating_point:
        # the scalar kernel takes +-inf for an absent bound, which integers cannot hold
        return P.ClampTensor.apply(x, min, max)
    return P.Clamp.apply(x, (-math.inf if min is None else min, math.inf if max is None else max))


clip = clamp


def add(a, b, alpha=1):
    return P.Add.apply(a, b, alpha) if alpha != 1 else P.Add.apply(a, b)


def sub(a, b, alpha=1):
    return P.Sub.apply(a, b, alpha) if alpha != 1 else P.Sub.apply(a, b)


subtract = sub


def rsub(a, b):
    return P.Rsub.apply(a, b)


def mul(a, b):
    return P.Mul.apply(a, b)


multiply = mul


def div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return P.Div.apply(a, b)
    q = P.Div.apply(a, b)
    out = P.Floor.apply(q) if rounding_mode == "floor" else P.Sign.apply(q) * P.Floor.apply(P.Abs.apply(q))
    if isinstance(a, Tensor) and not a.dtype.is_floating_point and not (isinstance(b, Tensor) and b.dtype.is_floating_point) \
            and not isinstance(b, float):
        out = out.to(result_type(a, b))
    return out


divide = true_divide = div


def pow(a, b):  # noqa: A001
    if isinstance(a, Tensor) and isinstance(b, numbers.Number) and not isinstance(b, bool):
        dtype = result_type(a, b)
        if not dtype.is_floating_point:
            if b < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            a = a.to(dtype) if a.dtype is _dtype.bool else a
            return P.map_(M.pow_scalar, [a], dtype, (b, 1.0), compute=_dtype.float64)
        return P.PowScalar.apply(a, (b,))
    if not isinstance(a, Tensor):
        return P.PowScalarBase.apply(b, a)
    return P.Pow.apply(a, b)


def maximum(a, b):
    return P.Maximum.apply(a, b)


def minimum(a, b):
    return P.Minimum.apply(a, b)


def where(condition, input=None, other=None):  # noqa: A002
    return P.Where.apply(condition, input, other)


eq = lambda a, b: compare(M.eq, a, b)
ne = lambda a, b: compare(M.ne, a, b)
lt = less = lambda a, b: compare(M.lt, a, b)
le = less_equal = lambda a, b: compare(M.le, a, b)
gt = greater = lambda a, b: compare(M.gt, a, b)
ge = greater_equal = lambda a, b: compare(M.ge, a, b)
logical_and = lambda a, b: compare(M.logical_and, a, b)
logical_or = lambda a, b: compare(M.logical_or, a, b)
logical_xor = lambda a, b: compare(M.logical_xor, a, b)


def logical_not(x):
    return P.map_(M.logical_not, [x], _dtype.bool, compute=x.dtype)


def isnan(x):
    return P.map_(M.isnan, [x], _dtype.bool, compute=x.dtype)


def isinf(x):
    return P.map_(M.isinf, [x], _dtype.bool, compute=x.dtype)


def isfinite(x):
    return P.map_(M.isfinite, [x], _dtype.bool, compute=x.dtype)


def clone(x):
    return P.Clone.apply(x)


def _bitwise(formula, a, b):
    for t in (a, b):
        if isinstance(t, Tensor) and t.dtype is not _dtype.bool:
            raise TypeError("tgrad supports &, |, ^ and ~ on bool tensors only")
    return compare(formula, a, b)


from .reduce import *  # noqa: E402,F401,F403
from .matmul import *  # noqa: E402,F401,F403
from .shape import *  # noqa: E402,F401,F403
from .advanced import *  # noqa: E402,F401,F403
from .random import manual_seed, seed, initial_seed, rand, randn, randint, rand_like, randn_like, randint_like, \
    randperm, normal, arange, linspace, eye, default_generator  # noqa: E402,F401
from .triangular import tril, triu  # noqa: E402,F401  (issue 14; to fold into the op table)
from .multinomial import multinomial  # noqa: E402,F401  (issue 14)
from . import methods  # noqa: E402,F401  (attaches the Tensor methods)
