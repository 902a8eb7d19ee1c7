"""``tgrad.distributed``: what a single-process run of a ``torch.distributed`` script asks.

tgrad trains in one process (no process groups, no collectives), so a script that imports
``torch.distributed`` and uses it only when launched by ``torchrun`` runs unchanged: nothing is
ever initialized, and the calls that need a process group raise PyTorch's error for one that is not.
"""
from __future__ import annotations

import enum

__all__ = ["is_available", "is_initialized", "is_torchelastic_launched", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "barrier", "all_reduce", "broadcast",
           "all_gather", "ReduceOp"]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class ReduceOp(enum.Enum):
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


def is_available() -> bool:
    """False: tgrad has no distributed backend (PyTorch's CPU builds answer True)."""
    return False


def is_initialized() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    raise RuntimeError("tgrad has no torch.distributed backend: it trains in a single process, so "
                       "init_process_group cannot start a process group (run the script without torchrun)")


def _uninitialized(*args, **kwargs):
    raise ValueError(_NOT_INITIALIZED)


get_rank = get_world_size = barrier = all_reduce = broadcast = all_gather = _uninitialized


def destroy_process_group(group=None):
    raise AssertionError("Process group cannot be None")
