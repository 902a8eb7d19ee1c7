"""Resampling modules: ``Upsample`` (and ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d``),
``PixelShuffle`` / ``PixelUnshuffle``, ``Unfold`` / ``Fold``, the channel dropouts ``Dropout1d`` /
``Dropout2d`` and the padding layers (``ZeroPad2d``, ``ReflectionPad1d``, ...), over the functional
ops of the same names."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "Unfold",
           "Fold", "Dropout1d", "Dropout2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d",
           "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self):
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class _ChannelDropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_ChannelDropout):
    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_ChannelDropout):
    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


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
