"""``tgrad.cpu.amp``, as ``torch.cpu.amp``: the deprecated spellings of ``tgrad.amp``'s
``autocast("cpu")`` and ``GradScaler("cpu")``, with PyTorch's FutureWarnings."""
from __future__ import annotations

from .. import _dtype
from ..amp.deprecated import device_amp

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_amp("cpu", _dtype.bfloat16)
