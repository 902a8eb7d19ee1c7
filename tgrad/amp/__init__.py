"""``tgrad.amp``, as ``torch.amp``: gradient scaling for low-precision training."""
from .grad_scaler import GradScaler

__all__ = ["GradScaler"]
