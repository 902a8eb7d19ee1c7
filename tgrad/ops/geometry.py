"""Ops that give a tensor another geometry over the same storage:

- ``as_strided``: a view (``AsStrided``); overlapping windows are gathered (the gradient sums).
- ``t_``/``transpose_``/``squeeze_``/``unsqueeze_``: the tensor takes its view's geometry and history.
"""
from __future__ import annotations

import builtins

from .. import _dtype
from ..autograd.function import records
from . import factories, random, shape, views
from .registry import op


def _inplace_view(self, view):
    """``self`` takes the geometry (and, if recorded, the history) of ``view``, a view of itself:
    PyTorch's t_(), transpose_(), squeeze_() and unsqueeze_()."""
    if records(self) and self._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    self._data = view._data
    if view._grad_fn is not None:
        self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
    self._vc.value += 1
    return self


@op("t_", function=False)
def t_(self):
    return _inplace_view(self, shape.t(self))


@op("transpose_", "swapdims_", "swapaxes_", function=False)
def transpose_(self, dim0, dim1):
    return _inplace_view(self, shape.transpose(self, dim0, dim1))


@op("squeeze_", function=False)
def squeeze_(self, dim=None):
    return _inplace_view(self, shape.squeeze(self, dim))


@op("unsqueeze_", function=False)
def unsqueeze_(self, dim):
    return _inplace_view(self, shape.unsqueeze(self, dim))


@op("as_strided")
def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of ``input``'s storage (PyTorch's geometry: strides and offset in storage elements).
    Overlapping windows (a sliding window) of a contiguous tensor are gathered instead: a copy whose
    gradient sums over the windows, as PyTorch's as_strided backward does."""
    size, stride = tuple(builtins.int(n) for n in size), tuple(builtins.int(st) for st in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: {list(size)}")
    if builtins.any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    start = input._data.storage_offset()
    offset = start if storage_offset is None else builtins.int(storage_offset)
    last = offset + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if builtins.all(size) else offset
    storage = input._data.untyped_storage().nbytes() // input._data.element_size()
    if builtins.all(size) and last >= storage:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {input._data.element_size()} requiring a storage size of "
                           f"{(last + 1) * input._data.element_size()} are out of bounds for storage of size "
                           f"{storage * input._data.element_size()}")
    if not views.overlaps(size, stride):
        return views.AsStrided.apply(input, size, stride, offset - start)
    if not input._data.is_contiguous() or offset < start:
        raise NotImplementedError("tgrad: as_strided with overlapping windows needs a contiguous input and an "
                                  "offset inside it (call .contiguous() first)")
    index = factories.full(size, offset - start, dtype=_dtype.int64, device=input.device)
    for d, (n, st) in enumerate(zip(size, stride)):
        index = index + random.arange(n, device=input.device).reshape(n, *([1] * (len(size) - d - 1))) * st
    flat = shape.reshape(input, (-1,))
    if builtins.all(size) and last - start >= flat.shape[0]:
        raise NotImplementedError("tgrad: as_strided with overlapping windows beyond the input's own elements")
    return flat[index]
