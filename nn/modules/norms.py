"""``RMSNorm``, ``GroupNorm``, ``InstanceNorm1d`` / ``InstanceNorm2d``, with PyTorch's parameters
(weight = 1, bias = 0), buffers and defaults, on ``nn/functional_norm.py``."""
from __future__ import annotations

import numbers

import tgrad
from .. import functional_norm as FN
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d"]


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape, self.eps = tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tgrad.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return FN.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(tgrad.empty(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(tgrad.empty(num_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, x):
        return FN.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _InstanceNorm(Module):
    _dims = 3

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = dict(device=device, dtype=dtype)
        if affine:
            self.weight = Parameter(tgrad.ones(num_features, **kw))
            self.bias = Parameter(tgrad.zeros(num_features, **kw))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", tgrad.zeros(num_features, **kw))
            self.register_buffer("running_var", tgrad.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked", tgrad.tensor(0, dtype=tgrad.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x):
        d = self._dims
        if x.ndim not in (d - 1, d):
            raise ValueError(f"expected {d - 1}D or {d}D input (got {x.ndim}D input)")
        batched = x.ndim == d
        if not batched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{x.shape[1]}.")
        use_input_stats = self.training or not self.track_running_stats
        # as PyTorch: num_batches_tracked is never advanced, and momentum=None means 0 (no update)
        momentum = self.momentum if self.momentum is not None else 0.0
        y = FN.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                             momentum, self.eps)
        return y if batched else y.squeeze(0)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _dims = 3


class InstanceNorm2d(_InstanceNorm):
    _dims = 4
