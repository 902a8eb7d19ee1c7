"""Advanced indexing (integer tensors, boolean masks) and the plans that gather/scatter along a
dim (``gather_scatter.py``) and sorting (``sorting.py``) run on.

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
from ..autograd.function import BuiltinFunction, records
from ..tensor import Tensor
from ..autograd.inplace_checks import check_inplace
from tgrad.kernels.indexing import index as KI
from tgrad.kernels import elementwise as M
from .factories import tensor
from .common import as_operand, broadcast_shapes, check_runnable, wrap
from .formula import fused
from .inplace import check_no_overlap
from .views import normalize_basic, rebase_history


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


def _put(plan, data: torch.Tensor, value: torch.Tensor, mode="put"):
    if value.untyped_storage().data_ptr() == data.untyped_storage().data_ptr():
        value = value.clone()  # a value aliasing the destination would be read while written
    _run(mode, plan, data, value)


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


def _resolve(x: Tensor, items, check_bounds=True):
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
    n_real = sum(1 for i in basic if i is not None and i is not Ellipsis)
    view_dim, x_dim, d, xd = [], [], 0, 0
    for i in basic:  # the view dim and the dim of x each basic entry lands on
        view_dim.append(d)
        x_dim.append(xd)
        d += x.ndim - n_real if i is Ellipsis else 0 if isinstance(i, int) else 1
        xd += x.ndim - n_real if i is Ellipsis else 0 if i is None else 1
    v = x._data[norm]
    past = [view_dim[pos] for pos, kind, t, _ in adv if view_dim[pos] >= v.dim() and (kind == "int" or t.dim())]
    if past:  # after a second ellipsis: PyTorch's index gets a list of indices longer than the view's dims
        raise IndexError(f"too many indices for tensor of dimension {v.dim()} (got {past[-1] + 1}): an index "
                         "tensor lands past the last dim after a second ellipsis ('...')")
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
    plan.bounds = checks
    if check_bounds:
        check_index_bounds(plan)
    return plan, None


def check_no_index_into_an_empty_dim(plan):
    if any(size == 0 and t.numel() for _, t, _, size in plan.bounds):
        raise IndexError("index is out of bounds for dimension with size 0")


def check_index_bounds(plan):
    """IndexError naming the first index out of its dim's range (host values where the index came
    from a list, else one kernel), as PyTorch's index kernel finds it: only when the result has
    elements (an index into a dim of size 0 is refused before)."""
    check_no_index_into_an_empty_dim(plan)
    if 0 in plan.shape:
        return
    for k, t, host, size in plan.bounds:
        bad = next((i for i in host if not -size <= i < size), None) if host is not None \
            else KI.first_out_of_bounds(t, size)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {k} with size {size}")


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
    """out-of-place ``x[idx] = value`` (``accumulate``: ``x[idx] += value``, repeated positions
    adding up); ``advanced_setitem`` rebases x onto it."""
    node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, value, plan, accumulate=False):
        check_runnable(x, value)
        ctx.plan, ctx.accumulate = plan, accumulate
        out = fused(M.identity, [x], x.dtype, compute=x.dtype)
        _put(plan, out._data, value._data, "add" if accumulate else "put")
        return out

    @staticmethod
    def backward(ctx, g):
        gx = None
        if ctx.needs_input_grad[0]:
            gx = g if ctx.accumulate else IndexZero.apply(g, ctx.plan)
        gv = Index.apply(g, ctx.plan) if ctx.needs_input_grad[1] else None  # the engine sums it to value's shape
        return gx, gv, None, None


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


def resolve(x: Tensor, items, check_bounds=True):
    """(plan, None) for an index with tensor/list/mask parts, else (None, the index as basic items);
    without ``check_bounds``, ``check_index_bounds(plan)`` is the caller's."""
    return _resolve(x, items, check_bounds)


def advanced_getitem(x: Tensor, plan):
    return Index.apply(x, plan)


def value_operand(value, x: Tensor, shape) -> Tensor:
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
    check_value_shape(value, shape)
    return value


def check_value_shape(value: Tensor, shape):
    try:
        ok = value.ndim <= len(shape) and tuple(broadcast_shapes(value.shape, shape)) == tuple(shape)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(shape)}")


def advanced_setitem(x: Tensor, plan, value, accumulate=False):
    """``x[plan] = value`` in place (index_put; ``accumulate``: added): recorded as
    IndexPutBackward0 when x or value requires grad, else one kernel writing straight into x."""
    value = value_operand(value, x, plan.shape)
    # (PyTorch fills through one mask with a single CPU value by masked_fill_, unchecked)
    if accumulate or not (plan.unique and value.numel() == 1 and value.device.type == "cpu"):
        check_no_overlap(plan.view(x._data), value._data)
    check_inplace(x)
    if not records(x, value):
        check_runnable(x, value)
        if accumulate and x.dtype in _NO_ATOMIC_ADD:
            _add_in_int32(plan, x, value)
        else:
            _put(plan, x._data, value._data, "add" if accumulate else "put")
        x._version.value += 1
        return
    rebase_history(x, IndexPut.apply(x, value, plan, accumulate))


_NO_ATOMIC_ADD = (_dtype.bool, _dtype.int8, _dtype.int16, _dtype.uint8)


def _add_in_int32(plan, x: Tensor, value: Tensor):
    """x[plan] += value for dtypes the kernels' atomic add lacks: added in int32, cast back (bool:
    any nonzero; the small ints wrap around, as PyTorch's own additions in those dtypes do)."""
    wide = fused(M.identity, [x], _dtype.int32, compute=_dtype.int32)
    _put(plan, wide._data, fused(M.identity, [value], _dtype.int32, compute=_dtype.int32)._data, "add")
    fused(M.identity, [wide], x.dtype, compute=_dtype.int32, out=x)
