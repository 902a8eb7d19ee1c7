"""``tensor_split`` and its kin ``hsplit``/``vsplit``/``dsplit``: views (``narrow``) at the split
points, so their gradients are narrow's."""
from __future__ import annotations

import builtins

from ..tensor import Tensor
from . import shape
from .registry import op


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
