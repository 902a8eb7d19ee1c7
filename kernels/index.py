"""Kernels behind integer-tensor and boolean-mask indexing, ``gather``/``scatter_add`` and sorting.

Indexing (``index_op``). An advanced index is described by the *result* shape R and, for each
operand, its strides over R (PyTorch's TensorIterator view of ``index``): for result element r,

    src(r) = x + x_off(r) + sum_k wrap(idx_k[r]) * dim_stride_k,   wrap(i) = i + size_k if i < 0

where ``x_off`` walks the dims of x that no index tensor replaces (stride 0 over the broadcast
index dims) and ``idx_k`` is the k-th index tensor broadcast over R by strides. Three modes read
or write that address: ``gather`` (other[r] = *src), ``put`` (*src = other[r]) and ``add``
(*src += other[r], with ``tl.atomic_add`` so duplicate indices accumulate; the order of the adds,
and so the last bit of a float sum, is not deterministic on CUDA, where ``add`` therefore takes the
sort-based path of ``segment.py`` unless ``tgrad.use_deterministic_algorithms(False)``: a fourth
mode, ``offsets``, writes each r's target offset for it to sort). Indices are checked *before*
(``first_out_of_bounds``); the kernel still masks any lane whose index falls outside, so it never
touches memory out of range.

``nonzero`` is a two-pass stream compaction: per-block counts (and their total, read back once to
allocate the output), then each block writes the coordinates of its nonzero elements at its
running position, ``tl.cumsum`` within the block plus the counts of all earlier blocks.

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

from . import segment
from .launch import launch
from .layout import block_for, cdiv, collapse, element_offset

__all__ = ["index_op", "first_out_of_bounds", "nonzero", "sort", "sort_block_limit"]

_MODES = ("gather", "put", "add", "offsets")


# ----------------------------------------------------------------------------- indexing

@triton.jit
def _indexed_offset(lin, mask, idx_ptrs, shape, idx_strides, sizes, dim_strides,
                    NDIM: tl.constexpr, N_IDX: tl.constexpr):
    """sum_k wrap(idx_k[lin]) * dim_stride_k, and which lanes hold in-range indices."""
    off = lin * 0
    ok = mask
    for k in tl.static_range(N_IDX):
        i = tl.load(idx_ptrs[k] + element_offset(lin, shape, idx_strides[k], NDIM), mask=mask, other=0)
        i = i.to(tl.int64)
        i = tl.where(i < 0, i + sizes[k], i)
        ok = ok & (i >= 0) & (i < sizes[k])
        off += i * dim_strides[k]
    return off, ok


@triton.jit
def index_kernel(x_ptr, other_ptr, idx_ptrs, numel, shape, x_strides, other_strides, idx_strides,
                 sizes, dim_strides, MODE: tl.constexpr, N_IDX: tl.constexpr, NDIM: tl.constexpr,
                 BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    idx_off, ok = _indexed_offset(lin, mask, idx_ptrs, shape, idx_strides, sizes, dim_strides, NDIM, N_IDX)
    src = x_ptr + element_offset(lin, shape, x_strides, NDIM) + idx_off
    other = other_ptr + element_offset(lin, shape, other_strides, NDIM)
    if MODE == "gather":
        tl.store(other, tl.load(src, mask=ok, other=0).to(other_ptr.dtype.element_ty), mask=mask)
    elif MODE == "put":
        tl.store(src, tl.load(other, mask=ok).to(x_ptr.dtype.element_ty), mask=ok)
    elif MODE == "offsets":  # other is int64: where element r lands, in elements from x's start
        tl.store(other, element_offset(lin, shape, x_strides, NDIM) + idx_off, mask=mask)
    else:
        tl.atomic_add(src, tl.load(other, mask=ok).to(x_ptr.dtype.element_ty), mask=ok)


def index_op(mode: str, x: torch.Tensor, other: torch.Tensor, indices, shape, x_strides, other_strides,
             idx_strides, sizes, dim_strides):
    """Run ``mode`` ('gather', 'put' or 'add') over result shape ``shape`` (see the module doc).

    ``x`` is the indexed tensor (read by gather, written by put/add) and ``other`` the tensor laid
    over the result (written by gather, read by put/add; a 0-d tensor with zero strides broadcasts
    one value). ``indices`` are int32/int64 tensors with ``idx_strides`` over ``shape``; ``sizes``
    and ``dim_strides`` are the size and x-stride of the dim each one indexes.
    """
    if mode not in _MODES:
        raise ValueError(f"index_op: unknown mode {mode!r}; expected one of {_MODES}")
    numel = math.prod(shape)
    if numel == 0:
        return
    if mode == "add" and segment.deterministic(x.device):
        offsets = torch.empty(tuple(shape), dtype=torch.int64, device=x.device)
        index_op("offsets", x, offsets, indices, shape, x_strides, offsets.stride(), idx_strides, sizes,
                 dim_strides)
        segment.index_add(x, offsets, other, shape, other_strides)
        return
    cshape, strides = collapse(tuple(shape), [x_strides, other_strides, *idx_strides])
    block = block_for(numel, x.device)
    launch(index_kernel, (cdiv(numel, block),), x, other, tuple(indices), numel, cshape,
           strides[0], strides[1], tuple(strides[2:]), tuple(int(s) for s in sizes),
           tuple(int(s) for s in dim_strides), MODE=mode, N_IDX=len(indices), NDIM=len(cshape),
           BLOCK=block, num_warps=4)


@triton.jit
def _bounds_kernel(idx_ptr, first_ptr, numel, low, high, shape, strides, NDIM: tl.constexpr,
                   BLOCK: tl.constexpr):
    """first = min(first, smallest linear position whose index is outside [low, high))."""
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    i = tl.load(idx_ptr + element_offset(lin, shape, strides, NDIM), mask=mask, other=0).to(tl.int64)
    bad = mask & ((i < low) | (i >= high))
    tl.atomic_min(first_ptr, tl.min(tl.where(bad, lin, numel), 0))


def first_out_of_bounds(index: torch.Tensor, size: int, allow_negative: bool = True):
    """The first (row-major) value of integer tensor ``index`` outside ``[-size, size)`` (or
    ``[0, size)`` without ``allow_negative``), or None when all are in range."""
    numel = index.numel()
    if numel == 0:
        return None
    first = torch.full((), numel, dtype=torch.int64, device=index.device)
    shape, (strides,) = collapse(tuple(index.shape), [index.stride()])
    block = block_for(numel, index.device)
    launch(_bounds_kernel, (cdiv(numel, block),), index, first, numel,
           -size if allow_negative else 0, size, shape, strides, NDIM=len(shape), BLOCK=block, num_warps=4)
    pos = int(first.item())
    if pos == numel:
        return None
    coords = []
    for s in reversed(index.shape):
        coords.append(pos % s)
        pos //= s
    return int(index[tuple(reversed(coords))].item())


# ----------------------------------------------------------------------------- nonzero

@triton.jit
def _count_kernel(x_ptr, counts_ptr, total_ptr, numel, shape, strides, NDIM: tl.constexpr,
                  BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lin = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    nz = mask & (tl.load(x_ptr + element_offset(lin, shape, strides, NDIM), mask=mask, other=0) != 0)
    count = tl.sum(nz.to(tl.int64), 0)
    tl.store(counts_ptr + pid, count)
    tl.atomic_add(total_ptr, count)


@triton.jit
def _nonzero_kernel(x_ptr, counts_ptr, out_ptr, numel, shape, strides, NDIM: tl.constexpr,
                    NCOL: tl.constexpr, BLOCK: tl.constexpr, BLOCK_P: tl.constexpr):
    pid = tl.program_id(0)
    lin = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    nz = mask & (tl.load(x_ptr + element_offset(lin, shape, strides, NDIM), mask=mask, other=0) != 0)
    base = tl.zeros([BLOCK_P], tl.int64)
    for start in range(0, pid, BLOCK_P):  # nonzeros in all earlier blocks
        j = start + tl.arange(0, BLOCK_P)
        base += tl.load(counts_ptr + j, mask=j < pid, other=0)
    row = tl.sum(base, 0) + tl.cumsum(nz.to(tl.int64), 0) - 1
    rem = lin
    for i in tl.static_range(NCOL):  # row-major coordinates, innermost first
        tl.store(out_ptr + row * NCOL + (NCOL - 1 - i), rem % shape[NDIM - 1 - i], mask=nz)
        rem = rem // shape[NDIM - 1 - i]


def nonzero(x: torch.Tensor) -> torch.Tensor:
    """Coordinates of the nonzero (True, NaN included) elements of ``x`` in row-major order: an
    int64 tensor of shape (count, x.dim()). Reads the count back to the host once."""
    ncol = x.dim()
    numel = x.numel()
    if numel == 0:
        return torch.empty((0, ncol), dtype=torch.int64, device=x.device)
    # coordinates need every dim (no collapsing); a 0-d tensor reads as one element
    shape, strides = (tuple(x.shape), x.stride()) if ncol else ((1,), (0,))
    block = block_for(numel, x.device)
    n_blocks = cdiv(numel, block)
    counts = torch.empty((n_blocks,), dtype=torch.int64, device=x.device)
    total = torch.zeros((), dtype=torch.int64, device=x.device)
    launch(_count_kernel, (n_blocks,), x, counts, total, numel, shape, strides, NDIM=len(shape),
           BLOCK=block, num_warps=4)
    out = torch.empty((int(total.item()), ncol), dtype=torch.int64, device=x.device)
    if out.numel():
        launch(_nonzero_kernel, (n_blocks,), x, counts, out, numel, shape, strides, NDIM=len(shape),
               NCOL=ncol, BLOCK=block, BLOCK_P=1024, num_warps=4)
    return out


# ----------------------------------------------------------------------------- sort

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
def _sort_block_kernel(src_key, src_idx, dst_key, dst_idx, n_rows, n, k_merge,
                       src_shape, src_strides, src_col_stride, dst_shape, dst_strides, dst_col_stride,
                       NS: tl.constexpr, ND: tl.constexpr, FROM_INPUT: tl.constexpr, TO_OUTPUT: tl.constexpr,
                       MERGE: tl.constexpr, DESCENDING: tl.constexpr, ROWS: tl.constexpr, LOG_B: tl.constexpr):
    """Sort (or, with MERGE, finish merging stage k_merge of) the B = 2^LOG_B columns starting at
    c0 = program_id(1) * B of ROWS rows. FROM_INPUT reads keys from the input (original index =
    column, padding past n); otherwise (key, index) pairs come from the scratch rows. TO_OUTPUT
    writes the first n columns of values and indices; otherwise all B go back to scratch."""
    B: tl.constexpr = 1 << LOG_B
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    c0 = tl.program_id(1).to(tl.int64) * B
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
def _sort_exchange_kernel(key_ptr, idx_ptr, P, n, j, k, DESCENDING: tl.constexpr, BLOCK: tl.constexpr):
    """One bitonic stage with partners j >= B apart, in the scratch rows (length P) in memory."""
    row = tl.program_id(0).to(tl.int64) * P
    q = tl.program_id(1).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
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
    return 1 << 16 if device.type == "cpu" else 1 << 11


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
    P = triton.next_power_of_2(n)
    B = min(P, sort_block_limit(x.device))
    rows_per_program = min(triton.next_power_of_2(n_rows), max(1, block_for(1 << 30, x.device) // B))
    grid_rows = cdiv(n_rows, rows_per_program)
    common = dict(DESCENDING=bool(descending), ROWS=rows_per_program, LOG_B=B.bit_length() - 1,
                  num_warps=8 if rows_per_program * B >= 2048 else 4)
    out_geometry = (row_shape, out_rows, values_.stride(dim), len(row_shape))
    if P == B:
        launch(_sort_block_kernel, (grid_rows, 1), x, x, values_, indices_, n_rows, n, 0,
               row_shape, x_rows, x.stride(dim), *out_geometry[:3], NS=len(row_shape), ND=len(row_shape),
               FROM_INPUT=True, TO_OUTPUT=True, MERGE=False, **common)
        return values, indices
    # Rows longer than one block: sort B-column chunks (alternating directions), then merge.
    key = torch.empty((n_rows, P), dtype=x.dtype, device=x.device)
    idx = torch.empty((n_rows, P), dtype=torch.int64, device=x.device)
    scratch = ((n_rows,), (P,), 1)
    launch(_sort_block_kernel, (grid_rows, P // B), x, x, key, idx, n_rows, n, 0,
           row_shape, x_rows, x.stride(dim), *scratch, NS=len(row_shape), ND=1,
           FROM_INPUT=True, TO_OUTPUT=False, MERGE=False, **common)
    exchange_block = min(P // 2, block_for(P // 2, x.device))
    k = 2 * B
    while k <= P:
        j = k // 2
        while j >= B:
            launch(_sort_exchange_kernel, (n_rows, cdiv(P // 2, exchange_block)), key, idx, P, n, j, k,
                   DESCENDING=bool(descending), BLOCK=exchange_block, num_warps=4)
            j //= 2
        last = k == P
        dst = (values_, indices_) + out_geometry[:3] if last else (key, idx) + scratch
        launch(_sort_block_kernel, (grid_rows, P // B), key, idx, *dst[:2], n_rows, n, k,
               *scratch, *dst[2:], NS=1, ND=len(row_shape) if last else 1,
               FROM_INPUT=False, TO_OUTPUT=last, MERGE=True, **common)
        k *= 2
    return values, indices
