"""The CPU executor's switches and counters, shared by the executor (``runtime/executor.py``) and
the planned call sites that replay without it (``runtime/sites.py``): whether replay is on, verify
mode, a thread's ``replay_disabled()`` depth, NumPy's error state for a replay, and the counts of
replayed, recorded and interpreted launches."""
from __future__ import annotations

import os
import threading
from collections import Counter
from contextlib import contextmanager

import numpy as np

from .counters import growth

__all__ = ["replay_counts", "fallback_reasons", "count_replays", "set_replay", "replay_enabled", "replay_verify",
           "replay_disabled", "run_quietly"]

replay_counts: Counter = Counter()  # "replayed" / "recorded" / "interpreted" -> launches
fallback_reasons: Counter = Counter()  # why a launch interpreted -> launches
config = {"enabled": os.environ.get("TGRAD_REPLAY", "1") != "0",
          "verify": os.environ.get("TGRAD_REPLAY_VERIFY", "0") not in ("", "0")}


class _Local(threading.local):
    disabled = 0  # replay_disabled() depth of this thread (a class default: reading it never raises)


local = _Local()


def set_replay(enabled: bool | None = None, verify: bool | None = None) -> None:
    """Turn replay of recorded CPU launches on or off, and verify mode (``runtime/executor.py``)."""
    if enabled is not None:
        config["enabled"] = bool(enabled)
    if verify is not None:
        config["verify"] = bool(verify)


def replay_enabled() -> bool:
    return config["enabled"]


def replay_verify() -> bool:
    return config["verify"]


@contextmanager
def replay_disabled():
    """Interpret every launch of this thread inside the block (for instruments of the interpreter)."""
    local.disabled += 1
    try:
        yield
    finally:
        local.disabled -= 1


def count_replays():
    """``with count_replays() as c: ...`` -> ``c``: replayed / recorded / interpreted launches inside."""
    return growth(replay_counts)


# NumPy 2 keeps its error state in a context variable: a replay sets it directly, as
# np.errstate(all="ignore") does, without building a context manager per launch (NumPy 1: None)
_UFUNC_CONFIG = getattr(getattr(np, "_core", None), "_ufunc_config", None)
_ERRORS = getattr(_UFUNC_CONFIG, "_extobj_contextvar", None)
_IGNORE_ERRORS = _UFUNC_CONFIG._make_extobj(all="ignore") if _ERRORS is not None else None


def run_quietly(run, A):
    """``run(A)`` (a trace) under NumPy's error state ``all="ignore"``, as the interpreter runs it."""
    if _ERRORS is None:
        with np.errstate(all="ignore"):
            return run(A)
    token = _ERRORS.set(_IGNORE_ERRORS)
    try:
        return run(A)
    finally:
        _ERRORS.reset(token)
