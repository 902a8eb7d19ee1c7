"""Comparisons of whole tensors and membership: ``equal`` (a Python bool: same shape, same
values) and ``isin`` (each element tested against every test element; one compare kernel and one
reduction)."""
from __future__ import annotations

import builtins

from .. import _dtype
from ..tensor import Tensor
from .common import as_operand, check_runnable, result_type
from .registry import op
from .shape import reshape


@op("equal")
def equal(input, other):  # noqa: A002
    for k, (name, t) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"equal(): argument '{name}' (position {k}) must be Tensor, not {type(t).__name__}")
    check_runnable(input, other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input == other).all())


@op("isin", method=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: elements and test_elements are "
                        "both numbers; one of them must be a Tensor")
    if isinstance(elements, bool) or isinstance(test_elements, bool):
        raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    like = elements if isinstance(elements, Tensor) else test_elements
    elements, test_elements = as_operand(elements, like), as_operand(test_elements, like)
    check_runnable(elements, test_elements)
    for t in (elements, test_elements):
        if t.dtype is _dtype.bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dtype = result_type(elements, test_elements)
    e, t = elements.detach().to(dtype), test_elements.detach().to(dtype)
    found = (reshape(e, (-1, 1)) == reshape(t, (1, -1))).any(1)
    found = reshape(found, tuple(elements.shape))
    return found.logical_not() if invert else found
