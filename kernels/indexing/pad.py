"""N-d padding of the last 1-3 dims (constant, reflect, replicate, circular), forward and backward,
one launch each.

x is viewed as (B, L0, L1, L2) (leading dims folded into B, missing padded dims of size 1) and
padded by (before_d, after_d) along dim d to O_d = before_d + L_d + after_d (negative amounts crop).
Output index o reads input index i = o - before, mapped back into [0, L) by the mode:

    constant   i itself, or ``value`` where i is outside
    reflect    -i left of 0, 2(L-1) - i right of L-1   (the edge itself not repeated)
    replicate  clamp(i, 0, L-1)
    circular   i mod L

The backward is the adjoint, written as a gather so it needs no atomics: dx[i] sums g over the
output positions that read i. Per dim those are at most

    constant   o = i + before
    reflect    o = i + before,  before - i (i >= 1),  before + 2(L-1) - i (i <= L-2)
    replicate  o = i + before,  and all of [0, before) for i = 0,  all of [before + L, O) for i = L-1
    circular   o = i + before + k L,  k in {-1, 0, 1}

enumerated as candidates j < C_d with a validity mask; the three dims' candidates are nested.
Sums run in fp32 (fp64 for fp64).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_for, cdiv
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["MODES", "pad_forward", "pad_backward"]

MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


@triton.jit
def _read_index(o, L, PB, MODE: tl.constexpr):
    """(input index that output index o reads, whether it is inside the input)."""
    i = o - PB
    if MODE == 1:
        i = tl.where(i < 0, -i, i)
        i = tl.where(i >= L, 2 * (L - 1) - i, i)
    elif MODE == 2:
        i = tl.minimum(tl.maximum(i, 0), L - 1)
    elif MODE == 3:
        i = ((i % L) + L) % L
    return i, (i >= 0) & (i < L)


@triton.jit
def _reader(i, j, L, PB, PA, O, MODE: tl.constexpr):
    """(candidate j of the output indices that read input index i, whether it is one)."""
    if MODE == 1:
        o = tl.where(j == 0, i + PB, tl.where(j == 1, PB - i, PB + 2 * (L - 1) - i))
        ok = (j == 0) | ((j == 1) & (i >= 1)) | ((j == 2) & (i <= L - 2) & (o >= PB + L))
    elif MODE == 2:
        pb = tl.maximum(PB, 0)
        o = tl.where(j == 0, i + PB, tl.where(j <= pb, j - 1, PB + L + (j - 1 - pb)))
        ok = (j == 0) | ((j <= pb) & (i == 0)) | ((j > pb) & (i == L - 1))
    elif MODE == 3:
        o = i + PB + tl.where(j == 0, 0, tl.where(j == 1, -L, L))  # j = 0 the direct one, as for all
        ok = j < 3
    else:
        o = i + PB
        ok = j == 0
    return o, ok & (o >= 0) & (o < O)


@triton.jit
def pad_fwd_kernel(x_ptr, y_ptr, TOTAL, L0, L1, L2, O0, O1, O2, P0, P1, P2, sxb, sx0, sx1, sx2, value_bits,
                   MODE: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (b, o0, o1, o2) row-major
    mask = lin < TOTAL
    o2 = lin % O2
    o1 = (lin // O2) % O1
    o0 = (lin // (O2 * O1)) % O0
    b = lin // (O2 * O1 * O0)
    i0, in0 = _read_index(o0, L0, P0, MODE)
    i1, in1 = _read_index(o1, L1, P1, MODE)
    i2, in2 = _read_index(o2, L2, P2, MODE)
    inside = in0 & in1 & in2
    v = tl.load(x_ptr + (b * sxb + i0 * sx0 + i1 * sx1 + i2 * sx2), mask=mask & inside, other=0)
    if MODE == 0:
        v = tl.where(inside, v, as_f64(value_bits).to(y_ptr.dtype.element_ty))
    tl.store(y_ptr + lin, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def pad_bwd_kernel(g_ptr, dx_ptr, TOTAL, L0, L1, L2, O0, O1, O2, P0, P1, P2, Q0, Q1, Q2, C0, C1, C2,
                   sgb, sg0, sg1, sg2, MODE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """dx[b, i0, i1, i2] = sum of g over the outputs that read it (P: before, Q: after amounts)."""
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (b, i0, i1, i2) row-major
    mask = lin < TOTAL
    i2 = lin % L2
    i1 = (lin // L2) % L1
    i0 = (lin // (L2 * L1)) % L0
    base = (lin // (L2 * L1 * L0)) * sgb
    acc = tl.zeros([BLOCK], COMPUTE)
    for j0 in range(C0):
        o0, ok0 = _reader(i0, j0, L0, P0, Q0, O0, MODE)
        for j1 in range(C1):
            o1, ok1 = _reader(i1, j1, L1, P1, Q1, O1, MODE)
            ok01 = mask & ok0 & ok1
            for j2 in range(C2):
                o2, ok2 = _reader(i2, j2, L2, P2, Q2, O2, MODE)
                acc += tl.load(g_ptr + (base + o0 * sg0 + o1 * sg1 + o2 * sg2), mask=ok01 & ok2,
                               other=0.0).to(COMPUTE)
    tl.store(dx_ptr + lin, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _as_4d(t: torch.Tensor, k: int) -> torch.Tensor:
    """t viewed as (B, L0, L1, L2) for padding its last k dims (a copy only when the leading dims
    cannot be folded into one)."""
    lead, padded = t.shape[:t.dim() - k], t.shape[t.dim() - k:]
    return t.reshape((math.prod(lead),) + (1,) * (3 - k) + tuple(padded))


def _candidates(mode: str, before: int, after: int) -> int:
    return {"constant": 1, "reflect": 3, "circular": 3}.get(mode, 1 + max(before, 0) + max(after, 0))


def pad_forward(x: torch.Tensor, pads, mode: str, value: float = 0.0) -> torch.Tensor:
    """x padded along its last len(pads) (<= 3) dims by pads[d] = (before, after); contiguous."""
    k = len(pads)
    out_shape = tuple(x.shape[:x.dim() - k]) + tuple(x.shape[x.dim() - k + d] + sum(pads[d]) for d in range(k))
    y = torch.empty(out_shape, dtype=x.dtype, device=x.device)
    total = y.numel()
    if total == 0:
        return y
    x4 = _as_4d(x, k)
    full = [(0, 0)] * (3 - k) + list(pads)
    block = block_for(total, x.device)
    launch(pad_fwd_kernel, (cdiv(total, block),), x4, y, total, *x4.shape[1:],
           *(x4.shape[1 + d] + sum(full[d]) for d in range(3)), *(p[0] for p in full), *x4.stride(),
           f64_bits(value), MODE=MODES[mode], BLOCK=block, num_warps=4)
    return y


def pad_backward(g: torch.Tensor, x_shape, pads, mode: str) -> torch.Tensor:
    """dL/dx (contiguous, of x_shape and g's dtype) from g = dL/dy of ``pad_forward``."""
    k = len(pads)
    dx = torch.empty(tuple(x_shape), dtype=g.dtype, device=g.device)
    total = dx.numel()
    if total == 0:
        return dx
    g4 = _as_4d(g, k)
    full = [(0, 0)] * (3 - k) + list(pads)
    L = [1] * (3 - k) + list(x_shape[len(x_shape) - k:])
    counts = [1 if d < 3 - k else _candidates(mode, *full[d]) for d in range(3)]
    block = block_for(total, g.device)
    compute = compute_dtype(torch.float64 if g.dtype == torch.float64 else torch.float32)
    launch(pad_bwd_kernel, (cdiv(total, block),), g4, dx, total, *L, *g4.shape[1:], *(p[0] for p in full),
           *(p[1] for p in full), *counts, *g4.stride(), MODE=MODES[mode], COMPUTE=compute, BLOCK=block,
           num_warps=4)
    return dx
