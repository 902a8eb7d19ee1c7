"""Pointer tables: how one launch reaches many separately allocated tensors (an optimizer's
parameters, the gradients ``clip_grad_norm_`` scales).

A table is an int64 tensor with one row per chunk of at most ``chunk`` elements of one tensor; a
row's pointers already point at the chunk's first element (``data_ptr + start * itemsize``) and a
kernel casts them back (``.to(tl.pointer_type(...))``, which both the compiler and the interpreter
accept). Compiled, program ``r`` takes row ``r``; interpreted, one program walks every row (the
interpreter pays per program). The row layouts are the kernels' own (``step.py``, ``clip_grad.py``).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch

from tgrad.kernels.helpers.layout import next_pow2
from tgrad.kernels.runtime.target import target

__all__ = ["chunk_sizes", "upload", "host_values", "row_grid", "TableCache"]


def chunk_sizes(device: torch.device, longest: int) -> tuple[int, int]:
    """(elements per table row, elements per loop iteration) for a launch whose largest tensor
    has ``longest`` elements. The interpreter pays per program and per op, so a row is one block
    of up to 2^16 elements, no wider than needed; compiled, rows of 16K elements walked in 1K
    blocks keep the table short and every SM busy."""
    if target(device) == "cpu":
        block = min(next_pow2(max(longest, 16)), 1 << 16)
        return block, block
    return 1 << 14, 1 << 10


def row_grid(device: torch.device, n_rows: int) -> tuple[tuple, int]:
    """(grid, rows per program): one program walks every row under the interpreter, one per row
    compiled."""
    return ((1,), n_rows) if target(device) == "cpu" else ((n_rows,), 1)


def upload(rows: list, device: torch.device, capturing: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(device table, the host tensor it was copied from)."""
    # through NumPy: torch.tensor converts a list element by element (~2.5x slower for 130 rows)
    host = torch.from_numpy(np.array(rows, dtype=np.int64))
    if device.type == "cuda":
        if capturing:
            # Captured, a non-blocking copy becomes a graph node that re-reads ``host`` at every
            # replay (the caller keeps it alive and unchanged). PyTorch refuses a captured copy from
            # pageable memory (seen with 2.11 on an H200) and pins inside a capture since its host
            # allocator learned graph pools; older releases refuse the pinning instead (it queries
            # the pinned cache's events), and there the pageable copy is what is left.
            try:
                host = host.pin_memory()
            except RuntimeError:
                pass
            return host.to(device, non_blocking=True), host
        # Eagerly, a pageable upload makes PyTorch synchronise the stream (the host would wait for
        # the whole queued step). From pinned memory it is asynchronous; PyTorch's pinned-memory
        # cache holds the buffer until the copy has run.
        host = host.pin_memory()
        return host.to(device, non_blocking=True), host
    return host.to(device), host


def host_values(values: list) -> torch.Tensor:
    """A CPU float64 tensor of host values (through NumPy, as ``upload``'s tables)."""
    return torch.from_numpy(np.array(values, dtype=np.float64))


class TableCache:
    """An optimizer's device pointer tables, looked up by their contents, so a step whose tensors
    and per-row values are those of an earlier step launches from the table already on the device
    (no host->device copy). Non-contiguous tensors are updated through contiguous staging buffers
    kept here too, so their addresses -- and the table -- stay the same from step to step.

    A table used while a graph is being captured is kept for the cache's (the optimizer's) life:
    the graph replays launches that read it. Others are dropped least recently used first. A table
    first needed during a capture (gradients allocated inside it have new addresses) is uploaded
    then: on CUDA the capture records that copy from host memory, so its host buffer is kept
    unchanged too, and each replay repeats the small copy (a table uploaded before the capture --
    a warm-up step with the same tensors -- costs replays nothing).
    ``uploads`` counts the tables built and copied to a device (a repeated step adds none)."""

    LIMIT = 16  # unpinned tables (and staging buffers) kept

    def __init__(self):
        self._tables: OrderedDict = OrderedDict()  # (device, row spec) -> (table, host copy, staging buffers)
        self._pinned: dict = {}  # the same, for tables a capture has used
        self._staging: OrderedDict = OrderedDict()  # (device, dtype, ptr, shape, strides) -> buffer
        self.uploads = 0

    def staged(self, t: torch.Tensor) -> torch.Tensor:
        """A contiguous buffer holding ``t``'s values, the same buffer for the same ``t`` each step."""
        key = (t.device, t.dtype, t.data_ptr(), tuple(t.shape), t.stride())
        buf = self._staging.get(key)
        if buf is None:
            buf = self._staging[key] = torch.empty(tuple(t.shape), dtype=t.dtype, device=t.device)
            if len(self._staging) > 4 * self.LIMIT:
                self._staging.popitem(last=False)
        else:
            self._staging.move_to_end(key)
        buf.copy_(t)
        return buf

    def table(self, device: torch.device, key: tuple, make_rows, staging: list, capturing: bool):
        """The device table of ``make_rows(*key)`` (None when it has no rows), uploaded on a miss
        only: a hit costs a lookup, not the rows (on CUDA a parameter has a row per 16K elements)."""
        cache_key = (device, key)
        entry = self._pinned.get(cache_key)
        if entry is None:
            entry = self._tables.get(cache_key)
            if entry is None:
                rows = make_rows(*key)
                if not rows:
                    return None
                entry = self._tables[cache_key] = (*upload(rows, device, capturing), list(staging))
                self.uploads += 1
                if len(self._tables) > self.LIMIT:
                    self._tables.popitem(last=False)
            else:
                self._tables.move_to_end(cache_key)
            if capturing:
                self._pinned[cache_key] = self._tables.pop(cache_key)
        return entry[0]
