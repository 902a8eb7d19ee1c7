"""``x[index]``, ``x[index] = value`` and ``take`` (an index into the flattened tensor).

Basic indices (ints, slices with steps, None, ...) make views. Integer-tensor and boolean-mask
indices gather through a kernel (see ``ops/advanced.py``)."""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from . import advanced, factories, reduce, shape
from . import views as V
from .registry import op
from .shape import expanded_shape


def _is_basic(item):
    return isinstance(item, (int, slice, type(None), type(Ellipsis))) and not isinstance(item, bool)


def _as_int(i):
    """0-d integer tensors and integer-likes (numpy ints) index like Python ints."""
    if isinstance(i, Tensor):
        ok = i.ndim == 0 and not i.dtype.is_floating_point and i.dtype is not _dtype.bool
        return int(i) if ok else i
    if isinstance(i, (bool, int, slice, type(None), type(Ellipsis))) or not hasattr(i, "__index__"):
        return i
    try:
        return operator.index(i)
    except TypeError:  # a numpy array of indices: advanced indexing takes it
        return i


def _node(x: Tensor, items, is_tuple):
    """The node class for a basic index, named like the last view PyTorch applies: a lone int,
    slice, None or ``...`` is a select, slice, unsqueeze or alias; in a tuple, full slices and
    ``...`` apply nothing, and an index that applies nothing is an alias (a tuple comes normalized:
    its ``...`` written as full slices)."""
    if not is_tuple:
        i = items[0]
        return V.Select if isinstance(i, int) else V.Slice if isinstance(i, slice) else \
            V.IndexUnsqueeze if i is None else V.Alias
    node, dim = V.Alias, 0
    for i in items:
        if i is None:
            node = V.IndexUnsqueeze
        else:
            if isinstance(i, int) or i.indices(x.shape[dim]) != (0, x.shape[dim], 1):
                node = V.Select if isinstance(i, int) else V.Slice
            dim += 1
    return node


def as_index(index):
    """PyTorch's reading of an index: a ``range`` is a list, and a short list holding sequences,
    slices, None or ``...`` is a tuple of indices (deprecated there, with this warning)."""
    if isinstance(index, range):
        return list(index)
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(i, (list, tuple, range, slice, Tensor, np.ndarray)) or i is None or i is Ellipsis
            for i in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq].", UserWarning, stacklevel=3)
        index = tuple(index)
    if isinstance(index, tuple) and any(isinstance(i, range) for i in index):
        index = tuple(list(i) if isinstance(i, range) else i for i in index)
    return index


def getitem(x: Tensor, index):
    if type(index) is slice or type(index) is int:  # one basic index (the common x[i], x[a:b]): as it is
        if x._data.dim() == 0:
            _refuse_0d(index)
        if type(index) is slice:
            if index.step is None:  # nothing for normalize_basic to check or rewrite
                return V.Slice.apply(x, (index,))
        else:
            size = x._data.shape[0]
            if -size <= index < size:
                return V.Select.apply(x, (index % size,))
        return _basic_getitem(x, (index,), False)
    index = as_index(index)
    is_tuple = isinstance(index, tuple)
    items = tuple(_as_int(i) for i in (index if is_tuple else (index,)))
    if all(_is_basic(i) for i in items):
        if x.ndim == 0 and not is_tuple:
            _refuse_0d(items[0])
        return _basic_getitem(x, items, is_tuple)
    plan, basic = advanced.resolve(x, items)
    if plan is None:
        return _basic_getitem(x, basic, True)
    return advanced.advanced_getitem(x, plan)


def _refuse_0d(item):
    """PyTorch's errors for a lone int or slice indexing a 0-d tensor."""
    if isinstance(item, int):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    if isinstance(item, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")


def _basic_getitem(x: Tensor, items, is_tuple):
    idx = V.normalize_basic(x, items)
    return _node(x, idx if is_tuple else items, is_tuple).apply(x, idx)


def _fit_value(value: Tensor, shape):
    """``value`` shaped to broadcast onto a target of ``shape`` as PyTorch's setitem does: leading
    size-1 dims dropped, then expand's rules (and errors)."""
    if tuple(value.shape) == tuple(shape):
        return value
    dims = list(value.shape)
    while dims and dims[0] == 1:
        dims.pop(0)
    if len(dims) != value.ndim:
        value = value.reshape(dims)
    expanded_shape(value, shape)
    return value


def setitem(x: Tensor, index, value):
    index = as_index(index)
    is_tuple = isinstance(index, tuple)
    items = tuple(_as_int(i) for i in (index if is_tuple else (index,)))
    if not all(_is_basic(i) for i in items):
        plan, items = advanced.resolve(x, items)
        if plan is not None:
            return advanced.advanced_setitem(x, plan, value)
        index = items
    target = getitem(x, index)
    target.copy_(_fit_value(value, target.shape) if isinstance(value, Tensor) else value)


@op("take")
def take(input, index):  # noqa: A002
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.scalar_type}")
    n = input.numel()
    if index.numel():
        lo, hi = builtins.int(reduce.amin(index, ()).item()), builtins.int(reduce.amax(index, ()).item())
        bad = hi if hi >= n else lo if lo < -n else None
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return shape.reshape(input, (-1,))[index]


@op("unravel_index", method=False)
def unravel_index(indices, shape):  # noqa: A002
    """The coordinates in ``shape`` of flat ``indices`` (one int64 tensor per dim), as PyTorch's:
    floor division by each dim's stride, then modulo its size (so indices wrap)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    sizes = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(map(operator.index, shape))
    if any(s < 0 for s in sizes):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(sizes)}")
    strides, step = [], 1
    for s in reversed(sizes):
        strides.insert(0, step)
        step *= s
    device = indices.device
    coords = (indices.unsqueeze(-1).floor_divide(factories.tensor(strides, dtype=_dtype.int64, device=device))
              % factories.tensor(list(sizes), dtype=_dtype.int64, device=device))
    return coords.unbind(-1)
