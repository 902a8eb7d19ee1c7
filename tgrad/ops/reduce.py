"""Reductions as autograd Functions over ``kernels.reduce``: sums, means, products, extremes and
their positions, all/any. Backward formulas are written with tgrad ops, so they are differentiable
too. Variances and norms are in ``statistics.py``, the softmax family in ``softmax.py``."""
from __future__ import annotations

import math

from .. import _dtype, return_types
from ..autograd.function import BuiltinFunction, record, requires_grad
from ..modes import is_grad_enabled
from ..tensor import Tensor
from tgrad.kernels.reductions import reduce as K
from .arrange import cumprod, flip_dims
from .call_plans import PLANS, call_key
from .common import check_runnable, wrap
from .factories import ones, zeros_like
from .joins import cat
from .generated import function_class
from .pointwise import Where
from .table import BY_NAME
from .random import arange
from .registry import op


def _where(cond, a, b):
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
    if not keepdim and dims and g.ndim:  # (a full reduction's 0-d gradient expands as it is, as PyTorch's)
        g = g.reshape(_kept_shape(shape, dims))
    return g.expand(*shape)


def _run(x, dims, op, dtype=None, **kw):
    check_runnable(x)
    try:
        return K.reduce(x._data, dims, op, out_dtype=dtype.torch if dtype is not None else None, **kw)
    except ValueError as e:
        raise IndexError(str(e)) if "non-zero size" in str(e) else RuntimeError(str(e))


class Sum(BuiltinFunction):
    node_name = "SumBackward0"
    kernel_op = "sum"

    @staticmethod
    def out_dtype(x, dtype):
        return dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)

    @staticmethod
    def save(ctx, x, dims, keepdim):
        ctx.meta = (x.shape, dims, keepdim)

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        Sum.save(ctx, x, dims, keepdim)
        return _result(_run(x, dims, "sum", Sum.out_dtype(x, dtype)), x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, *ctx.meta), None, None, None


class SumDim(Sum):
    node_name = "SumBackward1"


class Mean(BuiltinFunction):
    node_name = "MeanBackward0"
    kernel_op = "mean"

    @staticmethod
    def out_dtype(x, dtype):
        return dtype or x.dtype

    @staticmethod
    def save(ctx, x, dims, keepdim):
        ctx.meta = (x.shape, dims, keepdim)
        ctx.count = math.prod(x.shape[d] for d in dims)

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        Mean.save(ctx, x, dims, keepdim)
        return _result(_run(x, dims, "mean", Mean.out_dtype(x, dtype)), x, dims, keepdim)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g / ctx.count if ctx.count else g, *ctx.meta), None, None, None


def _apply_planned(cls, x, dims, keepdim, dtype):
    """``cls.apply(x, dims, keepdim, dtype)`` for Sum and Mean, replayed from a call plan once the
    call's signature (``call_plans.call_key`` of ``x``, with the dims, keepdim and dtype) has one."""
    key = call_key(cls, (x,))
    if key is None:
        return cls.apply(x, dims, keepdim, dtype)
    key += (dims, keepdim, dtype)
    plan = PLANS.get(key)
    if plan is not None:
        return plan(x)
    out = cls.apply(x, dims, keepdim, dtype)
    _plan_reduction(cls, key, x, dims, keepdim, dtype)
    return out


def _plan_reduction(cls, key, x, dims, keepdim, dtype):
    """After a call of ``key`` ran the general path: keep its plan once the kernel's launch replays
    (``kernels.reduce.planned``). A recorded call's plan builds the node as ``Function.apply`` does."""
    run = K.planned(x._data, dims, cls.kernel_op, out_dtype=cls.out_dtype(x, dtype).torch)
    if run is None:
        return
    if len(PLANS) > 4096:
        PLANS.clear()
    if not (is_grad_enabled() and requires_grad(x)):
        PLANS[key] = lambda x: _result(run(x._data), x, dims, keepdim)
        return
    node, needs = cls._backward_cls, (True, False, False, False)

    def recorded(x):
        ctx = node()
        ctx.needs_input_grad = needs
        cls.save(ctx, x, dims, keepdim)
        return record(cls, ctx, (x, dims, keepdim, dtype), needs, _result(run(x._data), x, dims, keepdim))
    PLANS[key] = recorded


class MeanDim(Mean):
    node_name = "MeanBackward1"


class Prod(BuiltinFunction):
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
        # d prod / d x_i = product of the others: g (out / x_i) without zeros; with any zero, the
        # products of the entries before and after x_i (PyTorch's prod_safe_zeros_backward, so a
        # zero beside an infinity gives its NaN)
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        ge = _expand_back(g, shape, dims, keepdim)
        if x.ndim == 0:
            return ge, None, None, None
        zeros = int((x == 0).sum().item())
        if zeros == 0:
            return ge * (_expand_back(out, shape, dims, keepdim) / x), None, None, None
        if zeros > 1 and ctx.name() == "ProdBackward0":  # PyTorch's full product: zeros, no products
            return zeros_like(ge), None, None, None
        return ge * _product_of_the_others(x, dims), None, None, None


def _product_of_the_others(x: Tensor, dims) -> Tensor:
    """For each entry, the product of the others along ``dims`` (one dim, or all of them): the
    exclusive cumulative products from the left and from the right, multiplied."""
    flat = x.reshape(-1) if len(dims) != 1 else x
    d = 0 if len(dims) != 1 else dims[0]
    n = flat.shape[d]
    one = ones(tuple(1 if k == d else m for k, m in enumerate(flat.shape)), dtype=x.dtype, device=x.device)
    left = cumprod(cat([one, flat.narrow(d, 0, n - 1)], d), d)
    right = flip_dims(cumprod(cat([one, flip_dims(flat, (d,)).narrow(d, 0, n - 1)], d), d), (d,))
    return (left * right).reshape(tuple(x.shape))


class ProdDim(Prod):
    node_name = "ProdBackward1"


class ReadsResult(BuiltinFunction):
    """A reduction ``op`` over ``dims`` whose backward reads its input and its result."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, op):
        ctx.meta = (x.shape, dims, keepdim)
        out = _result(_run(x, dims, op), x, dims, keepdim)
        ctx.save_for_backward(x, out)
        return out


class Extreme(ReadsResult):
    """max()/min()/amax/amin: the gradient is split evenly between tied extremes."""
    node_name = "AmaxBackward0"

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
    """max()/min() of everything: PyTorch's evenly_distribute_backward, which selects (g / count on
    the extremes, 0 elsewhere) and, for a NaN result, spreads g over the NaNs."""
    node_name = "MaxBackward1"

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = ctx.meta[0]
        o = out.reshape(*([1] * len(shape)))
        hit = (x == o) | (x.isnan() & o.isnan())
        count = sum(hit.to(g.dtype))
        return _where(hit, (g / count).reshape(*([1] * len(shape))), 0.0), None, None, None


class MinAll(MaxAll):
    node_name = "MinBackward1"


class MaxDim(BuiltinFunction):
    """max(dim)/min(dim): values and indices; the gradient goes to the returned index alone."""
    node_name = "MaxBackward0"

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        ctx.meta = (x.shape, dim, keepdim)
        if x.ndim == 0:  # the one element is the extreme, at index 0
            values, indices = _run(wrap(x._data.reshape(1)), (0,), op)
            v, i = wrap(values.reshape(())), wrap(indices.reshape(()))
        else:
            values, indices = _run(x, (dim,), op)
            v, i = _result(values, x, (dim,), keepdim), _result(indices, x, (dim,), keepdim)
        ctx.mark_non_differentiable(i)
        ctx.save_for_backward(i)
        return v, i

    @staticmethod
    def backward(ctx, g, _):
        i, = ctx.saved_tensors
        shape, dim, keepdim = ctx.meta
        if not shape:
            return g, None, None, None
        if not keepdim:
            g, i = g.unsqueeze(dim), i.unsqueeze(dim)
        positions = arange(shape[dim], device=g.device).reshape([-1 if d == dim else 1 for d in range(len(shape))])
        return _where(positions == i, g, 0.0), None, None, None


class MinDim(MaxDim):
    node_name = "MinBackward0"


# PyTorch names the node by the overload: sum()/mean() without a dim argument are SumBackward0 /
# MeanBackward0; any dim argument, even dim=None, selects the dim overload (SumBackward1).
_NO_DIM = object()


@op("sum")
def sum(x, dim=_NO_DIM, keepdim=False, dtype=None):  # noqa: A001
    cls = Sum if dim is _NO_DIM else SumDim
    dims = _dims(x, None if dim is _NO_DIM else dim)
    return _apply_planned(cls, x, dims, keepdim, _dtype.as_dtype(dtype) if dtype is not None else None)


@op("mean")
def mean(x, dim=_NO_DIM, keepdim=False, dtype=None):
    dtype = _dtype.as_dtype(dtype) if dtype is not None else None
    if not (dtype or x.dtype).is_floating_point:  # before the dims are checked, as PyTorch
        which, got = ("Optional", dtype) if dtype is not None else ("Input", x.dtype)
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating point or "
                           f"complex dtype. Got: {got.scalar_type}")
    cls = Mean if dim is _NO_DIM else MeanDim
    dims = _dims(x, None if dim is _NO_DIM else dim)
    return _apply_planned(cls, x, dims, keepdim, dtype)


@op("prod")
def prod(x, dim=None, keepdim=False, dtype=None):
    cls = Prod if dim is None else ProdDim
    return cls.apply(x, _dims(x, dim), keepdim, _dtype.as_dtype(dtype) if dtype is not None else None)


def _extreme(x, dim, keepdim, op, all_cls, dim_cls):
    if dim is None:
        if x.numel() == 0:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                               "reduction dim with the 'dim' argument.")
        return all_cls.apply(x, _dims(x, None), False, "amax" if op == "max" else "amin")
    if isinstance(dim, Tensor):  # max(a, b) spelled tgrad.max(a, other)
        return function_class(BY_NAME["maximum" if op == "max" else "minimum"]).apply(x, dim)
    if not isinstance(dim, int):
        raise TypeError(f"{op}() received an invalid combination of arguments - dim must be an int, got "
                        f"{type(dim).__name__}")
    d = _dims(x, dim)
    pair = getattr(return_types, op)
    return pair(*dim_cls.apply(x, d[0] if d else 0, keepdim, op))


@op("max")
def max(x, dim=None, keepdim=False):  # noqa: A001
    return _extreme(x, dim, keepdim, "max", MaxAll, MaxDim)


@op("min")
def min(x, dim=None, keepdim=False):  # noqa: A001
    return _extreme(x, dim, keepdim, "min", MinAll, MinDim)


def _all_of_empty(x, dim, op):
    if dim in ((), None, []) and x.numel() == 0:  # PyTorch: over everything, a 0-element input has no extreme
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           "reduction dim with the 'dim' argument.")


@op("amax")
def amax(x, dim=(), keepdim=False):
    _all_of_empty(x, dim, "amax")
    return Extreme.apply(x, _dims(x, dim if dim != () else None), keepdim, "amax")


@op("amin")
def amin(x, dim=(), keepdim=False):
    _all_of_empty(x, dim, "amin")
    return Amin.apply(x, _dims(x, dim if dim != () else None), keepdim, "amin")


def _arg(x, dim, keepdim, op):
    check_runnable(x)
    if x.dtype is _dtype.bool:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        if x.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        flat = x.reshape(-1)
        out = wrap(_run(flat, (0,), op))
        return out.reshape([1] * x.ndim) if keepdim else out
    dims = _dims(x, dim)
    if not dims:
        return wrap(_run(x.reshape(1), (0,), op)).reshape(())
    return _result(_run(x, dims, op), x, dims, keepdim)


@op("argmax")
def argmax(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, "argmax")


@op("argmin")
def argmin(x, dim=None, keepdim=False):
    return _arg(x, dim, keepdim, "argmin")


@op("all")
def all(x, dim=None, keepdim=False):  # noqa: A001
    ne0 = (x != 0).to(_dtype.int64)
    return (amin(ne0, dim if dim is not None else (), keepdim) if x.numel() else ne0.sum(dim, keepdim) == 0) != 0


@op("any")
def any(x, dim=None, keepdim=False):  # noqa: A001
    return sum((x != 0).to(_dtype.int64), dim, keepdim) != 0


def _check_tensor(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


@op("aminmax")
def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    _check_tensor("aminmax", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation "
                               "has no identity.")
        lo, hi = amin(input, (), keepdim), amax(input, (), keepdim)
    else:
        lo, hi = amin(input, dim, keepdim), amax(input, dim, keepdim)
    return return_types.aminmax(lo, hi)
