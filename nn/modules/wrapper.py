"""``FunctionalWrapper``: the base of the modules that only call their ``nn.functional`` namesake
with the arguments they were built with (activations, pixel shuffles, fold/unfold, adaptive pools)."""
from __future__ import annotations

from .module import Module

__all__ = ["FunctionalWrapper"]


class FunctionalWrapper(Module):
    """Keeps its constructor's arguments (the keywords a subclass's ``__init__`` passes here, in
    order) as attributes and hands them to ``_fn`` after the input, ``inplace`` by keyword; its repr
    lists them as PyTorch's do (``inplace`` only when set)."""
    _fn = None

    def __init__(self, **arguments):
        super().__init__()
        self._positional = tuple(name for name in arguments if name != "inplace")
        self._has_inplace = "inplace" in arguments
        for name, value in arguments.items():
            setattr(self, name, value)

    def forward(self, input):
        values = [getattr(self, name) for name in self._positional]
        if self._has_inplace:
            return type(self)._fn(input, *values, inplace=self.inplace)
        return type(self)._fn(input, *values)

    def extra_repr(self):
        parts = [f"{name}={getattr(self, name)!r}" for name in self._positional]
        return ", ".join(parts + (["inplace=True"] if self._has_inplace and self.inplace else []))
