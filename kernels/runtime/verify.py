"""Verify mode's evidence (``executor``): the bytes a launch can reach, saved before it runs, restored
to run it again another way, and compared."""
from __future__ import annotations

import numpy as np
import torch

from .memory import memory_view

__all__ = ["ReplayMismatch", "Snapshot", "compare"]


class ReplayMismatch(AssertionError):
    """Verify mode: a replay and the interpreter wrote different bytes."""


class Snapshot:
    """The bytes of every storage a launch can reach, to restore and compare (verify mode). Numpy
    does the copying and comparing: torch stays storage, and a graph capture records none of it."""

    def __init__(self, tensors):
        self.views, seen = [], set()
        for t in tensors:
            if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
                continue
            s = t.untyped_storage()
            if s.nbytes() == 0 or s.data_ptr() in seen:
                continue
            seen.add(s.data_ptr())
            self.views.append(memory_view(s.data_ptr(), s.nbytes(), np.uint8))
        self.saved = self.now()

    def restore(self):
        for v, s in zip(self.views, self.saved):
            v[:] = s

    def now(self):
        return [v.copy() for v in self.views]


def compare(name, what, first, second):
    for k, (a, b) in enumerate(zip(first, second)):
        if not np.array_equal(a, b):
            bad = int((a != b).sum())
            raise ReplayMismatch(f"verify mode: {name}: {what} wrote different bytes ({bad} of {a.size} bytes of "
                                 f"storage #{k} of the launch differ)")
