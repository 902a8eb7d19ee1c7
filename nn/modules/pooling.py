"""Pooling modules over their ``nn.functional`` namesakes: ``MaxPool1d/2d`` and ``AvgPool1d/2d``
(window max / mean; ``stride`` defaults to the kernel size) and the adaptive pools
``AdaptiveAvgPool1d/2d``, ``AdaptiveMaxPool1d/2d`` (output size fixed, windows
[floor(i L/O), ceil((i+1) L/O))); ``MaxUnpool1d/2d``, the partial inverses of the max pools."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .wrapper import FunctionalWrapper

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d", "MaxUnpool2d"]


def _single(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class _Window(Module):
    """A pooling window: ``kernel_size``, ``stride`` (the kernel size when None), ``padding`` and
    ``ceil_mode``, each kept through ``fit`` (the 1-d average pool's makes them 1-tuples)."""

    def __init__(self, kernel_size, stride, padding, ceil_mode, fit=lambda v: v):
        super().__init__()
        self.kernel_size = fit(kernel_size)
        self.stride = fit(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode = fit(padding), ceil_mode


class _MaxPoolNd(_Window):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation, self.return_indices = dilation, return_indices

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class _AvgPoolNd(_Window):
    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, _single)
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptivePool(FunctionalWrapper):
    _max = False

    def __init__(self, output_size, return_indices=False):
        if self._max:
            super().__init__(output_size=output_size, return_indices=return_indices)
        else:
            super().__init__(output_size=output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveMaxPool1d(_AdaptivePool):
    _fn, _max = staticmethod(F.adaptive_max_pool1d), True


class AdaptiveMaxPool2d(_AdaptivePool):
    _fn, _max = staticmethod(F.adaptive_max_pool2d), True


class _MaxUnpoolNd(Module):
    _fn = None
    _tuple = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = type(self)._tuple(kernel_size)
        self.stride = type(self)._tuple(stride if stride is not None else kernel_size)
        self.padding = type(self)._tuple(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool1d)
    _tuple = staticmethod(_single)


class MaxUnpool2d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool2d)
    _tuple = staticmethod(lambda x: tuple(x) if isinstance(x, (tuple, list)) else (x, x))
