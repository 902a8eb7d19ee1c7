"""``tgrad.cuda``: the parts of ``torch.cuda`` a tgrad user reaches for (device queries, graphs)."""
from __future__ import annotations

import torch as _torch

from . import graphs  # noqa: F401  (tgrad.cuda.graphs: the capture module, as torch.cuda.graphs)
from .graphs import Graph, graph
from .ops.random import manual_seed as _seed

__all__ = ["is_available", "device_count", "synchronize", "manual_seed", "manual_seed_all", "empty_cache",
           "current_device", "get_device_name", "CUDAGraph", "graph", "graph_pool_handle", "graphs"]

is_available = _torch.cuda.is_available
device_count = _torch.cuda.device_count


def manual_seed(seed):
    """Seed the generator CUDA tensors draw from (tgrad's one Philox generator), as torch.cuda.manual_seed;
    silently ignored without CUDA, as in PyTorch, so CPU random streams are not reseeded."""
    if _torch.cuda.is_available():
        _seed(seed)


manual_seed_all = manual_seed


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
