"""The deprecated per-device spellings ``torch.cuda.amp`` and ``torch.cpu.amp``: ``autocast`` and
``GradScaler`` bound to one device, warning as PyTorch warns."""
from __future__ import annotations

import warnings

from . import autocast_mode, grad_scaler

__all__ = ["device_amp"]


def device_amp(device: str, default_dtype):
    """The (autocast, GradScaler) classes of ``torch.<device>.amp``."""
    def deprecated(name):
        warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use `torch.amp.{name}('{device}', "
                      "args...)` instead.", FutureWarning, stacklevel=3)

    class autocast(autocast_mode.autocast):
        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            deprecated("autocast")
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(grad_scaler.GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            deprecated("GradScaler")
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    return autocast, GradScaler

