"""Triton kernels of tgrad. They take and return torch tensors used purely as storage and know
nothing of ``tgrad.Tensor``; ``tgrad.kernels.launch.launch`` runs each one compiled on CUDA or
interpreted on the CPU, where a launch seen before replays as recorded numpy (``kernels/replay.py``:
``replay_counts``, ``fallback_reasons``, ``count_replays``, ``set_replay``, ``replay_disabled``)."""
from .launch import count_launches, launch_counts  # noqa: F401

_REPLAY_NAMES = ("replay_counts", "fallback_reasons", "count_replays", "set_replay", "replay_enabled",
                 "replay_verify", "replay_disabled", "ReplayMismatch", "clear_replay_cache")


def __getattr__(name):
    # the executor needs Triton's private interpreter names: loaded when first asked for (or on the
    # first CPU launch), not by ``import tgrad``
    if name in _REPLAY_NAMES:
        from . import replay
        return getattr(replay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
