"""``ConvTranspose1d`` and ``ConvTranspose2d``: the transposed convolution (the input gradient of
a convolution) with stride, padding, output_padding, groups and dilation; weight of shape
(in_channels, out_channels / groups, *kernel_size), initialised as PyTorch's. ``forward`` takes an
optional ``output_size`` that picks the output_padding, as PyTorch's does."""
from __future__ import annotations

import tgrad
from .. import functional as F
from ..parameter import Parameter
from .conv import _ntuple
from .linear import _reset_weight_and_bias
from .module import Module

__all__ = ["ConvTranspose1d", "ConvTranspose2d"]


class _ConvTransposeNd(Module):
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.groups, self.padding_mode, self.transposed = groups, padding_mode, True
        self.weight = Parameter(tgrad.empty(in_channels, out_channels // groups, *self.kernel_size,
                                            device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tgrad.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_weight_and_bias(self.weight, self.bias)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._dims
        batched = input.ndim == n + 2
        non_spatial = 2 if batched else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                             f"{non_spatial + n} elements (got {len(output_size)})")
        spatial = input.shape[input.ndim - n:]
        lo = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1)
              + 1 for d in range(n)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(n)]
        if any(not lo[d] <= output_size[d] <= hi[d] for d in range(n)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {lo} to {hi} "
                             f"(for an input of {spatial})")
        return tuple(output_size[d] - lo[d] for d in range(n))

    def forward(self, input, output_size=None):
        fn = F.conv_transpose1d if self._dims == 1 else F.conv_transpose2d
        return fn(input, self.weight, self.bias, self.stride, self.padding, self._output_padding(input, output_size),
                  self.groups, self.dilation)

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
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """Input (N, C_in, L) or (C_in, L) -> (N, C_out, (L-1)s - 2p + d(k-1) + output_padding + 1)."""
    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Input (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out), each as for ConvTranspose1d."""
    _dims = 2
