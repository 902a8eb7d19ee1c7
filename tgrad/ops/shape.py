"""Movement ops that reshape one tensor: views (reshape, permute, squeeze, expand, narrow ...) and
``contiguous``. Joining tensors is ``joins.py``; splitting one into pieces, ``splits.py``."""
from __future__ import annotations

import math
import operator

import torch

from ..tensor import Tensor
from . import pointwise as P
from . import views as V
from .registry import op


def _ints(shape):
    """The sizes as ints; a float (2.5) is an error, never silently truncated."""
    out = []
    for i, s in enumerate(shape):
        try:
            out.append(operator.index(s))  # ints, numpy ints, integer 0-d tensors
        except TypeError:
            raise TypeError(f"size must be a tuple of ints, but found element of type {type(s).__name__} at pos "
                            f"{i}") from None
    return out


def _infer_shape(x: Tensor, shape):
    if all(type(s) is int and s >= 0 for s in shape) and math.prod(shape) == x._data.numel():
        return shape  # the common case: plain sizes, all given (a tuple: *shape)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = tuple(shape[0])
    shape = _ints(shape)
    n = x._data.numel()
    if -1 not in shape and math.prod(shape) == n and min(shape, default=0) >= 0:  # the common case: all given
        return tuple(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 and n == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} because the unspecified "
                               "dimension size -1 can be any value and is ambiguous")
        if known == 0 or n % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
        shape[shape.index(-1)] = n // known
    elif known != n:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {n}")
    return tuple(shape)


@op("view")
def view(x, *shape):
    shape = _infer_shape(x, shape)
    try:
        x._data.view(shape)
    except RuntimeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.") from None
    return V.View.apply(x, shape)


@op("reshape")
def reshape(x, *shape):
    shape = _infer_shape(x, shape)
    data = x._data
    if data.is_contiguous():  # any shape of as many elements views a contiguous tensor
        return V.View.apply(x, shape)
    if not _viewable(data.shape, data.stride(), shape):  # not expressible as a view: copy (in a kernel), then
        return V.UnsafeView.apply(P.Clone.apply(x, True), shape)  # view the copy
    return V.ReshapeAlias.apply(x, shape)


def _viewable(old, strides, new) -> bool:
    """Whether ``view(new)`` can express a tensor of shape ``old`` and ``strides`` (PyTorch's
    computeStride, asked without raising: an error from torch's view costs ~20 us). Each run of old
    dims that are contiguous with each other must be exactly a run of new dims."""
    if math.prod(old) == 0 or not old:
        return True
    view_d, base = len(new) - 1, strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and strides[d - 1] != tensor_numel * base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                base, tensor_numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


def _perm(x, dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {x.ndim} is not equal "
                           f"to len(dims) = {len(dims)}")
    out = tuple(x._dim(d) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return out


@op("permute")
def permute(x, *dims):
    return V.Permute.apply(x, _perm(x, dims))


@op("transpose", "swapaxes")
def transpose(x, dim0, dim1):
    if x.ndim == 0:
        x._dim(dim0), x._dim(dim1)  # only 0 and -1 name the one "dim" of a 0-d tensor
        return V.Transpose.apply(x, 0, 0)
    return V.Transpose.apply(x, x._dim(dim0), x._dim(dim1))


swapaxes = transpose


@op("t")
def t(x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return V.T.apply(x)


@op("squeeze")
def squeeze(x, dim=None):
    if dim is None:
        return V.Squeeze.apply(x, x._data.squeeze())
    cls = V.SqueezeDim if isinstance(dim, int) else V.SqueezeDims
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(x._dim(d) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    dims = dims if x.ndim else ()
    return cls.apply(x, x._data.squeeze(dims) if dims else x._data.view(x._data.shape))


@op("unsqueeze")
def unsqueeze(x, dim):
    n = x.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return V.Unsqueeze.apply(x, x._data.unsqueeze(dim % n))


def expanded_shape(x, shape):
    """The shape ``x.expand(*shape)`` takes (-1 keeps a size), or PyTorch's error."""
    shape = _ints(shape)
    if len(shape) < x.ndim:
        kind = x.type()
        raise RuntimeError(f"expand({kind}{{{list(x.shape)}}}, size={shape}): the number of sizes "
                           f"provided ({len(shape)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({x.ndim})")
    lead = len(shape) - x.ndim
    final = []
    for i, s in enumerate(shape):
        cur = x.shape[i - lead] if i >= lead else 1
        if s == -1:
            if i < lead:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            s = cur
        if cur != 1 and cur != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(shape)}.  Tensor sizes: "
                               f"{list(x.shape)}")
        final.append(s)
    return tuple(final)


@op("expand")
def expand(x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = tuple(shape[0])
    return V.Expand.apply(x, expanded_shape(x, shape))


@op("broadcast_to")
def broadcast_to(x, shape):
    return expand(x, *((shape,) if isinstance(shape, int) else shape))


@op("flatten")
def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = x._dim(start_dim), x._dim(end_dim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    # the product, not -1: a 0-element tensor cannot infer a dim (flatten of (0, 3, 0) is (0, 0))
    shape = tuple(x.shape[:s]) + (math.prod(x.shape[s:e + 1]),) + tuple(x.shape[e + 1:])
    return reshape(x, *shape)


@op("unflatten")
def unflatten(x, dim, sizes):
    if x.ndim == 0:
        raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has no "
                           "dimensions")
    d = x._dim(dim)
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    size = x.shape[d]
    if (size % known if known else size != 0) if -1 in sizes else known != size:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {d} ({size}) in "
                           "the input tensor")
    # splitting one dim into several is always expressible as a view
    return view(x, *(tuple(x.shape[:d]) + tuple(sizes) + tuple(x.shape[d + 1:])))


@op("movedim", "moveaxis")
def movedim(x, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    src, dst = [x._dim(s) for s in src], [x._dim(d) for d in dst]
    if x.ndim == 0:  # dims 0 and -1 name the 0-d tensor's own (absent) dim
        return view(x, ())
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, *order)


@op("contiguous")
def contiguous(x, memory_format=None):
    return x if x.is_contiguous() else P.Clone.apply(x, True)


@op("narrow")
def narrow(x, dim, start, length):
    if x.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = x._dim(dim)
    size = x.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < 0:
        start += size
    if start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({x.shape[d]}).")
    index = (slice(None),) * d + (slice(start, start + length),)
    return V.Slice.apply(x, index)


@op("ravel")
def ravel(input):  # noqa: A002
    return reshape(input, (-1,))


op("swapdims")(swapaxes)
