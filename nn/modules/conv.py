"""``Conv1d`` and ``Conv2d``: cross-correlation with stride, padding, dilation and groups; weight of
shape (out_channels, in_channels / groups, *kernel_size), initialised as PyTorch's (see ``linear``).
A ``padding_mode`` other than 'zeros' pads the input with ``F.pad`` (reflect, replicate, circular)
and convolves without padding, as PyTorch does."""
from __future__ import annotations

import tgrad
from .. import functional as F
from ..parameter import Parameter
from .linear import _reset_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(x, n):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


class _ConvNd(Module):
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'replicate', 'circular', 'reflect'}}, but got "
                             f"padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.dilation = _ntuple(dilation, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        self.output_padding, self.transposed = (0,) * n, False
        # F.pad's amounts (last dim first, before/after) for the non-zeros padding modes
        if padding == "same":
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
        elif padding == "valid":
            pads = [0, 0] * n
        else:
            pads = [p for p in reversed(self.padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = pads
        self.weight = Parameter(tgrad.empty(out_channels, in_channels // groups, *self.kernel_size,
                                            device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tgrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_weight_and_bias(self.weight, self.bias)

    def _conv(self, input, weight, bias, padding):
        return (F.conv1d if self._dims == 1 else F.conv2d)(input, weight, bias, self.stride, padding,
                                                              self.dilation, self.groups)

    def forward(self, input):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(padded, self.weight, self.bias, 0)
        return self._conv(input, self.weight, self.bias, self.padding)

    def extra_repr(self):
        n = self._dims
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """Input (N, C_in, L) or (C_in, L) -> (N, C_out, L_out)."""
    _dims = 1


class Conv2d(_ConvNd):
    """Input (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out)."""
    _dims = 2
