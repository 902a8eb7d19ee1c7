"""``tgrad.cpu``, as ``torch.cpu``: the CPU as a device (always there, one of it) and ``amp``."""
from __future__ import annotations

from . import amp  # noqa: F401

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """CPU work is done when its call returns: nothing to wait for."""
