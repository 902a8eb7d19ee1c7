"""``tgrad.cuda.amp``, as ``torch.cuda.amp``: the deprecated spellings of ``tgrad.amp``'s
``autocast("cuda")`` and ``GradScaler("cuda")``, with PyTorch's FutureWarnings."""
from __future__ import annotations

import warnings

from .. import _dtype
from ..amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):
    def __init__(self, enabled=True, dtype=_dtype.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
