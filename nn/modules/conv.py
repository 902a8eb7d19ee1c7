"""``Conv1d``, ``Conv2d``: cross-correlation with stride, padding, dilation and groups, weight of
shape (out_channels, in_channels / groups, *kernel_size); ``ConvTranspose1d``, ``ConvTranspose2d``:
the transposed convolution (the input gradient of a convolution) with output_padding too, weight of
shape (in_channels, out_channels / groups, *kernel_size). Both initialised as PyTorch's (see
``linear``). A ``padding_mode`` other than 'zeros' pads the input with ``F.pad`` (reflect,
replicate, circular) and convolves without padding, as PyTorch does; ConvTranspose's ``forward``
takes an optional ``output_size`` that picks the output_padding, as PyTorch's does."""
from __future__ import annotations

from .. import functional as F
from .linear import _reset_weight_and_bias, _weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d"]

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(x, n):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,) * n


class _ConvBase(Module):
    """What a convolution and a transposed one share: the checks of the channel groups, the weight
    ((out, in / groups) or (in, out / groups) then the kernel) and the bias, and the repr."""
    _dims, transposed = 2, False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups,
                 bias, padding_mode, device, dtype):
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self._check_padding(padding, padding_mode, stride)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        channels = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        _weight_and_bias(self, (*channels, *self.kernel_size), out_channels, bias, device, dtype)

    def reset_parameters(self):
        _reset_weight_and_bias(self.weight, self.bias)

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


class _ConvNd(_ConvBase):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups, bias,
                         padding_mode, device, dtype)
        n = self._dims
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

    def _check_padding(self, padding, padding_mode, stride):
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, self._dims)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'replicate', 'circular', 'reflect'}}, but got "
                             f"padding_mode={padding_mode!r}")

    def _conv(self, input, weight, bias, padding):
        return (F.conv1d if self._dims == 1 else F.conv2d)(input, weight, bias, self.stride, padding,
                                                              self.dilation, self.groups)

    def forward(self, input):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._conv(padded, self.weight, self.bias, 0)
        return self._conv(input, self.weight, self.bias, self.padding)


class _ConvTransposeNd(_ConvBase):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, groups,
                         bias, padding_mode, device, dtype)

    def _check_padding(self, padding, padding_mode, stride):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')

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


class Conv1d(_ConvNd):
    """Input (N, C_in, L) or (C_in, L) -> (N, C_out, L_out)."""
    _dims = 1


class Conv2d(_ConvNd):
    """Input (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out)."""
    _dims = 2


class ConvTranspose1d(_ConvTransposeNd):
    """Input (N, C_in, L) or (C_in, L) -> (N, C_out, (L-1)s - 2p + d(k-1) + output_padding + 1)."""
    _dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Input (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out), each as for ConvTranspose1d."""
    _dims = 2
