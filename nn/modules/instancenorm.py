"""``InstanceNorm1d`` / ``InstanceNorm2d``: per-sample, per-channel normalisation over the positions,
with PyTorch's parameters (weight = 1, bias = 0), buffers and defaults."""
from __future__ import annotations

import tgrad
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["InstanceNorm1d", "InstanceNorm2d"]


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
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                             momentum, self.eps)
        return y if batched else y.squeeze(0)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _dims = 3


class InstanceNorm2d(_InstanceNorm):
    _dims = 4
