"""Graph capture: record a block of work (a whole training step) once, replay it many times.

Why: a tgrad training step is a few dozen kernel launches plus the Python that decides them
(autograd bookkeeping, argument packing, allocation). Between steps only the *contents* of the
tensors change, never their addresses, so after one capture the deciding need not be done again.

- CUDA: a CUDA graph. ``torch.cuda.graph`` puts the current stream in capture mode; Triton
  launches on the current stream, so every kernel (and every torch copy/fill) of the block becomes
  a node, and ``replay()`` re-issues all of them with one driver call.
- CPU: a :class:`Recording`. Each launch is recorded as its bound arguments and its replay trace
  (``kernels/runtime/executor.py``: recorded during the capture, so a replayed graph runs no Triton frontend
  at all, only the straight-line numpy of each launch), and each storage op torch runs between
  launches (fill, copy, clone, allocation) is recorded through a ``TorchDispatchMode``; replay runs
  them again in order on the same tensors. A launch whose trace does not hold (a guard on data that
  changed) or that cannot be recorded runs interpreted, as it would outside a graph.

The contract is PyTorch's, on both devices: tensors used or made inside the capture keep their
memory for the graph's life, new inputs are *copied into* the captured input tensors, and host
values read or computed during the capture (Python numbers, ``.item()``, a step count on the host)
are frozen into the graph. Host reads (``.item()``, ``bool(t)``) therefore raise during a CPU
capture, as a CUDA capture would fail on the synchronisation they need. Unlike CUDA, a CPU capture
also *runs* the work once, so its outputs hold real values right after the capture; code should
not rely on that.

A capture belongs to the thread that began it, as a CUDA capture belongs to its stream: the
recordings under way are per thread (``launch.captures``), so another thread's eager work is
neither recorded nor refused, and two threads may capture two graphs at once.
"""
from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode

from . import launch as _launch

__all__ = ["is_capturing", "Recording"]

_captures = _launch.captures  # this thread's recordings under way (innermost last); launch() feeds them


def is_capturing() -> bool:
    """True while this thread captures a graph: work done now is recorded for replay, so host-side
    values (step counts, ``.item()`` reads) would be frozen into the graph."""
    if _captures.recorders:
        return True
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


# aten ops whose output holds no data yet (allocation) or that only read metadata: nothing to replay
_NO_DATA = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "lift", "lift_fresh",
            "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride", "dim",
            "is_same_size", "_has_compatible_shallow_copy_type", "is_pinned"}


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


class _StorageOps(TorchDispatchMode):
    """Records the storage ops torch runs on the CPU during a capture (tgrad's torch calls
    allocate, view, copy and fill; the values come from kernels, which ``launch`` records)."""

    def __init__(self, recording: "Recording"):
        super().__init__()
        self.recording = recording

    # Only the thread's own mode stack: TorchDispatchMode.__enter__/__exit__ also save and restore
    # process-wide flags, which two threads capturing at once would leave set.
    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, *exc):
        _pop_mode()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name == "_local_scalar_dense":
            raise RuntimeError(
                "reading a tensor's value on the host (.item(), .tolist(), bool(), int(), float()) is not allowed "
                "during graph capture: the value would be frozen into the graph and the work that depends on it "
                "would not follow new inputs. Read values after replay(), outside the capture.")
        out = func(*args, **kwargs)
        if self.recording.paused or name in _NO_DATA or func.is_view:
            return out  # a view shares its base's memory: it stays valid with no work on replay
        schema = func._schema
        if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            self.recording.steps.append((func, args, kwargs, None))  # in place (fill_, copy_, out=): rerun
        else:
            # a fresh result (clone, full, _to_copy ...): recompute it and copy it into the captured tensor
            outputs = _tensors(out)
            self.recording.steps.append(_refill(name, args, outputs) or (func, args, kwargs, outputs))
        return out


# fresh results whose replay can write the captured tensor in place, with the same bits: a fill
# with the value the capture used, a copy of the source cloned (no allocation and copy each replay)
_REFILLS = {"full": lambda out, args: (out.fill_, (args[1],)), "ones": lambda out, args: (out.fill_, (1,)),
            "zeros": lambda out, args: (out.zero_, ()), "clone": lambda out, args: (out.copy_, (args[0],))}


def _refill(name, args, outputs):
    """The ("call", method, args) replay step of a fresh result in ``_REFILLS``, or None."""
    refill = _REFILLS.get(name)
    if refill is None or len(outputs) != 1:
        return None
    return ("call", *refill(outputs[0], args))


class Recording:
    """A CPU graph: the launches and storage ops of one captured block, replayable in order."""

    def __init__(self):
        self.steps: list = []  # ("launch", bound launch, args), ("call", method, args) or (func, args, kwargs, outputs)
        self.launches: Counter = Counter()  # kernel name -> launches per replay
        self.paused = False  # set while launch() runs: its own torch calls are not the block's work
        self._mode = None
        self._thread = None  # the thread capturing
        self._plan = None  # the fast replay's (calls, traces), made on the first replay (``_calls``)

    def begin(self):
        if self._mode is not None:
            raise RuntimeError("this graph is already capturing")
        mode = _StorageOps(self)
        mode.__enter__()
        self._mode, self._thread = mode, threading.get_ident()
        _captures.recorders.append(self)

    def end(self):
        if self._mode is None:
            raise RuntimeError("this graph is not capturing: call capture_begin() first")
        if self._thread != threading.get_ident():
            raise RuntimeError("a graph capture must end on the thread that began it")
        _captures.recorders.remove(self)
        mode, self._mode = self._mode, None
        mode.__exit__(None, None, None)

    def add_launch(self, name: str, launch, args):
        # the bound launch holds raw addresses: the tensors themselves are kept so none is freed
        self.steps.append(("launch", launch, args))
        self.launches[name] += 1

    def replay(self):
        if self._mode is not None:
            raise RuntimeError("a graph cannot be replayed while it is being captured")
        executor = _launch._executor()
        graph_step = executor.graph_stepper()
        with np.errstate(all="ignore"):  # numpy warns on inf/nan arithmetic; the results are torch's
            if graph_step is executor.graph_step:  # replay off, verify mode, an instrument: launch by launch
                for step in self.steps:
                    self._call(graph_step, step)
            else:
                calls, traces = self._calls(graph_step)
                for call, args in calls:
                    call(*args)
                executor.replay_counts["replayed"] += traces
        _launch.launch_counts.update(self.launches)

    def _calls(self, graph_step):
        """The replay as (callable, arguments) pairs, made on the first replay with the executor's
        switches on: a launch whose captured trace has no guards calls the trace itself (the graph
        keeps it, and its replay inputs never change), so a replay pays no per-launch dispatch; and
        how many such traces one replay runs."""
        if self._plan is None:
            calls, traces = [], 0
            for step in self.steps:
                variant = step[1].variant if step[0] == "launch" else None
                if variant is not None and variant.guards is None and step[1].key is not None:
                    calls.append((variant.run, (step[1].A,)))
                    traces += 1
                elif step[0] == "call":
                    calls.append((step[1], step[2]))
                else:
                    calls.append((self._call, (graph_step, step)))
            self._plan = (calls, traces)
        return self._plan

    @staticmethod
    def _call(graph_step, step):
        if step[0] == "launch":
            return graph_step(step[1])
        if step[0] == "call":
            return step[1](*step[2])
        func, args, kwargs, outputs = step
        result = func(*args, **kwargs)
        if outputs:
            for captured, fresh in zip(outputs, _tensors(result)):
                captured.copy_(fresh)
        return None
