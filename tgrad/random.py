"""``tgrad.random``, as ``torch.random``: the default generator's seed and state.

tgrad has one counter-based (Philox) generator, ``default_generator``, for CPU and CUDA tensors
alike; its state is 16 bytes (seed and counter offset), returned and accepted as a uint8 tensor
as PyTorch's ByteTensor states are. Restoring a state reproduces the same draws.
"""
from __future__ import annotations

import contextlib

from .ops.random import Generator, default_generator, initial_seed, manual_seed, seed

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]


def get_rng_state():
    """The default generator's state (a uint8 tensor), for ``set_rng_state``."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore a state from ``get_rng_state``: the draws that followed it are drawn again."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Within the block, draw as you like; on leaving it the generator is back where it was (the
    CPU and every device share tgrad's one generator, so ``devices`` selects nothing more)."""
    if not enabled:
        yield
        return
    saved = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(saved)
