"""Movement ops: views (reshape, permute, squeeze ...), joins and splits, and indexing."""
from __future__ import annotations

import builtins
import math
import operator

import torch

from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.indexing import concat as KC
from . import pointwise as P
from . import views as V
from .common import check_runnable, result_type, wrap
from .factories import zeros
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
    if x._data.is_contiguous():  # any shape of as many elements views a contiguous tensor
        return V.View.apply(x, shape)
    try:
        x._data.view(shape)
    except RuntimeError:  # not expressible as a view: copy (in a kernel), then view the copy
        return V.UnsafeView.apply(P.Clone.apply(x, True), shape)
    return V.ReshapeAlias.apply(x, shape)


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


# ----------------------------------------------------------------------------- joins and splits

class Cat(BuiltinFunction):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        data = [t._data for t in tensors]
        # legacy: 1-d empty tensors take part in the dtype only (PyTorch); their gradient is empty
        skipped = [d.ndim == 1 and d.shape[0] == 0 and not all(u.ndim == 1 for u in data) for d in data]
        kept = [d for d, skip in zip(data, skipped) if not skip]
        out = torch.empty(_cat_shape(kept, dim), dtype=dtype.torch, device=data[0].device)
        ctx.sizes, ctx.dim = [None if skip else d.shape[dim] for d, skip in zip(data, skipped)], dim
        live = [d for d in kept if d.numel()]
        if live:  # one launch reads every input through its own strides, converting its dtype
            KC.cat_into(out, live, dim)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + tuple(g.narrow(ctx.dim, s, n) if n is not None else
                                    wrap(torch.empty((0,), dtype=g._data.dtype, device=g.device))
                                    for s, n in zip(_starts([n or 0 for n in ctx.sizes]), ctx.sizes))


def _starts(sizes):
    out, s = [], 0
    for n in sizes:
        out.append(s)
        s += n
    return out


def _cat_shape(tensors, dim):
    """The output shape of a cat of torch tensors, or PyTorch's error for mismatched inputs."""
    ref = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        shape = t.shape
        if len(shape) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(shape)}")
        if shape[:dim] != ref[:dim] or shape[dim + 1:] != ref[dim + 1:]:
            d = next(d for d in range(len(ref)) if d != dim and shape[d] != ref[d])
            raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. Expected size "
                               f"{ref[d]} but got size {shape[d]} for tensor number {i} in the list.")
    out = list(ref)
    out[dim] = builtins.sum(t.shape[dim] for t in tensors)
    return out


@op("cat", "concat", "concatenate", method=False)
def cat(tensors, dim=0):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("tgrad.cat(): expected a non-empty list of Tensors")
    shapes = [t._data.shape for t in tensors]
    # legacy: 1-d empty tensors are skipped in the shapes (not the dtype), as in PyTorch
    ref = next((t for t, s in zip(tensors, shapes) if s != (0,)), tensors[0])
    for i, s in enumerate(shapes):
        if not s:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    check_runnable(*tensors)
    return Cat.apply(ref._dim(dim), *_joined(tensors))


concat = concatenate = cat


def _tensor_list(tensors, fn):
    """The sequence of tensors ``fn`` (cat, stack) joins, or PyTorch's TypeError."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) and not hasattr(tensors, "__iter__"):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def _joined(tensors):
    """(the promoted dtype, the inputs), inputs of dtypes past the ones a cat launch reads
    converted to it first."""
    first = tensors[0]._data.dtype
    if all(t._data.dtype is first for t in tensors):
        return (tensors[0].dtype, *tensors)
    dtype = result_type(*tensors)
    kinds = {dtype}
    for t in tensors:
        if len(kinds) < KC.MAX_KINDS:
            kinds.add(t.dtype)
    return (dtype, *[t if t.dtype in kinds else t.to(dtype) for t in tensors])


class Stack(BuiltinFunction):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        data = [t._data for t in tensors]
        shape = list(data[0].shape)
        shape.insert(dim, len(data))
        out = torch.empty(shape, dtype=dtype.torch, device=data[0].device)
        ctx.sizes, ctx.dim = [1] * len(data), dim
        if out.numel():
            KC.cat_into(out, data, dim, stacked=True)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + tuple(g.select(ctx.dim, i) for i in range(len(ctx.sizes)))


@op("stack", method=False)
def stack(tensors, dim=0):
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]
    ref_shape = ref._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != ref_shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    n = ref.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    check_runnable(*tensors)
    return Stack.apply(dim % n, *_joined(tensors))


class Split(BuiltinFunction):
    """Views of consecutive pieces along ``dim``: one node with one output per piece."""
    node_name = "SplitBackward0"

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.meta = (x.shape, sizes, dim, x.dtype, x.device)
        out, start = [], 0
        for n in sizes:
            out.append(V.make_view(x, x._data.narrow(dim, start, n), multi_output=True))
            start += n
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        shape, sizes, dim, dtype, device = ctx.meta
        parts = [g if g is not None else zeros(*[n if d == dim else s for d, s in enumerate(shape)], dtype=dtype,
                                                device=device) for g, n in zip(grads, sizes)]
        return cat(parts, dim) if len(parts) > 1 else parts[0], None, None


class SplitWithSizes(Split):
    node_name = "SplitWithSizesBackward0"


@op("split")
def split(x, split_size_or_sections, dim=0):
    if x.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = x._dim(dim)
    n = x.shape[d]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [builtins.min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
        return SplitWithSizes.apply(x, tuple(sizes), d)
    return Split.apply(x, tuple(sizes), d)


@op("chunk")
def chunk(x, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if x.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = x.shape[x._dim(dim)]
    if n == 0:  # an empty dim still gives `chunks` (empty) pieces
        return split(x, [0] * chunks, dim)
    return split(x, builtins.max(1, -(-n // chunks)), dim)


class Unbind(BuiltinFunction):
    """``x.unbind(dim)``: one node whose i-th output (``output_nr`` i) is the view ``x.select(dim, i)``;
    unused outputs' gradients arrive as zeros, so backward stacks them all."""
    node_name = "UnbindBackward0"

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return tuple(V.make_view(x, x._data.select(dim, i), multi_output=True) for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(list(grads), ctx.dim), None


@op("unbind")
def unbind(x, dim=0):
    return Unbind.apply(x, x._dim(dim))


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
