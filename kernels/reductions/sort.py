"""Stable sort along one dim of a strided tensor.

``sort`` is a bitonic sort of (key, original index) pairs per row, padded to a power of two P.
The order is total: padding last, then by key (NaN above everything, as torch), then by original
index, so the result is stable and ``descending`` only reverses the key comparison. A program
sorts a [ROWS, B] block in registers with reshape/split/join compare-exchange stages; rows longer
than B are finished by the textbook two-level scheme (partners further apart than B exchange in
global memory, one launch per stage, then a block-local merge). On the CPU B reaches 2^16, so one
launch sorts any row up to that length.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, collapse, element_offset, next_pow2
from ..runtime.target import target

__all__ = ["sort", "sort_block_limit"]


@triton.jit
def _after(ka, ia, kb, ib, n, DESCENDING: tl.constexpr):
    """Whether pair (ka, ia) sorts after (kb, ib): padding (index >= n) last; then by key, NaN
    greatest, reversed when DESCENDING; equal keys by original index (stable)."""
    nan_a = ka != ka
    nan_b = kb != kb
    if DESCENDING:
        key_after = (kb > ka) | (nan_b & (ka == ka))
    else:
        key_after = (ka > kb) | (nan_a & (kb == kb))
    same = (ka == kb) | (nan_a & nan_b)
    pad_a = ia >= n
    return tl.where(pad_a != (ib >= n), pad_a, key_after | (same & (ia > ib)))


@triton.jit
def _exchange(key, idx, c0, n, k, ROWS: tl.constexpr, B: tl.constexpr, J: tl.constexpr,
              DESCENDING: tl.constexpr):
    """One bitonic stage on a [ROWS, B] block starting at column c0: columns i and i + J
    (i & J == 0) are put in order, ascending where (i & k) == 0 and descending elsewhere."""
    kl, kr = tl.split(tl.permute(tl.reshape(key, [ROWS, B // (2 * J), 2, J]), [0, 1, 3, 2]))
    il, ir = tl.split(tl.permute(tl.reshape(idx, [ROWS, B // (2 * J), 2, J]), [0, 1, 3, 2]))
    left = c0 + tl.arange(0, B // (2 * J))[:, None] * (2 * J) + tl.arange(0, J)[None, :]
    swap = _after(kl, il, kr, ir, n, DESCENDING) != ((left & k) != 0)[None, :, :]
    key = tl.join(tl.where(swap, kr, kl), tl.where(swap, kl, kr))
    idx = tl.join(tl.where(swap, ir, il), tl.where(swap, il, ir))
    key = tl.reshape(tl.permute(key, [0, 1, 3, 2]), [ROWS, B])
    idx = tl.reshape(tl.permute(idx, [0, 1, 3, 2]), [ROWS, B])
    return key, idx


@triton.jit
def _sort_block_kernel(src_key, src_idx, dst_key, dst_idx, n_rows, n, k_merge, col_blocks,
                       src_shape, src_strides, src_col_stride, dst_shape, dst_strides, dst_col_stride,
                       NS: tl.constexpr, ND: tl.constexpr, FROM_INPUT: tl.constexpr, TO_OUTPUT: tl.constexpr,
                       MERGE: tl.constexpr, DESCENDING: tl.constexpr, ROWS: tl.constexpr, LOG_B: tl.constexpr):
    """Sort (or, with MERGE, finish merging stage k_merge of) the B = 2^LOG_B columns starting at
    c0 = (program_id % col_blocks) * B of ROWS rows. Row and column blocks share grid axis 0:
    CUDA stops axis 1 at 65,535, which 2^27 columns in blocks of 2^11 would pass. FROM_INPUT reads keys from the input (original index =
    column, padding past n); otherwise (key, index) pairs come from the scratch rows. TO_OUTPUT
    writes the first n columns of values and indices; otherwise all B go back to scratch."""
    B: tl.constexpr = 1 << LOG_B
    pid = tl.program_id(0).to(tl.int64)
    rows = (pid // col_blocks) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    c0 = (pid % col_blocks) * B
    cols = c0 + tl.arange(0, B)
    src = element_offset(rows, src_shape, src_strides, NS)[:, None] + cols[None, :] * src_col_stride
    if FROM_INPUT:
        key = tl.load(src_key + src, mask=row_mask[:, None] & (cols < n)[None, :], other=0)
        idx = tl.zeros([ROWS, B], tl.int64) + cols[None, :]
    else:
        key = tl.load(src_key + src, mask=row_mask[:, None], other=0)
        idx = tl.load(src_idx + src, mask=row_mask[:, None], other=0)
    if key.dtype == tl.int1:
        key = key.to(tl.int8)
    if MERGE:
        for t in tl.static_range(LOG_B):
            key, idx = _exchange(key, idx, c0, n, k_merge, ROWS, B, 1 << (LOG_B - 1 - t), DESCENDING)
    else:
        for s in tl.static_range(1, LOG_B + 1):
            for t in tl.static_range(s):
                key, idx = _exchange(key, idx, c0, n, 1 << s, ROWS, B, 1 << (s - 1 - t), DESCENDING)
    dst = element_offset(rows, dst_shape, dst_strides, ND)[:, None] + cols[None, :] * dst_col_stride
    if TO_OUTPUT:  # padding has sorted to the end of the row
        keep = row_mask[:, None] & (cols < n)[None, :]
    else:
        keep = row_mask[:, None] & (cols >= 0)[None, :]
    tl.store(dst_key + dst, key.to(dst_key.dtype.element_ty), mask=keep)
    tl.store(dst_idx + dst, idx, mask=keep)


@triton.jit
def _sort_exchange_kernel(key_ptr, idx_ptr, P, n, j, k, q_blocks, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    """One bitonic stage with partners j >= B apart, in the scratch rows (length P) in memory;
    program (row, q block) at row * q_blocks + q block of axis 0, as in ``_sort_block_kernel``."""
    pid = tl.program_id(0).to(tl.int64)
    row = (pid // q_blocks) * P
    q = (pid % q_blocks) * BLOCK + tl.arange(0, BLOCK)
    mask = q < P // 2
    i = (q // j) * (2 * j) + q % j
    ka = tl.load(key_ptr + row + i, mask=mask)
    kb = tl.load(key_ptr + row + i + j, mask=mask)
    ia = tl.load(idx_ptr + row + i, mask=mask)
    ib = tl.load(idx_ptr + row + i + j, mask=mask)
    swap = _after(ka, ia, kb, ib, n, DESCENDING) != ((i & k) != 0)
    tl.store(key_ptr + row + i, tl.where(swap, kb, ka), mask=mask)
    tl.store(key_ptr + row + i + j, tl.where(swap, ka, kb), mask=mask)
    tl.store(idx_ptr + row + i, tl.where(swap, ib, ia), mask=mask)
    tl.store(idx_ptr + row + i + j, tl.where(swap, ia, ib), mask=mask)


def sort_block_limit(device: torch.device) -> int:
    """Columns one program sorts in registers (B at most): interpreted, blocks are numpy arrays
    and big is cheap; compiled, the pairs must fit a CTA's registers."""
    return 1 << 16 if target(device) == "cpu" else 1 << 11


def sort(x: torch.Tensor, dim: int, descending: bool = False):
    """(values, int64 indices) of ``x`` sorted along ``dim`` (non-negative), stably; NaN sorts
    above +inf. Both results are contiguous tensors of x's shape."""
    values = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    indices = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    if x.numel() == 0:
        return values, indices
    if x.dim() == 0:
        x, values_, indices_ = x.reshape(1), values.view(1), indices.view(1)
    else:
        values_, indices_ = values, indices
    n = x.shape[dim]
    row_dims = [d for d in range(x.dim()) if d != dim]
    n_rows = math.prod(x.shape[d] for d in row_dims)
    row_shape, (x_rows, out_rows) = collapse(tuple(x.shape[d] for d in row_dims),
                                              [[x.stride(d) for d in row_dims], [values_.stride(d) for d in row_dims]])
    P = next_pow2(n)
    B = min(P, sort_block_limit(x.device))
    rows_per_program = min(next_pow2(n_rows), max(1, block_for(1 << 30, x.device) // B))
    grid_rows = cdiv(n_rows, rows_per_program)
    common = dict(DESCENDING=bool(descending), ROWS=rows_per_program, LOG_B=B.bit_length() - 1,
                  num_warps=8 if rows_per_program * B >= 2048 else 4)
    out_geometry = (row_shape, out_rows, values_.stride(dim), len(row_shape))
    if P == B:
        launch(_sort_block_kernel, (grid_rows,), x, x, values_, indices_, n_rows, n, 0, 1,
               row_shape, x_rows, x.stride(dim), *out_geometry[:3], NS=len(row_shape), ND=len(row_shape),
               FROM_INPUT=True, TO_OUTPUT=True, MERGE=False, **common)
        return values, indices
    # Rows longer than one block: sort B-column chunks (alternating directions), then merge.
    key = torch.empty((n_rows, P), dtype=x.dtype, device=x.device)
    idx = torch.empty((n_rows, P), dtype=torch.int64, device=x.device)
    scratch = ((n_rows,), (P,), 1)
    launch(_sort_block_kernel, (grid_rows * (P // B),), x, x, key, idx, n_rows, n, 0, P // B,
           row_shape, x_rows, x.stride(dim), *scratch, NS=len(row_shape), ND=1,
           FROM_INPUT=True, TO_OUTPUT=False, MERGE=False, **common)
    exchange_block = min(P // 2, block_for(P // 2, x.device))
    q_blocks = cdiv(P // 2, exchange_block)
    k = 2 * B
    while k <= P:
        j = k // 2
        while j >= B:
            launch(_sort_exchange_kernel, (n_rows * q_blocks,), key, idx, P, n, j, k, q_blocks,
                   DESCENDING=bool(descending), BLOCK=exchange_block, num_warps=4)
            j //= 2
        last = k == P
        dst = (values_, indices_) + out_geometry[:3] if last else (key, idx) + scratch
        launch(_sort_block_kernel, (grid_rows * (P // B),), key, idx, *dst[:2], n_rows, n, k, P // B,
               *scratch, *dst[2:], NS=1, ND=len(row_shape) if last else 1,
               FROM_INPUT=False, TO_OUTPUT=last, MERGE=True, **common)
        k *= 2
    return values, indices
