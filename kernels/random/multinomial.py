"""Sampling category indices from rows of non-negative weights (``multinomial``), one program per row.

With replacement (or one sample), sample s of row r inverts the row's CDF at a uniform draw:
index = #{j : cdf_j <= u * total}, u from Philox counter r * num_samples + s (a zero-weight
category is never picked; a draw that rounds past the end takes the last positive category).
Without replacement, the exponential race: key_j = -log(u_j) / w_j with u_j from counter r * C + j
(w_j = 0: never), and the k smallest keys in increasing order are a weighted sample without
replacement (k successive argmins in the program). Each row also reports a status for the host:
0 fine, 1 a NaN/inf/negative weight, 2 total <= 0, 3 fewer positive categories than samples.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.layout import cdiv, next_pow2
from .philox import as_int64_bits, uniform53, philox_key_and_base
from ..runtime.target import target

__all__ = ["multinomial"]


@triton.jit
def multinomial_kernel(w_ptr, out_ptr, status_ptr, seed, offset, state, R, C, K, sw0, sw1,
                       REPLACE: tl.constexpr, FROM_STATE: tl.constexpr, BLOCK_R: tl.constexpr,
                       BLOCK_C: tl.constexpr, BLOCK_K: tl.constexpr):
    """Program (row block, sample chunk): samples [pid1 BLOCK_K, (pid1 + 1) BLOCK_K) of its rows,
    the weights walked BLOCK_C columns at a time (without replacement: one chunk, the whole row)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    rmask = rows < R
    chunk = tl.program_id(1).to(tl.int64)
    # the row's status, total, count of positive weights and last positive column
    bad = tl.zeros([BLOCK_R], tl.int32)
    positive = tl.zeros([BLOCK_R], tl.int32)
    total = tl.zeros([BLOCK_R], tl.float64)
    last = tl.full([BLOCK_R], -1, tl.int64)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C).to(tl.int64)
        cmask = rmask[:, None] & (cols < C)[None, :]
        w = tl.load(w_ptr + rows[:, None] * sw0 + cols[None, :] * sw1, mask=cmask, other=0).to(tl.float64)
        bad += tl.sum(tl.where(cmask & ((w != w) | (w < 0) | (w == float("inf"))), 1, 0), 1)
        total += tl.sum(w, 1)
        positive += tl.sum(tl.where(w > 0, 1, 0), 1)
        last = tl.maximum(last, tl.max(tl.where(w > 0, cols[None, :], -1), 1))
    status = tl.where(bad > 0, 1, tl.where(total <= 0, 2, 0))
    if not REPLACE:
        status = tl.where((status == 0) & (positive < K), 3, status)
    if chunk == 0:
        tl.store(status_ptr + rows, status.to(tl.int32), mask=rmask)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    if REPLACE:
        ks = chunk * BLOCK_K + tl.arange(0, BLOCK_K)
        x0, x1, _, _ = tl.randint4x(key, base + rows[:, None] * K + ks[None, :])
        target = uniform53(x0, x1) * total[:, None]
        idx = tl.zeros([BLOCK_R, BLOCK_K], tl.int64)
        below = tl.zeros([BLOCK_R], tl.float64)  # the weight of the columns already walked
        for c0 in range(0, C, BLOCK_C):
            cols = c0 + tl.arange(0, BLOCK_C).to(tl.int64)
            cmask = rmask[:, None] & (cols < C)[None, :]
            w = tl.load(w_ptr + rows[:, None] * sw0 + cols[None, :] * sw1, mask=cmask, other=0).to(tl.float64)
            cdf = below[:, None] + tl.cumsum(w, 1)
            idx += tl.sum(tl.where(cdf[:, None, :] <= target[:, :, None], 1, 0), 2).to(tl.int64)
            below += tl.sum(w, 1)
        picks = tl.minimum(idx, last[:, None])
        tl.store(out_ptr + rows[:, None] * K + ks[None, :], picks, mask=rmask[:, None] & (ks < K)[None, :])
    else:  # each pick is stored as it is made: no (rows, K) tile
        cols = tl.arange(0, BLOCK_C).to(tl.int64)
        cmask = rmask[:, None] & (cols < C)[None, :]
        w = tl.load(w_ptr + rows[:, None] * sw0 + cols[None, :] * sw1, mask=cmask, other=0).to(tl.float64)
        x0, x1, _, _ = tl.randint4x(key, base + rows[:, None] * C + cols[None, :])
        u = uniform53(x0, x1)
        race = tl.where(w > 0, -tl.log(tl.where(u > 0, u, 1e-300)) / tl.where(w > 0, w, 1.0), float("inf"))
        race = tl.where(cmask, race, float("inf"))
        for s in range(0, K):
            best = tl.min(race, 1)
            j = tl.min(tl.where(race == best[:, None], cols[None, :], BLOCK_C), 1)
            tl.store(out_ptr + rows * K + s, j, mask=rmask)
            race = tl.where(cols[None, :] == j[:, None], float("inf"), race)


def _blocks(R: int, C: int, k: int, replace: bool, device: torch.device):
    """(BLOCK_R, BLOCK_C, BLOCK_K). Interpreted, a program costs what a whole tile does: one chunk
    of columns and samples, many rows (tiles <= 2^18 elements; the with-replacement search is
    (rows, k, C)). Compiled, one row a program and a (BLOCK_K, BLOCK_C) search tile of 4K elements
    at most, so neither the sample count nor the row length reaches the registers (an uncapped
    BLOCK_K of 8192 spilled 35 KB and took 253 s to compile for sm_90)."""
    bc = max(16, next_pow2(C))
    if target(device) == "cpu":
        bk = max(16, next_pow2(k)) if replace else 1
        per_row = bc * bk
        return max(1, min(next_pow2(R), (1 << 18) // per_row)), bc, bk
    if not replace:  # the race needs the whole row: only the samples are walked one at a time
        return 1, bc, 1
    bc = min(bc, 256)
    bk = max(16, min(next_pow2(k), 4096 // bc), next_pow2(cdiv(k, 65535)))  # grid y <= 65,535
    return 1, bc, bk


def multinomial(w: torch.Tensor, k: int, replacement: bool, seed: int, offset: int, state=None):
    """(indices int64 (R, k), status int32 (R,)) for weights ``w`` (R, C), any strides."""
    R, C = w.shape
    out = torch.empty((R, k), dtype=torch.int64, device=w.device)
    status = torch.empty((R,), dtype=torch.int32, device=w.device)
    if R == 0 or k == 0:
        return out, status.fill_(0)
    replace = replacement or k == 1
    br, bc, bk = _blocks(R, C, k, replace, w.device)
    launch(multinomial_kernel, (cdiv(R, br), cdiv(k, bk) if replace else 1), w, out, status,
           as_int64_bits(seed), as_int64_bits(offset), out if state is None else state, R, C, k,
           w.stride(0), w.stride(1), REPLACE=replace, FROM_STATE=state is not None, BLOCK_R=br,
           BLOCK_C=bc, BLOCK_K=bk)
    return out, status
