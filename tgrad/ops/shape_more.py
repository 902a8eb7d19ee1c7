"""Shape and selection functions composed from core ops (each a kernel); their gradients are the
composition's.

- ``tensor_split``/``hsplit``/``vsplit``/``dsplit``: views (``narrow``) at the split points.
- ``as_strided``: a view (``AsStrided``); overlapping windows are gathered (the gradient sums).
- ``t_``/``transpose_``/``squeeze_``/``unsqueeze_``: the tensor takes its view's geometry and history.
- ``rot90``: flips and a transpose; ``take``: an index into the flattened tensor.
"""
from __future__ import annotations

import builtins

from .. import _dtype
from ..modes import is_grad_enabled
from ..tensor import Tensor
from . import advanced, arrange, factories, matmul, random, reduce, shape, views
from .registry import op, register


def _dim(x, dim):
    return x._dim(dim)


# ----------------------------------------------------------------------------- aliases and views

@op("ravel")
def ravel(input):  # noqa: A002
    return shape.reshape(input, (-1,))


register(shape.swapaxes, "swapdims")
register(shape.movedim, "moveaxis")
register(matmul.outer, "ger")
register(matmul.vdot, "vdot", function=False)


@op("tensor_split")
def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    d = _dim(input, dim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dtype.is_floating_point or indices_or_sections.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {indices_or_sections.ndim} dims")
        v = indices_or_sections.tolist()
        indices_or_sections = v if isinstance(v, list) else builtins.int(v)
    if isinstance(indices_or_sections, builtins.int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        bounds = [i * small + builtins.min(i, extra) for i in range(sections + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(i + n if i < 0 else i, 0), n) for i in indices_or_sections] + [n]
    return tuple(shape.narrow(input, d, a, builtins.max(b - a, 0)) if b > a else
                 shape.narrow(input, d, builtins.min(a, n), 0) for a, b in zip(bounds[:-1], bounds[1:]))


def _split_along(name, input, indices_or_sections, dim, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.ndim} dimensions!")
    if isinstance(indices_or_sections, builtins.int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


@op("hsplit")
def hsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


@op("vsplit")
def vsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@op("dsplit")
def dsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def _inplace_view(self, view):
    """``self`` takes the geometry (and, if recorded, the history) of ``view``, a view of itself:
    PyTorch's t_(), transpose_(), squeeze_() and unsqueeze_()."""
    if self._requires_grad and self._grad_fn is None and is_grad_enabled():
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


@op("msort")
def msort(input):  # noqa: A002
    return advanced.sort(input, 0)[0]


@op("rot90")
def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _dim(input, dims[0]), _dim(input, dims[1])
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return shape.transpose(arrange.flip(input, (d1,)), d0, d1)
    if k == 2:
        return arrange.flip(input, (d0, d1))
    if k == 3:
        return shape.transpose(arrange.flip(input, (d0,)), d0, d1)
    return input.clone()


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


@op("diagflat")
def diagflat(input, offset=0):  # noqa: A002
    return arrange.diag(shape.reshape(input, (-1,)), offset)
