"""``tgrad.cuda.amp``, as ``torch.cuda.amp``: the deprecated spellings of ``tgrad.amp``'s
``autocast("cuda")`` and ``GradScaler("cuda")``, with PyTorch's FutureWarnings."""
from __future__ import annotations

from .. import _dtype
from ..amp.deprecated import device_amp

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_amp("cuda", _dtype.float16)
