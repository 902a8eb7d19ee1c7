"""``tgrad.amp``, as ``torch.amp``: ``autocast`` (lower-precision matmuls and convolutions,
float32 losses, per device and thread) and ``GradScaler`` (loss scaling)."""
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
