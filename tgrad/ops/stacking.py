"""Joining tensors after giving them at least 1, 2 or 3 dims: ``atleast_1d/2d/3d`` (views),
``hstack``, ``vstack``, ``column_stack`` and ``dstack`` (a ``cat`` along dim 1, 0, 1 and 2)."""
from __future__ import annotations

from ..tensor import Tensor
from .registry import op
from .joins import cat
from .shape import reshape, unsqueeze


def _at_least(tensors, lift):
    """PyTorch's calling forms: one tensor gives a tensor, several (or a sequence) a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return lift(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return tuple(lift(t) for t in tensors)


def _1d(t):
    return reshape(t, (1,)) if t.ndim == 0 else t


def _2d(t):
    return reshape(t, (1, -1)) if t.ndim < 2 else t


def _3d(t):
    if t.ndim == 0:
        return reshape(t, (1, 1, 1))
    if t.ndim == 1:
        return unsqueeze(unsqueeze(t, 0), -1)  # (n,) -> (1, n, 1), as numpy
    return unsqueeze(t, -1) if t.ndim == 2 else t


@op("atleast_1d", method=False)
def atleast_1d(*tensors):
    return _at_least(tensors, _1d)


@op("atleast_2d", method=False)
def atleast_2d(*tensors):
    return _at_least(tensors, _2d)


@op("atleast_3d", method=False)
def atleast_3d(*tensors):
    return _at_least(tensors, _3d)


def _non_empty(tensors, name):
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@op("hstack", method=False)
def hstack(tensors):
    tensors = [_1d(t) for t in _non_empty(tensors, "hstack")]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


@op("vstack", "row_stack", method=False)
def vstack(tensors):
    return cat([_2d(t) for t in _non_empty(tensors, "vstack")], 0)


@op("column_stack", method=False)
def column_stack(tensors):
    """1-d (and 0-d) tensors become columns, then ``hstack``."""
    return cat([reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in _non_empty(tensors, "column_stack")], 1)


@op("dstack", method=False)
def dstack(tensors):
    return cat([_3d(t) for t in _non_empty(tensors, "dstack")], 2)
