"""Launching a Triton kernel on the device its tensors live on.

CUDA tensors run the compiled kernel. CPU tensors run the *same* ``@triton.jit`` function through
Triton's interpreter, with nothing for the user to set.

Why this is not just ``TRITON_INTERPRET=1``: Triton decides interpreter-or-compiler when a function
is decorated, so with the variable set *nothing* could run compiled, and without it Triton's own
``@jit`` helpers (``tl.cdiv``, ``tl.sum``, ``tl.sigmoid``, ``tl.randn`` ...) were decorated as
compiled functions, whose ``__call__`` refuses to run outside a compiled kernel. So while an
interpreted launch runs, and only then, ``JITFunction.__call__`` runs the helper's interpreted
rewrite instead.

Triton's interpreter re-patches ``triton.language`` on every helper call and never undoes those
patches, which costs ~1 ms a call and would leave ``tl.core`` patched for later compiled (CUDA)
kernels. So the language (``tl`` and ``tl.core``) is patched once per launch, here, in a scope
that is restored when the launch ends, and helpers are called without re-patching.
"""
from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager

import numpy as np
import torch
import triton
from triton.runtime.interpreter import InterpretedFunction, InterpreterError, _patch_lang
from triton.runtime.jit import JITFunction

__all__ = ["launch", "launch_counts", "count_launches"]

_lock = threading.RLock()
launch_counts: Counter = Counter()  # kernel name -> launches since import (or since reset)


def _interpreted_twin(fn: JITFunction) -> InterpretedFunction:
    # Keyed through __dict__, not a dict of JITFunctions: hashing a JITFunction computes its
    # cache key, which walks its globals and chokes on the interpreter's patched builtins.
    twin = fn.__dict__.get("_tgrad_interpreted")
    if twin is None:
        twin = fn.__dict__["_tgrad_interpreted"] = InterpretedFunction(fn.fn)
    return twin


def _call_helper_interpreted(self, *args, **kwargs):
    try:
        return _interpreted_twin(self).rewrite()(*args, **kwargs)
    except InterpreterError:
        raise
    except Exception as e:
        raise InterpreterError(repr(e)) from e


class _LanguageModules:
    """Stands in for a function whose globals see both ``tl`` and ``tl.core``: what ``_patch_lang``
    inspects to decide which modules to patch."""
    __globals__ = {"tl": triton.language, "core": triton.language.core}


@contextmanager
def _interpreting():
    with _lock:  # the patch is process-wide; one interpreted launch at a time
        saved_call, saved_knob = JITFunction.__call__, triton.knobs.runtime.interpret
        JITFunction.__call__ = _call_helper_interpreted
        triton.knobs.runtime.interpret = True
        language_patch = _patch_lang(_LanguageModules)
        try:
            yield
        finally:
            language_patch.restore()
            JITFunction.__call__ = saved_call
            triton.knobs.runtime.interpret = saved_knob


def _device_of(args) -> torch.device:
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    raise ValueError("a kernel launch needs at least one tensor argument")


def launch(kernel: JITFunction, grid, *args, **meta):
    """Run ``kernel[grid](*args, **meta)`` compiled on CUDA or interpreted on the CPU."""
    launch_counts[kernel.__name__] += 1
    device = _device_of(args)
    if device.type == "cpu":
        meta.pop("num_warps", None)
        meta.pop("num_stages", None)
        # numpy warns on inf/nan arithmetic (log(0), masked lanes); the results are what torch gives
        with _interpreting(), np.errstate(all="ignore"):
            return _interpreted_twin(kernel)[grid](*args, **meta)
    with torch.cuda.device(device):
        return kernel[grid](*args, **meta)


@contextmanager
def count_launches():
    """``with count_launches() as c: ...`` -> ``c`` is a Counter of kernel name -> launches."""
    before = Counter(launch_counts)
    result: Counter = Counter()
    try:
        yield result
    finally:
        after = Counter(launch_counts)
        after.subtract(before)
        result.update({k: v for k, v in after.items() if v})
