"""``growth(counter)``: what a block of code added to one of the runtime's module-level counters
(launches per kernel, replays per kind), for ``count_launches`` and ``count_replays``."""
from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

__all__ = ["growth"]


@contextmanager
def growth(counter: Counter):
    """``with growth(counter) as c: ...`` -> ``c``: each key's increase inside the block (filled on exit)."""
    before = Counter(counter)
    result: Counter = Counter()
    try:
        yield result
    finally:
        after = Counter(counter)
        after.subtract(before)
        result.update({k: v for k, v in after.items() if v})
