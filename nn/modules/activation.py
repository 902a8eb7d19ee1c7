"""Activation modules, each a thin wrapper over its ``nn.functional`` namesake, with PyTorch's
arguments and reprs: ReLU max(x, 0); LeakyReLU x or slope x; GELU x Phi(x) (or its tanh
approximation); SiLU x sigmoid(x); Tanh; Sigmoid; Softmax exp(x) / sum exp(x) along ``dim``;
LogSoftmax its log; ELU, Softplus, PReLU (a learned slope per channel), Mish, Hardswish, Softmax2d,
Softmin, GLU; ReLU6, SELU, CELU, Hardtanh, Hardsigmoid, LogSigmoid, Softsign, Tanhshrink,
Threshold, Hardshrink, Softshrink."""
from __future__ import annotations

import warnings

import tgrad
from .. import functional as F
from ..parameter import Parameter
from .module import Module
from .wrapper import FunctionalWrapper

__all__ = ["ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "ELU", "Softplus",
           "PReLU", "Mish", "Hardswish", "Softmax2d", "Softmin", "GLU", "Threshold", "Hardtanh", "ReLU6", "SELU",
           "CELU", "Hardsigmoid", "LogSigmoid", "Softsign", "Tanhshrink", "Hardshrink", "Softshrink", "RReLU"]


class _InplaceOnly(FunctionalWrapper):
    """An activation whose only argument is ``inplace``."""

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class _NoArgument(Module):
    """An activation without arguments."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class _AlongDim(FunctionalWrapper):
    """An activation along one dim (``dim``); ``_stacklevel`` for the warning of an implicit dim."""
    _stacklevel = None

    def __init__(self, dim=None):
        super().__init__(dim=dim)

    def forward(self, input):
        if self._stacklevel is None:
            return super().forward(input)
        return type(self)._fn(input, self.dim, _stacklevel=self._stacklevel)


class ReLU(_InplaceOnly):
    _fn = staticmethod(F.relu)


class SiLU(_InplaceOnly):
    _fn = staticmethod(F.silu)


class Mish(_InplaceOnly):
    _fn = staticmethod(F.mish)


class SELU(_InplaceOnly):
    _fn = staticmethod(F.selu)


class Hardswish(_InplaceOnly):
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):  # PyTorch prints Hardswish() even in place
        return ""


class Hardsigmoid(_InplaceOnly):
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):  # PyTorch prints Hardsigmoid() even in place
        return ""


class Tanh(_NoArgument):
    _fn = staticmethod(F.tanh)


class Sigmoid(_NoArgument):
    _fn = staticmethod(F.sigmoid)


class LogSigmoid(_NoArgument):
    _fn = staticmethod(F.logsigmoid)


class Softsign(_NoArgument):
    _fn = staticmethod(F.softsign)


class Tanhshrink(_NoArgument):
    _fn = staticmethod(F.tanhshrink)


class Softmax(_AlongDim):
    _fn = staticmethod(F.softmax)


class LogSoftmax(_AlongDim):
    _fn = staticmethod(F.log_softmax)


class Softmin(_AlongDim):
    _fn, _stacklevel = staticmethod(F.softmin), 5


class GLU(_AlongDim):
    _fn = staticmethod(F.glu)

    def __init__(self, dim=-1):
        super().__init__(dim)


class LeakyReLU(FunctionalWrapper):
    _fn = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(negative_slope=negative_slope, inplace=inplace)


class GELU(FunctionalWrapper):
    _fn = staticmethod(F.gelu)

    def __init__(self, approximate="none"):
        super().__init__(approximate=approximate)


class ELU(FunctionalWrapper):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class Softplus(FunctionalWrapper):
    _fn = staticmethod(F.softplus)

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(beta=beta, threshold=threshold)


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(tgrad.full((num_parameters,), float(init), device=device, dtype=dtype))

    def reset_parameters(self):
        with tgrad.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class Threshold(FunctionalWrapper):
    _fn = staticmethod(F.threshold)

    def __init__(self, threshold, value, inplace=False):
        super().__init__(threshold=threshold, value=value, inplace=inplace)


class Hardtanh(FunctionalWrapper):
    _fn = staticmethod(F.hardtanh)

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class CELU(FunctionalWrapper):
    _fn = staticmethod(F.celu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class _Shrink(FunctionalWrapper):
    def __init__(self, lambd=0.5):
        super().__init__(lambd=lambd)

    def extra_repr(self):  # PyTorch prints the bare value
        return str(self.lambd)


class Hardshrink(_Shrink):
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    _fn = staticmethod(F.softshrink)


class RReLU(Module):
    """x where x > 0, else a x: a ~ U(lower, upper) per element in training, (lower + upper) / 2 in eval."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
