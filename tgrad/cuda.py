"""``tgrad.cuda``: the parts of ``torch.cuda`` a tgrad user reaches for (device queries, graphs)."""
from __future__ import annotations

import torch as _torch

from . import graphs  # noqa: F401  (tgrad.cuda.graphs: the capture module, as torch.cuda.graphs)
from .graphs import Graph, graph

__all__ = ["is_available", "device_count", "synchronize", "CUDAGraph", "graph", "graph_pool_handle", "graphs"]

is_available = _torch.cuda.is_available
device_count = _torch.cuda.device_count


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
