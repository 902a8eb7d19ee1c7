"""Broadcasting several operands at once: ``broadcast_shapes`` (sizes only, no tensor) and
``broadcast_tensors`` (each operand expanded to the common shape: views, no copy)."""
from __future__ import annotations

import operator

from .. import _dtype
from ..tensor import Tensor
from . import common
from .registry import op
from .shape import expand


def _dims(shape):
    if isinstance(shape, (tuple, list)):
        return tuple(operator.index(d) for d in shape)
    return (operator.index(shape),)


@op("broadcast_shapes", method=False)
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` (each a sequence of ints, or one int) broadcast to,
    with PyTorch's errors."""
    dims = [_dims(s) for s in shapes]
    out = [1] * max((len(s) for s in dims), default=0)
    for k, s in enumerate(dims):
        if any(d < 0 for d in s):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
        for i in range(1, len(s) + 1):
            if s[-i] != 1 and out[-i] not in (1, s[-i]):
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s[-i]} at {-i}! Mismatching "
                                   f"argument at index {k} had {s}; but expected shape should be broadcastable "
                                   f"to {out}")
            if out[-i] == 1:
                out[-i] = s[-i]
    return _dtype.Size(out)


@op("broadcast_tensors", method=False)
def broadcast_tensors(*tensors):
    """Each tensor expanded (a view) to the shape they all broadcast to."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    common.check_runnable(*tensors)
    shape = common.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(expand(t, shape) for t in tensors)
