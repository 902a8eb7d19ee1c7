"""Resampling modules: ``Upsample`` (and ``UpsamplingNearest2d`` / ``UpsamplingBilinear2d``),
``PixelShuffle`` / ``PixelUnshuffle`` and ``Unfold`` / ``Fold``, over the functional ops of the
same names (``nn/functional/resample.py``)."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .wrapper import FunctionalWrapper

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "Unfold",
           "Fold"]


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


class PixelShuffle(FunctionalWrapper):
    _fn = staticmethod(F.pixel_shuffle)

    def __init__(self, upscale_factor):
        super().__init__(upscale_factor=upscale_factor)


class PixelUnshuffle(FunctionalWrapper):
    _fn = staticmethod(F.pixel_unshuffle)

    def __init__(self, downscale_factor):
        super().__init__(downscale_factor=downscale_factor)


class Unfold(FunctionalWrapper):
    _fn = staticmethod(F.unfold)

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride)


class Fold(FunctionalWrapper):
    _fn = staticmethod(F.fold)

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(output_size=output_size, kernel_size=kernel_size, dilation=dilation, padding=padding,
                         stride=stride)
