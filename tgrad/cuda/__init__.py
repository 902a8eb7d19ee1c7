"""``tgrad.cuda``: the parts of ``torch.cuda`` a tgrad user reaches for (device queries, graphs)."""
from __future__ import annotations

import torch as _torch

from .. import graphs  # noqa: F401  (tgrad.cuda.graphs: the capture module, as torch.cuda.graphs)
from ..graphs import Graph, graph
from ..ops.random import default_generator, manual_seed as _seed
from . import amp  # noqa: F401  (torch.cuda.amp: the deprecated autocast and GradScaler)

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "manual_seed_all", "empty_cache",
           "current_device", "get_device_name", "CUDAGraph", "graph", "graph_pool_handle", "graphs", "get_rng_state",
           "set_rng_state", "get_rng_state_all", "set_rng_state_all", "seed", "seed_all", "initial_seed", "amp"]

is_available = _torch.cuda.is_available
device_count = _torch.cuda.device_count


def manual_seed(seed):
    """Seed the generator CUDA tensors draw from (tgrad's one Philox generator), as torch.cuda.manual_seed;
    silently ignored without CUDA, as in PyTorch, so CPU random streams are not reseeded."""
    if _torch.cuda.is_available():
        _seed(seed)


manual_seed_all = manual_seed


def _need_cuda(what):
    if not _torch.cuda.is_available():
        raise RuntimeError(f"torch.cuda.{what}() needs a CUDA device, and none is available")


def seed():
    """Seed CUDA draws non-deterministically (a no-op without CUDA, as in PyTorch)."""
    if _torch.cuda.is_available():
        default_generator.seed()


seed_all = seed


def initial_seed():
    _need_cuda("initial_seed")
    return default_generator.initial_seed()


def get_rng_state(device="cuda"):
    """The state CUDA tensors draw from (tgrad's one generator: the same as ``tgrad.get_rng_state()``)."""
    _need_cuda("get_rng_state")
    return default_generator.get_state()


def set_rng_state(new_state, device="cuda"):
    _need_cuda("set_rng_state")
    default_generator.set_state(new_state)


def get_rng_state_all():
    _need_cuda("get_rng_state_all")
    return [default_generator.get_state() for _ in range(_torch.cuda.device_count())]


def set_rng_state_all(new_states):
    _need_cuda("set_rng_state_all")
    for state in new_states:
        default_generator.set_state(state)


def empty_cache():
    if _torch.cuda.is_available():
        _torch.cuda.empty_cache()


def current_device():
    return _torch.cuda.current_device()


def get_device_name(device=None):
    return _torch.cuda.get_device_name(device)


def synchronize(device=None):
    """Wait for the device's queued work (a no-op without CUDA, so CPU code can call it too)."""
    if _torch.cuda.is_available():
        _torch.cuda.synchronize(device)


class CUDAGraph(Graph):
    """A CUDA graph of tgrad work, as ``torch.cuda.CUDAGraph``; capture with ``tgrad.cuda.graph``."""

    def __init__(self):
        super().__init__("cuda")


def graph_pool_handle():
    """A memory-pool handle two captures can share, as ``torch.cuda.graph_pool_handle``."""
    if not _torch.cuda.is_available():
        raise RuntimeError("graph_pool_handle() needs a CUDA device, and none is available")
    return _torch.cuda.graph_pool_handle()
