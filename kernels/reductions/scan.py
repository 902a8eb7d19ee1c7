"""Prefix scans along the last dim of a contiguous matrix: ``out[r, j] = x[r, 0] (+ or *) ... x[r, j]``.

A program owns ``BLOCK_R`` rows and walks the columns in chunks of ``BLOCK_C``: each chunk is
scanned with ``tl.cumsum``/``tl.cumprod`` and the running total of the chunks before it (the
carry) is added to or multiplied into it. Accumulation is fp32 for fp16/bf16/fp32, fp64 for fp64,
int64 for integers and bool (PyTorch's cumsum of integers is int64).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import cdiv, next_pow2

__all__ = ["cumulative"]


@triton.jit
def scan_kernel(x_ptr, out_ptr, n_rows, n_cols, PROD: tl.constexpr, COMPUTE: tl.constexpr,
                BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    if PROD:
        carry = tl.full((BLOCK_R,), 1, COMPUTE)
    else:
        carry = tl.zeros((BLOCK_R,), COMPUTE)
    for start in range(0, n_cols, BLOCK_C):
        cols = start + tl.arange(0, BLOCK_C)
        mask = row_mask[:, None] & (cols < n_cols)[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        if PROD:
            x = tl.load(x_ptr + offs, mask=mask, other=1).to(COMPUTE)
            y = tl.cumprod(x, 1) * carry[:, None]
            # the chunk's last column holds the running product (masked lanes multiply by 1);
            # tl.reduce with a custom combine would run per element when interpreted
            last = (tl.arange(0, BLOCK_C) == BLOCK_C - 1)[None, :]
            carry = tl.sum(tl.where(last, y, 0), 1)
        else:
            x = tl.load(x_ptr + offs, mask=mask, other=0).to(COMPUTE)
            y = tl.cumsum(x, 1) + carry[:, None]
            carry = carry + tl.sum(x, 1)
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def cumulative(x: torch.Tensor, op: str, out_dtype: torch.dtype) -> torch.Tensor:
    """The inclusive scan (``op`` "sum" or "prod") of contiguous ``x`` along its last dim."""
    out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    n_cols = x.shape[-1] if x.dim() else 1
    n_rows = x.numel() // n_cols if n_cols else 0
    if x.numel() == 0:
        return out
    if out_dtype.is_floating_point:
        compute = compute_dtype(torch.float64 if out_dtype is torch.float64 else torch.float32)
    else:
        compute = compute_dtype(torch.int64)
    block_c = min(next_pow2(n_cols), 1024)
    block_r = max(1, min(next_pow2(n_rows), 4096 // block_c))
    launch(scan_kernel, (cdiv(n_rows, block_r),), x, out, n_rows, n_cols, PROD=op == "prod", COMPUTE=compute,
           BLOCK_R=block_r, BLOCK_C=block_c)
    return out
