"""``BatchNorm1d``/``BatchNorm2d``: normalise each channel (dim 1) over the batch (and spatial dims).

Training uses the batch statistics and updates the running ones,
``running = (1 - momentum) running + momentum * batch`` (unbiased variance), with
``momentum=None`` meaning a cumulative average over ``num_batches_tracked``; evaluation uses the
running statistics. weight = 1, bias = 0, running_mean = 0, running_var = 1 (PyTorch's)."""
from __future__ import annotations

import tgrad
from .. import functional as F
from .. import init
from .normalization import AffineNorm

__all__ = ["BatchNorm1d", "BatchNorm2d"]


class _BatchNorm(AffineNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._affine_parameters(num_features, affine, affine, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", tgrad.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", tgrad.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tgrad.tensor(0, dtype=tgrad.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self):
        self.reset_running_stats()
        super().reset_parameters()

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # checkpoints written before the buffer existed lack it: keep the current count (PyTorch's
        # rule for state dicts without version metadata, which tgrad's never carry)
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _check_input_dim(self, input):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with tgrad.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch_stats, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Input (N, C) or (N, C, L)."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Input (N, C, H, W)."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")
