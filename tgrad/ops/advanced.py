"""Advanced indexing (integer tensors, boolean masks), gather/scatter along a dim, and sorting.

An index is first resolved into a ``_Plan``: the basic part (ints, slices, None, ...) becomes a
view of x's storage, boolean masks become their ``nonzero`` coordinates, and the index tensors
name the view dims they replace. Adjacent index tensors put their broadcast shape where they stand;
separated ones put it first (PyTorch's rule). Every op here then runs ``kernels.index.index_op``
over that plan: gather (``x[idx]``), put (``x[idx] = v``) or add (the gradient of a gather).

Gradients (g is the upstream gradient):
  y = x[idx]            dx = zeros(x) with g added at idx (duplicates accumulate)
  x[idx] = v (y)        dx = g with the written positions zeroed, dv = g[idx] (summed to v by the engine)
  y = masked_fill(x, m, c)   dx = where(m, 0, g) (summed to x's shape), dc = sum(where(m, g, 0))
  y, i = sort(x)        dx = zeros(x) with g put back at i (a permutation: no accumulation)
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch
import triton
import triton.language as tl

from .. import _dtype, return_types
from ..autograd.function import BuiltinFunction
from ..modes import is_grad_enabled
from ..tensor import Tensor, check_inplace
from tgrad.kernels.indexing import index as KI
from tgrad.kernels import elementwise as M
from tgrad.kernels.reductions import sort as KS
from .factories import tensor
from .common import as_operand, broadcast_shapes, check_runnable, wrap
from .formula import fused
from .inplace import write_inplace
from .pointwise import Where
from .views import normalize_basic, rebase_history, scatter_slice_into_zeros

__all__ = ["index_select", "gather", "scatter_add", "masked_fill", "masked_select", "nonzero", "sort", "argsort"]

sort_result = return_types._structseq("sort")


@triton.jit
def _masked_fill_formula(x, mask, value, p):  # masked_fill_ in place: x <- mask ? value : x
    return tl.where(mask, value, x)


# ----------------------------------------------------------------------------- plans

class _Plan:
    """Where each element of an advanced-indexing result lives in x.

    ``view(t)`` applies the basic part of the index to a torch tensor shaped like x; index tensor
    k (int32/int64, any strides) then addresses dim ``dims[k]`` of that view. ``unique`` promises
    no position is addressed twice (a single mask), so gradients can be put instead of added.
    ``shape`` is the result's shape for an x shaped like ``like``."""

    def __init__(self, view, dims, indices, unique, like: torch.Tensor):
        self.view, self.dims, self.indices, self.unique = view, list(dims), list(indices), unique
        self.bshape = tuple(broadcast_shapes(*(tuple(i.shape) for i in indices)))
        self.shape = self.geometry(view(like))[0]

    def geometry(self, v: torch.Tensor):
        """(result shape, x strides, index strides, sizes, dim strides) over the result, for view v."""
        rest = [d for d in range(v.dim()) if d not in self.dims]
        adjacent = self.dims == list(range(self.dims[0], self.dims[0] + len(self.dims)))
        front = self.dims[0] if adjacent else 0
        nb, tail = len(self.bshape), len(rest) - front
        shape = [v.shape[d] for d in rest[:front]] + list(self.bshape) + [v.shape[d] for d in rest[front:]]
        x_strides = [v.stride(d) for d in rest[:front]] + [0] * nb + [v.stride(d) for d in rest[front:]]
        idx_strides = [(0,) * front + tuple(i.expand(self.bshape).stride()) + (0,) * tail for i in self.indices]
        return (tuple(shape), x_strides, idx_strides, [v.shape[d] for d in self.dims],
                [v.stride(d) for d in self.dims])


class _AlongDim(_Plan):
    """gather/scatter along ``dim``: result element r reads x at r with coordinate ``dim``
    replaced by index[r] (index has x's number of dims; 0-d tensors act as shape (1,))."""

    def __init__(self, dim, index: torch.Tensor, unique=False):
        self.dim, self.unique, self.shape = dim, unique, tuple(index.shape)
        self.indices = [index.reshape(1) if index.dim() == 0 else index]

    def view(self, t):
        return t.reshape(1) if t.dim() == 0 else t

    def geometry(self, v):
        index, d = self.indices[0], self.dim
        x_strides = [0 if i == d else s for i, s in enumerate(v.stride())]
        return tuple(index.shape), x_strides, [index.stride()], [v.shape[d]], [v.stride(d)]


def _run(mode, plan, target: torch.Tensor, other: torch.Tensor = None) -> torch.Tensor:
    """index_op over ``plan`` applied to ``target``; ``other`` (broadcast over the result) defaults
    to a fresh tensor for gather to fill. Returns ``other``."""
    v = plan.view(target)
    shape, x_strides, idx_strides, sizes, dim_strides = plan.geometry(v)
    if other is None:
        other = torch.empty(shape, dtype=target.dtype, device=target.device)
    KI.index_op(mode, v, other, plan.indices, shape, x_strides, other.expand(shape).stride(), idx_strides, sizes,
                dim_strides)
    return other


def _gather(plan, data: torch.Tensor) -> Tensor:
    return wrap(_run("gather", plan, data).view(plan.shape))


def _scatter_into_zeros(plan, g: Tensor, shape) -> Tensor:
    """zeros(shape) with g put (unique plans) or added (fp32 accumulation for fp16/bf16) at the plan."""
    low = g._data.dtype in (torch.float16, torch.bfloat16) and not plan.unique
    z = torch.zeros(tuple(shape), dtype=torch.float32 if low else g._data.dtype, device=g.device)
    _run("put" if plan.unique else "add", plan, z, g._data)
    return fused(M.identity, [wrap(z)], g.dtype, compute=g.dtype) if low else wrap(z)


def _put(plan, data: torch.Tensor, value: torch.Tensor):
    if value.untyped_storage().data_ptr() == data.untyped_storage().data_ptr():
        value = value.clone()  # a value aliasing the destination would be read while written
    _run("put", plan, data, value)


# ----------------------------------------------------------------------------- resolving an index

def _index_tensor(item, device):
    """(torch tensor, host values or None) for a tensor/list/array index item."""
    if isinstance(item, Tensor):
        t = item._data
        return (t if t.device == device else t.to(device)), None
    t = torch.as_tensor(np.asarray(item)) if isinstance(item, np.ndarray) else torch.tensor(item)
    if t.numel() == 0 and t.dtype.is_floating_point:
        t = t.to(torch.int64)  # x[[]] selects nothing
    host = t.reshape(-1).tolist() if t.dtype in (torch.int64, torch.int32) else None
    return t.to(device), host


def _resolve(x: Tensor, items):
    """(plan, None) for an index with tensor/list/mask parts, else (None, the index as basic items)."""
    basic, adv = [], []  # adv: (position in basic, kind, tensor, host values)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            basic.append(item)
            continue
        if isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            basic.append(int(item))
            continue
        if isinstance(item, (bool, np.bool_)):
            item = np.array(bool(item))
        if not isinstance(item, (Tensor, list, tuple, np.ndarray)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(item).__name__})")
        t, host = _index_tensor(item, x.device)
        if t.dtype in (torch.bool, torch.uint8):
            if t.dtype is torch.uint8:
                warnings.warn("indexing with dtype tgrad.uint8 is now deprecated, please use a dtype tgrad.bool "
                              "instead.", UserWarning, stacklevel=4)
            adv.append((len(basic), "mask", t, None))
            basic.extend([None] if t.dim() == 0 else [slice(None)] * t.dim())
        elif t.dtype in (torch.int64, torch.int32):
            if t.dim() == 0:
                basic.append(int(t.item()))  # a 0-d integer tensor indexes like an int
                continue
            adv.append((len(basic), "int", t, host))
            basic.append(slice(None))
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if not adv:
        return None, tuple(basic)
    norm = normalize_basic(x, tuple(basic))
    n_real = sum(1 for i in norm if i is not None and i is not Ellipsis)
    view_dim, x_dim, d, xd = [], [], 0, 0
    for i in norm:  # the view dim and the dim of x each basic entry lands on
        view_dim.append(d)
        x_dim.append(xd)
        d += x.ndim - n_real if i is Ellipsis else 0 if isinstance(i, int) else 1
        xd += x.ndim - n_real if i is Ellipsis else 0 if i is None else 1
    v = x._data[norm]
    dims, indices, checks = [], [], []
    for pos, kind, t, host in adv:
        d = view_dim[pos]
        if kind == "int":
            checks.append((x_dim[pos], t, host, v.shape[d]))  # x's dim, where PyTorch says the index's position
            dims.append(d)
            indices.append(t)
        elif t.dim() == 0:  # x[True] / x[False]: a new dim of size 1, kept or emptied
            dims.append(d)
            indices.append(torch.zeros((1 if t.item() else 0,), dtype=torch.int64, device=x.device))
        else:
            for j in range(t.dim()):
                if t.shape[j] != v.shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(t.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(v.shape)} at index {d + j}")
            coords = KI.nonzero(t)
            dims.extend(range(d, d + t.dim()))
            indices.extend(coords[:, j] for j in range(t.dim()))
    try:
        plan = _Plan(lambda data: data[norm], dims, indices, len(adv) == 1 and adv[0][1] == "mask", x._data)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(i.shape)) for i in indices)) from None
    for k, t, host, size in checks:
        bad = next((i for i in host if not -size <= i < size), None) if host is not None \
            else KI.first_out_of_bounds(t, size)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {k} with size {size}")
    return plan, None


# ----------------------------------------------------------------------------- getitem / setitem

class Index(BuiltinFunction):
    node_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, plan):
        check_runnable(x)
        ctx.plan, ctx.x_shape = plan, x.shape
        return _gather(plan, x._data)

    @staticmethod
    def backward(ctx, g):
        return IndexAdd.apply(g, ctx.plan, ctx.x_shape), None


class IndexAdd(BuiltinFunction):
    """zeros(shape) with g added at the plan: the gradient of ``Index`` (PyTorch's
    ``index_put(zeros, idx, g, accumulate=True)``); its own gradient is the gather again."""
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, plan, shape):
        ctx.plan = plan
        return _scatter_into_zeros(plan, g, shape)

    @staticmethod
    def backward(ctx, gg):
        return Index.apply(gg, ctx.plan), None, None


class IndexPut(BuiltinFunction):
    """out-of-place ``x[idx] = value``; ``advanced_setitem`` rebases x onto it."""
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, value, plan):
        check_runnable(x, value)
        ctx.plan = plan
        out = fused(M.identity, [x], x.dtype, compute=x.dtype)
        _put(plan, out._data, value._data)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = IndexZero.apply(g, ctx.plan) if ctx.needs_input_grad[0] else None
        gv = Index.apply(g, ctx.plan) if ctx.needs_input_grad[1] else None  # the engine sums it to value's shape
        return gx, gv, None


class IndexZero(BuiltinFunction):
    """g with the plan's positions set to 0 (the gradient of x's overwritten values); linear and
    self-adjoint, so its gradient is itself."""
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, g, plan):
        ctx.plan = plan
        out = fused(M.identity, [g], g.dtype, compute=g.dtype)
        _run("put", plan, out._data, torch.zeros((), dtype=g._data.dtype, device=g.device))
        return out

    @staticmethod
    def backward(ctx, gg):
        return IndexZero.apply(gg, ctx.plan), None


def resolve(x: Tensor, items):
    """(plan, None) for an index with tensor/list/mask parts, else (None, the index as basic items)."""
    return _resolve(x, items)


def advanced_getitem(x: Tensor, plan):
    return Index.apply(x, plan)


def _value_operand(value, x: Tensor, shape) -> Tensor:
    if not isinstance(value, Tensor):
        if isinstance(value, numbers.Number):
            return as_operand(value, x, x.dtype)
        value = tensor(value, dtype=x.dtype, device=x.device)
    if value.dtype is not x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{x.dtype.scalar_type} for the destination and "
                           f"{value.dtype.scalar_type} for the source.")
    lead = value.ndim - len(shape)
    if lead > 0 and all(s == 1 for s in value.shape[:lead]):
        value = value.reshape(tuple(value.shape[lead:]))
    try:
        ok = value.ndim <= len(shape) and tuple(broadcast_shapes(value.shape, shape)) == tuple(shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")
    return value


def advanced_setitem(x: Tensor, plan, value):
    """``x[plan] = value`` in place (index_put): recorded as IndexPutBackward0 when x or value
    requires grad, else one kernel writing straight into x."""
    value = _value_operand(value, x, plan.shape)
    check_inplace(x)
    if not (is_grad_enabled() and (x.requires_grad or value.requires_grad)):
        check_runnable(x, value)
        _put(plan, x._data, value._data)
        x._version.value += 1
        return
    rebase_history(x, IndexPut.apply(x, value, plan))


# ----------------------------------------------------------------------------- index_select, gather, scatter_add

class IndexSelect(Index):
    node_name = "IndexSelectBackward0"


def _int_index(index, x, what):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(what)
    return index._data if index.device == x.device else index._data.to(x.device)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """x's slices ``index[j]`` along ``dim``: y.select(dim, j) = x.select(dim, index[j])."""
    idx = _int_index(index, x, "index_select(): Expected dtype int32 or int64 for index")
    if idx.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = x._dim(dim)
    size = x.shape[d] if x.ndim else 1
    bad = KI.first_out_of_bounds(idx, size, allow_negative=False)
    if bad is not None:  # PyTorch's text, then the offending value
        raise IndexError(f"index out of range in self (index {bad} for dimension {d} with size {size})")
    view = (lambda t: t.reshape(1)) if x.ndim == 0 else (lambda t: t)
    plan = _Plan(view, [d], [idx.reshape(1) if idx.dim() == 0 else idx], False, x._data)
    if x.ndim == 0:
        return IndexSelect.apply(x, plan).reshape(())
    return IndexSelect.apply(x, plan)


class Gather(Index):
    node_name = "GatherBackward0"


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


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """x + the sum of src[r] over the positions r whose index (along ``dim``) lands on each element."""
    if src.dtype is not x.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype")
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


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """where(mask, value, x), broadcasting x and mask; value is a number or a 0-d tensor."""
    return MaskedFill.apply(x, mask, _mask_value(x, mask, value))


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    value = _mask_value(x, mask, value)
    return write_inplace(x, MaskedFill.apply, mask, value, formula=_masked_fill_formula, fill=True)  # as PyTorch: no overlap check


class MaskedSelect(Index):
    node_name = "MaskedSelectBackward0"


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


def nonzero(x: Tensor, *, as_tuple=False):
    """Row-major coordinates of x's nonzero elements: (count, x.dim()) int64, or one 1-d tensor per dim."""
    if as_tuple:
        coords = KI.nonzero(x._data.reshape(1) if x.ndim == 0 else x._data)
        return tuple(wrap(coords[:, j]) for j in range(coords.shape[1]))
    return wrap(KI.nonzero(x._data))


# ----------------------------------------------------------------------------- sort

class Sort(BuiltinFunction):
    node_name = "SortBackward0"

    @staticmethod
    def forward(ctx, x, dim, descending):
        check_runnable(x)
        values, indices = KS.sort(x._data, dim, descending)
        ctx.plan, ctx.x_shape = _AlongDim(dim, indices, unique=True), x.shape
        indices = wrap(indices)
        ctx.mark_non_differentiable(indices)
        return wrap(values), indices

    @staticmethod
    def backward(ctx, g, g_indices):
        return IndexAdd.apply(g, ctx.plan, ctx.x_shape), None, None


def sort(x: Tensor, dim=-1, descending=False, stable=False):
    """(values, indices) along ``dim``; always stable (equal keys keep their order), NaN above +inf."""
    return sort_result(*Sort.apply(x, x._dim(dim), bool(descending)))


def argsort(x: Tensor, dim=-1, descending=False, stable=False) -> Tensor:
    check_runnable(x)
    return wrap(KS.sort(x._data, x._dim(dim), bool(descending))[1])
