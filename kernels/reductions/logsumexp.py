"""The online log-sum-exp that reductions, softmax and cross-entropy share.

A row too long for one block is read in chunks; the running state is ``(m, s)``, the row's max so
far and ``s = sum exp(x - shift(m))``. Folding a chunk whose max raises ``m`` rescales ``s`` by
``exp(m_old - shift(m_new))``, so one pass gives ``lse = shift(m) + log s``. ``shift(m)`` is ``m``,
or 0 while everything seen is -inf (``-inf - (-inf)`` would poison ``s`` with NaN). A NaN makes
``m`` NaN from then on (and so ``s``), as PyTorch's results are NaN; a +inf max leaves ``s`` NaN
(``inf - inf``), which callers that must return +inf (``logsumexp``) test ``m`` for.
"""
from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["lse_shift", "online_logsumexp"]


@triton.jit
def lse_shift(m):
    """What a running log-sum-exp subtracts before exp(): its max, or 0 while the max is -inf."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def online_logsumexp(m, s, x):
    """``(m, s)`` of the rows of ``[R, C]`` chunk ``x`` (masked lanes -inf) folded into the running
    ``(m, s)`` ([R] each; start from ``(-inf, 0)``)."""
    is_nan = x != x
    chunk_max = tl.max(tl.where(is_nan, float("-inf"), x), 1)  # NaN-free: numpy's nanmax stays quiet
    chunk_has_nan = tl.max(is_nan.to(tl.int32), 1) > 0
    new_m = tl.where(chunk_has_nan | (m != m), float("nan"), tl.maximum(m, chunk_max))
    shift = lse_shift(new_m)
    return new_m, s * tl.exp(m - shift) + tl.sum(tl.exp(x - shift[:, None]), 1)
