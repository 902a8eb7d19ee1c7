"""Launching a Triton kernel on the device its tensors live on.

CUDA tensors run the compiled kernel. CPU tensors run the *same* ``@triton.jit`` function through
Triton's interpreter (``runtime/interpreter.py``), with nothing for the user to set, and a launch
seen before replays as straight-line numpy recorded from that interpretation (the CPU executor,
``runtime/executor.py``): the interpreter's frontend (type checks, broadcasting decisions, tensor
construction; 0.3-2 ms a launch) runs once per signature, not once per launch. The executor owns a
CPU launch's hit (replay) and miss (interpret, record); this module only routes a launch to it.

The interpreter and the executor need Triton's private names (``runtime/triton_private.py``, which
checks the installed version); they are imported on the first CPU launch, so a CUDA program never
loads them.
"""
from __future__ import annotations

import threading
from collections import Counter

import torch
from triton.runtime.jit import JITFunction

from .counters import growth

__all__ = ["launch", "launch_site", "site_replayer", "launch_counts", "count_launches", "launch_observers"]

_lock = threading.RLock()
launch_counts: Counter = Counter()  # kernel name -> launches since import (or since reset)
# callables (kernel, grid, args, meta) told of every launch before it runs: profilers, and the
# test that compiles every launched configuration for a CUDA target on a machine without a GPU
launch_observers: list = []


class _Captures(threading.local):
    """This thread's graph captures under way. A capture belongs to the thread that began it (as a
    CUDA capture belongs to its stream): other threads' launches are neither recorded nor refused."""

    def __init__(self):
        self.recorders: list = []  # CPU recordings (runtime.capture.Recording), innermost last
        self.cuda: list = []  # CUDA captures: a Counter of each one's launches, innermost last


captures = _Captures()
_cpu_executor = None  # runtime.executor, imported on the first CPU launch


def _executor():
    global _cpu_executor
    if _cpu_executor is None:
        from . import executor
        _cpu_executor = executor
    return _cpu_executor


def _device_of(args) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    raise ValueError("a kernel launch needs at least one tensor argument")


def launch(kernel: JITFunction, grid, *args, keep_alive=(), **meta):
    """Run ``kernel[grid](*args, **meta)`` compiled on CUDA or interpreted on the CPU.

    ``keep_alive``: tensors the kernel reaches through addresses stored in another tensor (a
    pointer table); a graph recording holds them, as it holds the arguments, for its replays."""
    return _launch(kernel, grid, args, meta, keep_alive)


def _launch(kernel, grid, args, meta, keep_alive=(), site=None):
    launch_counts[kernel.__name__] += 1
    for observe in launch_observers:
        observe(kernel, grid, args, meta)
    device = _device_of(args)
    ours = captures
    if device.type == "cpu":
        if ours.cuda:  # it would run now and never again: a CUDA graph replays CUDA work only
            raise RuntimeError(f"a CUDA graph capture cannot record {kernel.__name__} on the CPU: a graph replays "
                               "the work of one device; capture CPU work with tgrad.graphs.Graph('cpu')")
        # in a graph capture the launch is the block's work, not the torch calls it makes on the way
        recording = ours.recorders[-1] if ours.recorders else None
        if recording is not None:
            recording.paused = True
        try:
            step = _executor().run(kernel, grid, args, meta, keep_alive, recording is not None, site)
        finally:
            if recording is not None:
                recording.paused = False
        if recording is not None:
            recording.add_launch(kernel.__name__, step, (args, keep_alive))
        return None
    if ours.recorders:
        raise RuntimeError(f"a CPU graph capture cannot record {kernel.__name__} on {device}: a graph replays the "
                           "work of one device; capture CUDA work with a CUDA graph (tgrad.cuda.CUDAGraph)")
    if ours.cuda:
        ours.cuda[-1][kernel.__name__] += 1
    with torch.cuda.device(device):
        return kernel[grid](*args, **meta)


def launch_site(kernel: JITFunction, site, tensors, build, keep_alive=()):
    """``launch(kernel, grid, *args, **meta)`` with ``(grid, args, meta) = build()``, for a call site
    that knows its launch's arguments from less: ``site`` (hashable) must determine every argument
    except the addresses of ``tensors`` (so it includes their dtypes and whatever shapes, strides
    and scalars the arguments derive from), and every tensor argument must be one of ``tensors``.
    On the CPU the executor takes the site, its tensors and ``build`` together: a site seen before
    replays its trace without building or binding arguments, anything else builds them once and
    runs as ``launch`` does (``runtime/executor.py``: ``run_site``). Anything out of the ordinary
    (a graph capture, an observer) builds the arguments and launches as ``launch`` does.
    ``keep_alive``: as ``launch``'s (tensors reached through a pointer table)."""
    ours = captures
    if not launch_observers and not ours.recorders and not ours.cuda and tensors[0].is_cpu:
        launch_counts[kernel.__name__] += 1
        _executor().run_site(kernel, _aliased(site, tensors), tensors, build, keep_alive)
        return None
    grid, args, meta = build()
    return _launch(kernel, grid, args, meta, keep_alive)


def _aliased(site, tensors):
    ids = [id(t) for t in tensors]
    if len(set(ids)) != len(ids):  # the same tensor twice (x * x): which positions alias is part of the site
        return site, tuple(ids.index(i) for i in ids)
    return site


def site_replayer(kernel: JITFunction, site, tensors):
    """For a ``launch_site`` site the CPU executor has planned (``runtime/sites.py``), with
    ``tensors`` as they alias now: ``replay(tensors) -> bool``, a launch of the site that replays
    its trace and counts it as ``launch_site`` would (True), or runs nothing (False: a graph
    capture, an observer, the executor's switches; the caller then calls ``launch_site``). None
    while the site has no plan. For callers that decided the whole launch from metadata once (the
    same dtypes, shapes, strides and aliasing every call): no site key is built or looked up. None
    too while an observer or a capture is active."""
    if _cpu_executor is None or launch_observers or captures.recorders or captures.cuda:
        return None  # (observed or captured, launch_site does not look for the executor's plans either)
    plan = _cpu_executor.site_plan(kernel, _aliased(site, tensors))
    if plan is None:
        return None
    return plan.bound(launch_observers, captures, launch_counts, kernel.__name__)


def count_launches():
    """``with count_launches() as c: ...`` -> ``c`` is a Counter of kernel name -> launches."""
    return growth(launch_counts)
