"""Reductions and the softmax family as autograd Functions over ``kernels.reduce`` and
``kernels.softmax``. Backward formulas are written with tgrad ops, so they are differentiable too."""
from __future__ import annotations

import math

from .. import _dtype
from ..autograd.function import Function
from ..tensor import Tensor
from tgrad.kernels import reduce as K
from tgrad.kernels import softmax as KS
from ._common import check_runnable, wrap

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "norm",
           "logsumexp", "softmax", "log_softmax", "var_mean", "std_mean", "all", "any"]


def _where(cond, a, b):
    from .pointwise import Where
    return Where.apply(cond, a, b)


def _dims(x: Tensor, dim):
    if dim is None:
        return tuple(range(x.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if x.ndim == 0:
        for d in dims:
            if d not in (0, -1):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {d})")
        return ()
    out = tuple(x._dim(d) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
    return out if out else tuple(range(x.ndim))


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def _result(data, x, dims, keepdim):
    out = wrap(data)
    if keepdim:
        out._data = data.view(_kept_shape(x.shape, dims))
    return out


def _expand_back(g: Tensor, shape, dims, keepdim) -> Tensor:
    """A reduced gradient broadcast back over the input shape (a stride-0 view, no copy)."""
    if not keepdim and dims:
        g = g.reshape(_kept_shape(shape, dims))
    return g.expand(*shape)


def _run(x, dims, op, dtype=None, **kw):
    check_runnable(x)
    try:
        return K.reduce(x._data, dims, op, out_dtype=dtype.torch if dtype is not None else None, **kw)
    except ValueError as e:
        raise IndexError(str(e)) if "non-zero size" in str(e) else RuntimeError(str(e))


class Sum(Function):
    node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.meta = (x.shape, dims, keepdim)
        out_dtype = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
        return _result(_run(x, dims, "sum", out_dtype), x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, *ctx.meta), None, None, None


class SumDim(Sum):
    node_name = "SumBackward1"


class Mean(Function):
    node_name = "MeanBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        out_dtype = dtype or x.dtype
        if not out_dtype.is_floating_point:
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point "
                               f"or complex dtype. Got: {x.dtype.legacy.replace('Tensor', '')}")
        ctx.meta = (x.shape, dims, keepdim)
        ctx.count = math.prod(x.shape[d] for d in dims)
        return _result(_run(x, dims, "mean", out_dtype), x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g / ctx.count if ctx.count else g, *ctx.meta), None, None, None


class MeanDim(Mean):
    node_name = "MeanBackward1"


class Prod(Function):
    node_name = "ProdBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.meta = (x.shape, dims, keepdim)
        out = _result(_run(x, dims, "prod", dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)),
                      x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        # d prod / d x_i = product of the others: out / x_i, except where x holds zeros
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        is_zero = x == 0
        zeros = sum(is_zero.to(x.dtype), dims, True)
        nonzero_prod = prod(_where(is_zero, 1.0, x), dims, True)
        ge = _expand_back(g, shape, dims, keepdim)
        safe_x = _where(is_zero, 1.0, x)
        no_zero = ge * _expand_back(out, shape, dims, keepdim) / safe_x
        one_zero = ge * nonzero_prod.expand(*shape)
        grad = _where((zeros == 0).expand(*shape), no_zero, _where((zeros == 1).expand(*shape) & is_zero, one_zero, 0.0))
        return grad, None, None, None


class Extreme(Function):
    """max()/min()/amax/amin: the gradient is split evenly between tied extremes."""
    node_name = "AmaxBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, op):
        ctx.meta = (x.shape, dims, keepdim)
        out = _result(_run(x, dims, op), x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        hit = (x == _expand_back(out, shape, dims, keepdim)).to(g.dtype)
        count = sum(hit, dims, True)
        return _expand_back(g, shape, dims, keepdim) * hit / count.expand(*shape), None, None, None


class Amin(Extreme):
    node_name = "AminBackward0"


class MaxAll(Extreme):
    node_name = "MaxBackward1"


class MinAll(Extreme):
    node_name = "MinBackward1"


class MaxDim(Function):
    """max(dim)/min(dim): values and indices; the gradient goes to the returned index alone."""
    node_name = "MaxBackward0"

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        values, indices = _run(x, (dim,), op)
        ctx.meta = (x.shape, dim, keepdim)
        v, i = _result(values, x, (dim,), keepdim), _result(indices, x, (dim,), keepdim)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        return v, i

    @staticmethod
    def backward(ctx, g, _):
        from .random import arange
        i, = ctx.saved_tensors
        shape, dim, keepdim = ctx.meta
        if not keepdim:
            g, i = g.unsqueeze(dim), i.unsqueeze(dim)
        positions = arange(shape[dim], device=g.device).reshape([-1 if d == dim else 1 for d in range(len(shape))])
        return _where(positions == i, g, 0.0), None, None, None


class MinDim(MaxDim):
    node_name = "MinBackward0"


class Var(Function):
    node_name = "VarBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, correction, op):
        ctx.meta = (x.shape, dims, keepdim)
        ctx.divisor = builtins_max(0, math.prod(x.shape[d] for d in dims) - correction)
        out = _result(_run(x, dims, op, correction=correction), x, dims, keepdim)
        ctx.save_for_backward(x, out if op == "std" else None)
        ctx.op = op
        return out

    @staticmethod
    def backward(ctx, g):
        # var: 2 (x - mean) / (N - c);  std = sqrt(var): (x - mean) / ((N - c) std)
        x, std_out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        centered = x - mean(x, dims, True)
        if ctx.op == "var":
            grad = _expand_back(g, shape, dims, keepdim) * centered * (2.0 / ctx.divisor if ctx.divisor else math.inf)
        else:
            grad = _expand_back(g / std_out, shape, dims, keepdim) * centered / ctx.divisor
        return grad, None, None, None, None


class Std(Var):
    node_name = "StdBackward0"


class Norm(Function):
    node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, p):
        ctx.meta, ctx.p = (x.shape, dims, keepdim), p
        op = {1: "norm1", 2: "norm2", math.inf: "norminf"}[p]
        out = _result(_run(x, dims, op), x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        ge = _expand_back(g, shape, dims, keepdim)
        if ctx.p == 1:
            return ge * x.sign(), None, None, None
        n = _expand_back(out, shape, dims, keepdim)
        if ctx.p == 2:  # x / ||x||, 0 where the norm is 0
            return ge * x / _where(n == 0, 1.0, n), None, None, None
        hit = (x.abs() == n).to(g.dtype)
        count = sum(hit, dims, True).expand(*shape)
        return ge * x.sign() * hit / count, None, None, None


class Logsumexp(Function):
    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.meta = (x.shape, dims, keepdim)
        out = _result(_run(x, dims, "logsumexp"), x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        return _expand_back(g, *ctx.meta) * (x - _expand_back(out, shape, dims, keepdim)).exp(), None, None


class Softmax(Function):
    node_name = "SoftmaxBackward0"
    log = False

    @classmethod
    def forward(cls, ctx, x, dim, dtype):
        check_runnable(x)
        if dtype is not None:
            x = x.to(dtype)
        y = wrap(KS.softmax(x._data, dim, log=cls.log))
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        y, = ctx.saved_tensors
        return wrap(KS.softmax_backward(y._data, g._data, ctx.dim, log=cls.log)), None, None


class LogSoftmax(Softmax):
    node_name = "LogSoftmaxBackward0"
    log = True


builtins_max = max
builtins_sum = sum
builtins_any = any
builtins_all = all


def _float_input(x, what):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{what}(): input dtype should be floating point, but got {x.dtype}")


def sum(x, dim=None, keepdim=False, dtype=None):  # noqa: A001
    dims = _dims(x, dim)
    cls = Sum if dim is None else SumDim
    return cls.apply(x, dims, keepdim, _dtype.as_dtype(dtype) if dtype is not None else None)


def mean(x, dim=None, keepdim=False, dtype=None):
    dims = _dims(x, dim)
    cls = Mean if dim is None else MeanDim
    return cls.apply(x, dims, keepdim, _dtype.as_dtype(dtype) if dtype is not None else None)


def prod(x, dim=None, keepdim=False, dtype=None):
    return Prod.apply(x, _dims(x, dim), keepdim, _dtype.as_dtype(dtype) if dtype is not None else None)


def _extreme(x, dim, keepdim, op, all_cls, dim_cls):
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        return all_cls.apply(x, _dims(x, None), False, "amax" if op == "max" else "amin")
    if isinstance(dim, Tensor):  # max(a, b) spelled tgrad.max(a, other)
        from . import maximum, minimum
        return maximum(x, dim) if op == "max" else minimum(x, dim)
    d = _dims(x, dim)
    from .. import return_types
    if not d:  # 0-d input
        v, i = dim_cls.apply(x.reshape(1), 0, False, op)
        return return_types.max(v.reshape(()), i.reshape(()))
    return return_types.max(*dim_cls.apply(x, d[0], keepdim, op)) if op == "max" else \
        return_types.min(*dim_cls.apply(x, d[0], keepdim, op))


def max(x, dim=None, keepdim=False):  # noqa: A001
    return _extreme(x, dim, keepdim, "max", MaxAll, MaxDim)


def min(x, dim=None, keepdim=False):  # noqa: A001
    return _extreme(x, dim, keepdim, "min", MinAll, MinDim)


def amax(x, dim=(), keepdim=False):
    return Extreme.apply(x, _dims(x, dim if dim != () else None), keepdim, "amax")


def amin(x, dim=(), keepdim=False):
    return Amin.apply(x, _dims(x, dim if dim != () else None), keepdim, "amin")


def _arg(x, dim, keepdim, op):
    check_runnable(x)
    if dim is None:
        flat = x.reshape(-1)
        out = wrap(_run(flat, (0,), op))
        return out.reshape([1] * x.ndim) if keepdim else out
    dims = _dims(x, dim)
    if not dims:
        return wrap(_run(x.reshape(1), (0,), op)).reshape(())
    return _result(_run(x, dims, op), x, dims, keepdim)


def argmax(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, "argmax")


def argmin(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, "argmin")


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(unbiased, (tuple, list)) or (isinstance(dim, bool)):
        raise TypeError("var(): pass dims as dim=, unbiased/correction as keywords")
    _float_input(x, "var")
    return Var.apply(x, _dims(x, dim), keepdim, _correction(unbiased, correction), "var")


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    _float_input(x, "std")
    return Std.apply(x, _dims(x, dim), keepdim, _correction(unbiased, correction), "std")


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    if p in ("fro", None):
        p = 2
    if p in ("inf",):
        p = math.inf
    if p not in (1, 2, math.inf):
        raise NotImplementedError(f"tgrad.norm supports p = 1, 2, inf and 'fro', got {p!r}")
    _float_input(x, "linalg.vector_norm")
    return Norm.apply(x, _dims(x, dim), keepdim, p)


def logsumexp(x, dim, keepdim=False):
    return Logsumexp.apply(x if x.dtype.is_floating_point else x.float(), _dims(x, dim), keepdim)


def _softmax_dim(x, dim):
    if dim is None:
        raise TypeError("softmax() missing required argument 'dim' (tgrad, like PyTorch 2, needs it explicitly)")
    return x._dim(dim) if x.ndim else 0


def softmax(x, dim=None, dtype=None):
    d = _softmax_dim(x, dim)
    if x.ndim == 0:
        return Softmax.apply(x.reshape(1), 0, dtype).reshape(())
    return Softmax.apply(x, d, _dtype.as_dtype(dtype) if dtype is not None else None)


def log_softmax(x, dim=None, dtype=None):
    d = _softmax_dim(x, dim)
    if x.ndim == 0:
        return LogSoftmax.apply(x.reshape(1), 0, dtype).reshape(())
    return LogSoftmax.apply(x, d, _dtype.as_dtype(dtype) if dtype is not None else None)


def all(x, dim=None, keepdim=False):  # noqa: A001
    ne0 = (x != 0).to(_dtype.int64)
    return (amin(ne0, dim if dim is not None else (), keepdim) if x.numel() else ne0.sum(dim, keepdim) == 0) != 0


def any(x, dim=None, keepdim=False):  # noqa: A001
    return sum((x != 0).to(_dtype.int64), dim, keepdim) != 0
