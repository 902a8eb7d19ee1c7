"""Kernels behind integer-tensor and boolean-mask indexing and ``gather``/``scatter_add`` (sorting is
``reductions/sort.py``).

Indexing (``index_op``). An advanced index is described by the *result* shape R and, for each
operand, its strides over R (PyTorch's TensorIterator view of ``index``): for result element r,

    src(r) = x + x_off(r) + sum_k wrap(idx_k[r]) * dim_stride_k,   wrap(i) = i + size_k if i < 0

where ``x_off`` walks the dims of x that no index tensor replaces (stride 0 over the broadcast
index dims) and ``idx_k`` is the k-th index tensor broadcast over R by strides. Three modes read
or write that address: ``gather`` (other[r] = *src), ``put`` (*src = other[r]) and ``add``
(*src += other[r], with ``tl.atomic_add`` so duplicate indices accumulate; the order of the adds,
and so the last bit of a float sum, is not deterministic on CUDA, where ``add`` therefore takes the
sort-based path of ``reductions/segment.py`` unless ``tgrad.use_deterministic_algorithms(False)``: a fourth
mode, ``offsets``, writes each r's target offset for it to sort). Indices are checked *before*
(``first_out_of_bounds``); the kernel still masks any lane whose index falls outside, so it never
touches memory out of range.

``nonzero`` is a two-pass stream compaction: per-block counts (and their total, read back once to
allocate the output), then each block writes the coordinates of its nonzero elements at its
running position, ``tl.cumsum`` within the block plus the counts of all earlier blocks.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..reductions import segment
from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, collapse, element_offset

__all__ = ["index_op", "first_out_of_bounds", "nonzero"]

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


# What an index op does at each result element r, given src = x + x_off(r) + idx_off(r) (in
# range where ``ok``) and ``other`` (its element of the tensor laid over the result): a formula the
# kernel takes as a compile-time constant.

@triton.jit
def gather(x_ptr, src_off, ok, other, mask):  # other[r] = *src
    tl.store(other, tl.load(x_ptr + src_off, mask=ok, other=0).to(other.dtype.element_ty), mask=mask)


@triton.jit
def put(x_ptr, src_off, ok, other, mask):  # *src = other[r]
    tl.store(x_ptr + src_off, tl.load(other, mask=ok).to(x_ptr.dtype.element_ty), mask=ok)


@triton.jit
def add(x_ptr, src_off, ok, other, mask):  # *src += other[r], duplicates accumulating
    src = x_ptr + src_off
    tl.atomic_add(src, tl.load(other, mask=ok).to(x_ptr.dtype.element_ty), mask=ok)


@triton.jit
def offsets(x_ptr, src_off, ok, other, mask):  # other (int64)[r] = where r lands, in elements from x
    tl.store(other, src_off, mask=mask)


INDEX_OPS = {"gather": gather, "put": put, "add": add, "offsets": offsets}


@triton.jit
def index_kernel(x_ptr, other_ptr, idx_ptrs, numel, shape, x_strides, other_strides, idx_strides,
                 sizes, dim_strides, OP: tl.constexpr, N_IDX: tl.constexpr, NDIM: tl.constexpr,
                 BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    idx_off, ok = _indexed_offset(lin, mask, idx_ptrs, shape, idx_strides, sizes, dim_strides, NDIM, N_IDX)
    OP(x_ptr, element_offset(lin, shape, x_strides, NDIM) + idx_off, ok,
       other_ptr + element_offset(lin, shape, other_strides, NDIM), mask)


def index_op(mode: str, x: torch.Tensor, other: torch.Tensor, indices, shape, x_strides, other_strides,
             idx_strides, sizes, dim_strides):
    """Run ``mode`` ('gather', 'put' or 'add') over result shape ``shape`` (see the module doc).

    ``x`` is the indexed tensor (read by gather, written by put/add) and ``other`` the tensor laid
    over the result (written by gather, read by put/add; a 0-d tensor with zero strides broadcasts
    one value). ``indices`` are int32/int64 tensors with ``idx_strides`` over ``shape``; ``sizes``
    and ``dim_strides`` are the size and x-stride of the dim each one indexes.
    """
    if mode not in INDEX_OPS:
        raise ValueError(f"index_op: unknown mode {mode!r}; expected one of {tuple(INDEX_OPS)}")
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
           tuple(int(s) for s in dim_strides), OP=INDEX_OPS[mode], N_IDX=len(indices), NDIM=len(cshape),
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
