"""Splitting a tensor into views of its pieces: ``split``, ``chunk`` and ``unbind`` (one node with
an output per piece), and ``tensor_split`` with its kin ``hsplit``/``vsplit``/``dsplit`` (views
(``narrow``) at the split points, so their gradients are narrow's)."""
from __future__ import annotations

import builtins

from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from . import shape
from . import views as V
from .factories import zeros
from .joins import cat, stack
from .registry import op


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


def _dim(x, dim):
    return x._dim(dim)


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
