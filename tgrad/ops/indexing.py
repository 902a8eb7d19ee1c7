"""``x[index]`` and ``x[index] = value``.

Basic indices (ints, slices with steps, None, ...) make views. Integer-tensor and boolean-mask
indices gather through a kernel (see ``gather_index``)."""
from __future__ import annotations

from .. import _dtype
from ..tensor import Tensor
from . import views as V


def _is_basic(item):
    return isinstance(item, (int, slice, type(None), type(Ellipsis))) and not isinstance(item, bool)


def _normalize(x: Tensor, index):
    """Check a basic index against ``x``'s shape and return it as a tuple torch can apply as a view."""
    if not isinstance(index, tuple):
        index = (index,)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    out, dim = [], 0
    for i in index:
        if i is Ellipsis:
            dim += x.ndim - n_real
            out.append(i)
        elif i is None:
            out.append(i)
        elif isinstance(i, slice):
            if i.step is not None and i.step <= 0:
                raise ValueError("step must be greater than zero")
            out.append(i)
            dim += 1
        else:
            size = x.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            out.append(i % size)
            dim += 1
    return tuple(out)


def getitem(x: Tensor, index):
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(int(i) if isinstance(i, Tensor) and i.ndim == 0 and not i.dtype.is_floating_point
                  and i.dtype is not _dtype.bool else i for i in items)
    if all(_is_basic(i) for i in items):
        idx = _normalize(x, items)
        single_int = len(items) == 1 and isinstance(items[0], int)
        return (V.Select if single_int else V.Slice).apply(x, idx)
    from .advanced import advanced_getitem
    return advanced_getitem(x, items)


def setitem(x: Tensor, index, value):
    items = index if isinstance(index, tuple) else (index,)
    if all(_is_basic(i) for i in items):
        target = getitem(x, items)
        target.copy_(value)
        return
    from .advanced import advanced_setitem
    advanced_setitem(x, items, value)
