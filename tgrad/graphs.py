"""Capture a block of tgrad work -- typically a whole training step -- once, then replay it.

PyTorch's CUDA-graph API, on both of tgrad's devices::

    g = tgrad.graphs.Graph("cpu")          # or tgrad.cuda.CUDAGraph() / Graph("cuda")
    for _ in range(3):                     # warm up: optimizer state, compiled kernels
        step()
    opt.zero_grad(set_to_none=True)
    with tgrad.graphs.graph(g):            # tgrad.cuda.graph(g) is the same context
        loss = step()                      # forward, backward, optimizer.step()
    for x, y in batches:
        static_x.copy_(x); static_y.copy_(y)
        g.replay()                         # the whole step again; loss now holds its loss

On CUDA the block becomes a CUDA graph (``replay`` is one driver call); on the CPU it is a
recording of the interpreted launches and the storage ops between them (see
``tgrad/kernels/capture.py``), replayed without Python autograd, argument packing or allocation.
The rules are PyTorch's: inputs are fed by copying into the tensors the capture used, host values
(Python numbers, step counts kept on the host, ``.item()``) are frozen, and optimizers need
``capturable=True`` (Adam, AdamW, RMSprop) and at least one step before capture. Random numbers
from the default generator (``rand``, ``dropout`` ...) are graph-safe, as in PyTorch: captured
kernels read the Philox key and base counter from a small device tensor that ``replay()`` sets
from the generator (and advances it past the graph's draws), so each replay draws what the same
block run eagerly would have drawn.

A capture belongs to the thread that runs it (as a CUDA capture belongs to its stream): other
threads' work is neither recorded nor disturbed, and two threads can capture two graphs at once.
A capture that raises, in ``capture_begin``, in the block or in ``capture_end``, leaves nothing
behind: no recording, no capturing generator, no half-held graph.
"""
from __future__ import annotations

import threading
from collections import Counter

import torch

from .kernels.runtime import launch as _launch
from .kernels.runtime.capture import Recording, is_capturing
from .kernels.runtime.launch import launch_counts
from .kernels.random.philox import set_philox_state
from .ops.random import GraphDraws, default_generator

__all__ = ["Graph", "graph", "is_capturing"]


class Graph:
    """One captured block. ``device``: where its work runs (default: CUDA when available)."""

    def __init__(self, device=None):
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("CUDA graphs need a CUDA device, and none is available; capture CPU work with "
                                   "tgrad.graphs.Graph('cpu')")
            self._cuda_graph = torch.cuda.CUDAGraph()
        elif self.device.type != "cpu":
            raise ValueError(f"graphs capture CPU or CUDA work, got device {self.device}")
        self._recording = None
        self._capture = None  # the open capture: (torch.cuda.graph context or None, its launch Counter or None,
        # the capturing thread)
        self._draws = None  # the default generator's draws in the capture (GraphDraws), if any
        self.launches: Counter = Counter()  # kernel name -> launches one replay makes

    @property
    def captured(self) -> bool:
        return bool(self.launches) or self._recording is not None and bool(self._recording.steps)

    def capture_begin(self, pool=None, stream=None, capture_error_mode="global"):
        if self._capture is not None:
            raise RuntimeError("this graph is already capturing")
        if self.captured:
            raise RuntimeError("this graph already holds a capture; call reset() before capturing again")
        if default_generator.graph_draws is not None:
            raise RuntimeError("another graph is capturing: captures cannot be nested")
        # set before the capture starts (not part of it); replays set it again themselves
        state = torch.empty(2, dtype=torch.int64, device=self.device)
        set_philox_state(state, default_generator.initial_seed(), default_generator.offset)
        default_generator.graph_draws = GraphDraws(state)
        cuda_capture = counter = None
        try:
            if self.device.type == "cuda":
                cuda_capture = torch.cuda.graph(self._cuda_graph, pool=pool, stream=stream,
                                                capture_error_mode=capture_error_mode)
                cuda_capture.__enter__()
                counter = Counter()
                _launch.captures.cuda.append(counter)
            else:
                self._recording = Recording()
                self._recording.begin()
        except BaseException:
            default_generator.graph_draws = None
            self._recording = None
            raise
        self._capture = (cuda_capture, counter, threading.get_ident())

    def capture_end(self, exc_info=(None, None, None)):
        if self._capture is None:
            raise RuntimeError("this graph is not capturing: call capture_begin() first")
        cuda_capture, counter, thread = self._capture
        if thread != threading.get_ident():
            raise RuntimeError("a graph capture must end on the thread that began it")
        self._capture = None
        draws, default_generator.graph_draws = default_generator.graph_draws, None
        default_generator.offset += draws.used  # the capture's draws consumed these counters
        self._draws = draws if draws.used else None
        try:
            if cuda_capture is not None:
                _launch.captures.cuda[:] = [c for c in _launch.captures.cuda if c is not counter]
                cuda_capture.__exit__(*exc_info)
            else:
                self._recording.end()
        except BaseException:
            self.reset()
            raise
        if exc_info[0] is not None:
            self.reset()  # a failed capture holds nothing replayable
            return
        self.launches = Counter(counter if counter is not None else self._recording.launches)
        if not self.captured:
            raise RuntimeError("the graph captured no work: nothing inside the capture launched a kernel")

    def replay(self):
        """Run the captured work again, on the tensors the capture used."""
        if self._capture is not None:
            raise RuntimeError("a graph cannot be replayed while it is being captured")
        if not self.captured:
            raise RuntimeError("this graph holds no capture: capture a block with `with tgrad.graphs.graph(g):` "
                               "before replay()")
        if self._draws is not None:  # the draws of this replay: the generator's next counters
            set_philox_state(self._draws.state, default_generator.initial_seed(), default_generator.offset)
            default_generator.offset += self._draws.used
        if self.device.type == "cuda":
            self._cuda_graph.replay()
            launch_counts.update(self.launches)
        else:
            self._recording.replay()

    def reset(self):
        """Drop the capture (and the memory it holds)."""
        if self._capture is not None:
            raise RuntimeError("a graph cannot be reset while it is being captured")
        if self.device.type == "cuda":
            self._cuda_graph.reset()
        self._recording = None
        self._draws = None
        self.launches = Counter()

    def pool(self):
        """The memory pool a CUDA capture allocated from (to share with another capture), as in PyTorch."""
        return self._cuda_graph.pool() if self.device.type == "cuda" else None

    def __repr__(self):
        state = f"{sum(self.launches.values())} launches" if self.captured else "empty"
        return f"Graph(device={self.device}, {state})"


class graph:  # noqa: N801 - a context manager named as PyTorch's torch.cuda.graph
    """``with graph(g): ...`` captures the block into ``g`` (a :class:`Graph`)."""

    def __init__(self, cuda_graph: Graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, Graph):
            raise TypeError(f"graph() takes a tgrad Graph (tgrad.graphs.Graph or tgrad.cuda.CUDAGraph), "
                            f"got {type(cuda_graph).__name__}")
        self.graph = cuda_graph
        self.options = dict(pool=pool, stream=stream, capture_error_mode=capture_error_mode)

    def __enter__(self):
        self.graph.capture_begin(**self.options)

    def __exit__(self, *exc_info):
        self.graph.capture_end(exc_info)
        return False
