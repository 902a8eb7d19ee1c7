"""``Linear``: y = x W^T + b, with W of shape (out_features, in_features); ``Identity``.

Default initialisation is PyTorch's: W ~ U[-1/sqrt(in), 1/sqrt(in)] (``kaiming_uniform_`` with
a = sqrt(5)) and b ~ U[-1/sqrt(in), 1/sqrt(in)]."""
from __future__ import annotations

import math

import tgrad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Bilinear", "Identity", "Linear"]


def _reset_weight_and_bias(weight, bias):
    """PyTorch's default for Linear and Conv: kaiming_uniform_(a=sqrt(5)) for the weight and
    U[-1/sqrt(fan_in), 1/sqrt(fan_in)] for the bias (0 when fan_in is 0)."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def _weight_and_bias(module, weight_shape, bias_size, bias, device, dtype):
    """Registers ``module.weight`` of ``weight_shape`` and ``module.bias`` of ``bias_size`` (None
    without ``bias``), then initialises them with the module's ``reset_parameters``."""
    module.weight = Parameter(tgrad.empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(tgrad.empty(bias_size, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        _weight_and_bias(self, (out_features, in_features), out_features, bias, device, dtype)

    def reset_parameters(self):
        _reset_weight_and_bias(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1^T W x2 + b with W (out, in1, in2); W and b ~ U[-1/sqrt(in1), 1/sqrt(in1)] (PyTorch's)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias, device, dtype)

    def reset_parameters(self):
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input
