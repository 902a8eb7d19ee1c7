"""The padding layers (``ZeroPad2d``, ``ReflectionPad1d``, ``CircularPad3d``, ...) over ``F.pad``:
constant (zero), reflect, replicate and circular padding of the last 1, 2 or 3 dims."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d",
           "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    _dims, _mode, _zero = 2, "constant", False

    def __init__(self, padding, value=None):
        super().__init__()
        n = 2 * self._dims
        self.padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * n
        if len(self.padding) != n:
            raise ValueError(f"expected padding of {n} values, got {len(self.padding)}")
        if self._mode == "constant":
            self.value = 0.0 if value is None else value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not self._zero:
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name, dims, mode, zero=False):
    if mode == "constant" and not zero:
        init = lambda self, padding, value: _PadNd.__init__(self, padding, value)  # noqa: E731
    else:
        init = lambda self, padding: _PadNd.__init__(self, padding)  # noqa: E731
    return type(name, (_PadNd,), {"_dims": dims, "_mode": mode, "_zero": zero, "__init__": init})


ConstantPad1d, ConstantPad2d, ConstantPad3d = (_pad_class(f"ConstantPad{d}d", d, "constant") for d in (1, 2, 3))
ZeroPad1d, ZeroPad2d, ZeroPad3d = (_pad_class(f"ZeroPad{d}d", d, "constant", True) for d in (1, 2, 3))
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = (_pad_class(f"ReflectionPad{d}d", d, "reflect") for d in (1, 2, 3))
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = (_pad_class(f"ReplicationPad{d}d", d, "replicate")
                                                        for d in (1, 2, 3))
CircularPad1d, CircularPad2d, CircularPad3d = (_pad_class(f"CircularPad{d}d", d, "circular") for d in (1, 2, 3))
