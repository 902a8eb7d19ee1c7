"""``nn.Parameter``: a leaf tensor that requires grad and that a Module registers when assigned as
an attribute."""
from __future__ import annotations

from tgrad.ops.factories import empty
from tgrad.tensor import Tensor

__all__ = ["Parameter"]


def _as_tensor(data):
    if data is None:
        return empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"expected a tgrad.Tensor as data, got {type(data).__name__}")
    return data


class Parameter(Tensor):
    """A leaf over ``data``'s storage (shared, with its version counter, as ``data.detach()``)."""

    def __new__(cls, data=None, requires_grad=True):
        data = _as_tensor(data)
        p = object.__new__(cls)
        Tensor._init(p, data._data, version=data._version)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor._wrap(self._data.clone()), self.requires_grad)
        memo[id(self)] = result
        return result

