"""Questions about dtypes: ``is_floating_point``, ``promote_types``, ``can_cast`` and
``result_type`` (PyTorch's promotion rules, ``_dtype.promote``)."""
from __future__ import annotations

from .. import _dtype
from .common import result_type
from .registry import op


@op("is_floating_point", method=False)
def is_floating_point(input):  # noqa: A002
    return input.dtype.is_floating_point


@op("promote_types", method=False)
def promote_types(type1, type2):
    return _dtype.promote(_dtype.as_dtype(type1), _dtype.as_dtype(type2))


@op("can_cast", method=False)
def can_cast(from_, to):
    """True when ``from_`` casts to ``to`` without leaving its kind (float to int, or to bool, is not)."""
    return _dtype.category(_dtype.as_dtype(from_)) <= _dtype.category(_dtype.as_dtype(to))


op("result_type", method=False)(result_type)
