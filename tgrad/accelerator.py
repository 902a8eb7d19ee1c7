"""``tgrad.accelerator``, as ``torch.accelerator``: the one accelerator tgrad runs on is CUDA (its
kernels are Triton's), so these answer for CUDA and say "none" without a GPU."""
from __future__ import annotations

import contextlib

import torch as _torch

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "synchronize", "device_index"]


def is_available() -> bool:
    return _torch.cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``torch.device("cuda")`` when a GPU is there, else None (tgrad has no other accelerator)."""
    return _torch.device("cuda") if _torch.cuda.is_available() else None


def device_count() -> int:
    return _torch.cuda.device_count() if _torch.cuda.is_available() else 0


def current_device_index() -> int:
    if not _torch.cuda.is_available():
        raise RuntimeError("tgrad.accelerator: no accelerator is available (tgrad runs on CUDA GPUs)")
    return _torch.cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device) -> None:
    if not _torch.cuda.is_available():
        raise RuntimeError("tgrad.accelerator: no accelerator is available (tgrad runs on CUDA GPUs)")
    _torch.cuda.set_device(device)


set_device_idx = set_device_index


def synchronize(device=None) -> None:
    """Wait for the accelerator's queued work; nothing to wait for without one."""
    if _torch.cuda.is_available():
        _torch.cuda.synchronize(device)


@contextlib.contextmanager
def device_index(device):
    """Make ``device`` (an index, or None for no change) current inside the block."""
    if device is None or not _torch.cuda.is_available():
        yield
        return
    prev = _torch.cuda.current_device()
    _torch.cuda.set_device(device)
    try:
        yield
    finally:
        _torch.cuda.set_device(prev)
