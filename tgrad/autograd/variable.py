"""The legacy ``Variable`` API (spec K): ``Variable(t)`` returns a plain tensor, a detached alias."""
from __future__ import annotations

import warnings

from .. import ops
from ..tensor import Tensor


class _VariableMeta(type):
    # Variable is Tensor's legacy constructor: isinstance(t, Variable) holds for any tensor
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    # a type checker takes the type of ``Variable(t)`` from here: a Tensor, not a Variable
    def __new__(cls, data=None, requires_grad=False, volatile=False) -> Tensor:  # type: ignore[misc]
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with tgrad.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            return ops.tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
