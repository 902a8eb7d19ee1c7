"""Gather and scatter along a dim, index_select, and masks, over the index plans of
``advanced.py`` (one ``kernels.index.index_op`` launch each).

Gradients (g is the upstream gradient):
  y = gather(x, d, i)        dx = zeros(x) with g added at i (duplicates accumulate)
  y = masked_fill(x, m, c)   dx = where(m, 0, g) (summed to x's shape), dc = sum(where(m, g, 0))
"""
from __future__ import annotations

import warnings

import triton
import triton.language as tl

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.indexing import index as KI
from tgrad.kernels import elementwise as M
from .advanced import Index, _AlongDim, _Plan, _run
from .common import as_operand, broadcast_shapes, check_runnable, wrap
from .formula import fused
from .inplace import write_inplace
from .pointwise import Where
from .views import overlaps, scatter_slice_into_zeros
from .registry import op


@triton.jit
def _masked_fill_formula(x, mask, value, p):  # masked_fill_ in place: x <- mask ? value : x
    return tl.where(mask, value, x)


# ----------------------------------------------------------------------------- plans


# ----------------------------------------------------------------------------- index_select, gather, scatter_add

class IndexSelect(Index):
    node_name = "IndexSelectBackward0"


def _int_index(index, x, what):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(what)
    return index._data if index.device == x.device else index._data.to(x.device)


@op("index_select")
def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """x's slices ``index[j]`` along ``dim``: y.select(dim, j) = x.select(dim, index[j])."""
    idx = _int_index(index, x, "index_select(): Expected dtype int32 or int64 for index")
    if idx.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = x._dim(dim)
    size, n = (x.shape[d] if x.ndim else 1), idx.numel()
    if x.ndim == 0 and n != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
    # PyTorch's CPU kernel checks the indices on one of three paths, each with its exception type:
    # an empty x of 2+ dims and its dim 1 (a fast path) raise RuntimeError, the rest IndexError
    if x.ndim > 1 and n and x.numel() == 0 and size == 0:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    bad = KI.first_out_of_bounds(idx, size, allow_negative=False) if x.ndim <= 1 or n else None
    if bad is not None and x.ndim > 1 and (x.numel() == 0 or d == 1):
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={size} (dimension {d})")
    if bad is not None:  # PyTorch's text, then the offending value
        raise IndexError(f"index out of range in self (index {bad} for dimension {d} with size {size})")
    view = (lambda t: t.reshape(1)) if x.ndim == 0 else (lambda t: t)
    plan = _Plan(view, [d], [idx.reshape(1) if idx.dim() == 0 else idx], False, x._data)
    if x.ndim == 0:
        return IndexSelect.apply(x, plan).reshape(())
    return IndexSelect.apply(x, plan)


class Gather(Index):
    """PyTorch's gather saves its input (its backward reads the input's size from it), so an
    in-place change to the input after the gather makes backward raise, as there."""
    node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, plan):
        ctx.save_for_backward(x)
        return Index.forward(ctx, x, plan)

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors  # noqa: B018 - unpacked for its version check
        return Index.backward(ctx, g)


def _along_dim_checks(x, dim, index, name, src=None):
    idx = _int_index(index, x, f"{name}(): Expected dtype int32/int64 for index")
    if idx.dim() != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    d = x._dim(dim)
    for i in range(idx.dim()):
        if (i != d and idx.shape[i] > x.shape[i]) or (src is not None and idx.shape[i] > src.shape[i]):
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(x.shape)} apart from dimension {d}")
    size = x.shape[d] if x.ndim else 1
    bad = KI.first_out_of_bounds(idx, size, allow_negative=False)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    return _AlongDim(d, idx)


@op("gather")
def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """y[r] = x[r with coordinate ``dim`` replaced by index[r]]; y has index's shape."""
    return Gather.apply(x, _along_dim_checks(x, dim, index, "gather"))


class ScatterAdd(BuiltinFunction):
    node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, x, src, plan):
        check_runnable(x, src)
        ctx.plan, ctx.src_shape = plan, src.shape
        out = fused(M.identity, [x], x.dtype, compute=x.dtype)
        _run("add", plan, out._data, src._data[tuple(slice(0, s) for s in plan.shape)])
        return out

    @staticmethod
    def backward(ctx, g):
        gs = None
        if ctx.needs_input_grad[1]:
            gs = Gather.apply(g, ctx.plan)
            if tuple(gs.shape) != tuple(ctx.src_shape):  # src elements past index's extent get none
                gs = scatter_slice_into_zeros(gs, ctx.src_shape, tuple(slice(0, s) for s in gs.shape))
        return g, gs, None


@op("scatter_add")
def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """x + the sum of src[r] over the positions r whose index (along ``dim``) lands on each element."""
    if src.dtype is not x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if src.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if x.dtype is _dtype.bool:  # a bool sum saturates: counted in int32, then any
        return scatter_add(x.to(_dtype.int32), dim, index, src.to(_dtype.int32)) != 0
    return ScatterAdd.apply(x, src, _along_dim_checks(x, dim, index, "scatter_add", src))


# ----------------------------------------------------------------------------- masks

def _mask_value(x, mask, value, name="masked_fill_"):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        got = mask.dtype.type_name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {got}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{name} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        return value if value.dtype is x.dtype else value.to(x.dtype)
    return as_operand(value, x, x.dtype)


class MaskedFill(BuiltinFunction):
    node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        check_runnable(x, mask, value)
        ctx.save_for_backward(mask)
        return fused(M.where, [mask, value, x], x.dtype)

    @staticmethod
    def backward(ctx, g):
        mask, = ctx.saved_tensors  # the engine sums both back to x's and value's shapes
        return (Where.apply(mask, 0.0, g) if ctx.needs_input_grad[0] else None, None,
                Where.apply(mask, g, 0.0) if ctx.needs_input_grad[2] else None)


@op("masked_fill")
def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """where(mask, value, x), broadcasting x and mask; value is a number or a 0-d tensor."""
    return MaskedFill.apply(x, mask, _mask_value(x, mask, value))


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    value = _mask_value(x, mask, value)
    if overlaps(x.shape, x.stride()):  # PyTorch writes it, and warns
        warnings.warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
                      "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar",
                      UserWarning, stacklevel=2)
    return write_inplace(x, MaskedFill.apply, mask, value, formula=_masked_fill_formula, fill=True)


class MaskedSelect(Index):
    node_name = "MaskedSelectBackward0"


@op("masked_select")
def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The elements of x (broadcast with mask) where mask is True, as a 1-d tensor in row-major order."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = tuple(broadcast_shapes(x.shape, mask.shape)) or (1,)
    coords = KI.nonzero(mask._data.expand(shape) if mask.ndim else mask._data.reshape(1).expand(shape))
    view = lambda t: (t if t.dim() else t.reshape(1)).expand(shape)  # noqa: E731
    plan = _Plan(view, range(len(shape)), [coords[:, j] for j in range(len(shape))], tuple(x.shape) == shape,
                 x._data)
    return MaskedSelect.apply(x, plan)


@op("nonzero")
def nonzero(x: Tensor, *, as_tuple=False):
    """Row-major coordinates of x's nonzero elements: (count, x.dim()) int64, or one 1-d tensor per dim."""
    if as_tuple:
        coords = KI.nonzero(x._data.reshape(1) if x.ndim == 0 else x._data)
        return tuple(wrap(coords[:, j]) for j in range(coords.shape[1]))
    return wrap(KI.nonzero(x._data))
