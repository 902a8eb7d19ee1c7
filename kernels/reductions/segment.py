"""Deterministic scatter-add: sums grouped by a sorted key instead of float atomics.

A scatter-add ``x[key(r)] += v[r]`` with ``tl.atomic_add`` (the embedding backward, the backward of
advanced indexing/gather/index_select, ``scatter_add``) adds colliding values in whatever order
the GPU's threads arrive, so the last bits of a sum can differ from run to run. Here the keys are
sorted first (stably: equal keys keep increasing r), then each destination row e finds its run
[lo, hi) of equal keys by binary search and adds its values itself, in that order:

    x[e, :] (+)= sum_{j = lo(e)}^{hi(e) - 1} v[perm[j], :]     lo/hi = lower/upper bound of key(e)

One program owns each destination element, so no two programs write the same address and the
result is the same bit for bit on every run (and equal to the CPU interpreter's in-order atomics).
Cost: one sort plus one launch, against one launch of atomics, so on CUDA it is used while
``deterministic()`` holds (``tgrad.use_deterministic_algorithms``, on by default); the CPU
interpreter's atomics run in program order and are deterministic already.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch
from ..helpers.layout import block_for, block_shape_2d, cdiv, collapse, element_offset
from .sort import sort
from ..runtime.target import target

__all__ = ["deterministic", "set_deterministic", "segment_sum", "embedding_grad", "index_add"]

_enabled = True


def set_deterministic(mode: bool) -> None:
    global _enabled
    _enabled = bool(mode)


def deterministic_enabled() -> bool:
    return _enabled


def deterministic(device: torch.device) -> bool:
    """Whether scatter-adds on ``device`` take the sort-based path."""
    return _enabled and target(device) == "cuda"


@triton.jit
def _bound(s_ptr, key, n, mask, ITERS, UPPER: tl.constexpr):
    """Per lane, the first position j in sorted s[0:n] with s[j] >= key (> key when UPPER)."""
    first = key * 0
    count = first + n
    for _ in range(ITERS):
        step = count // 2
        it = first + step
        live = mask & (count > 0)
        s = tl.load(s_ptr + it, mask=live, other=0)
        if UPPER:
            right = live & (s <= key)
        else:
            right = live & (s < key)
        first = tl.where(right, it + 1, first)
        count = tl.where(right, count - step - 1, tl.where(live, step, 0))
    return first


@triton.jit
def segment_sum_kernel(s_ptr, perm_ptr, v_ptr, x_ptr, n_keys, n_rows, W, ITERS, skip_key,
                       x_shape, key_strides, x_strides, x_col_stride, v_shape, v_strides, v_col_stride,
                       XD: tl.constexpr, VD: tl.constexpr, ACCUMULATE: tl.constexpr, ACC: tl.constexpr,
                       BLOCK_R: tl.constexpr, BLOCK_W: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    key = element_offset(rows, x_shape, key_strides, XD)
    lo = _bound(s_ptr, key, n_keys, row_mask, ITERS, False)
    hi = _bound(s_ptr, key, n_keys, row_mask, ITERS, True)
    count = tl.where(row_mask & (key != skip_key), hi - lo, 0)
    longest = tl.max(count, 0)
    x_row = x_ptr + element_offset(rows, x_shape, x_strides, XD)
    for c0 in range(0, W, BLOCK_W):
        cols = c0 + tl.arange(0, BLOCK_W).to(tl.int64)
        col_mask = cols < W
        acc = tl.zeros([BLOCK_R, BLOCK_W], ACC)
        for j in range(0, longest):  # in sorted order: increasing r within a key
            live = j < count
            r = tl.load(perm_ptr + lo + j, mask=live, other=0)
            v = tl.load(v_ptr + (element_offset(r, v_shape, v_strides, VD)[:, None] + cols[None, :] * v_col_stride),
                        mask=live[:, None] & col_mask[None, :], other=0)
            acc += v.to(ACC)
        dst = x_row[:, None] + cols[None, :] * x_col_stride
        if ACCUMULATE:  # only rows that receive something: x + 0 would turn -0.0 into +0.0
            mask = (row_mask & (count > 0))[:, None] & col_mask[None, :]
            acc = tl.load(dst, mask=mask, other=0).to(ACC) + acc
        else:
            mask = row_mask[:, None] & col_mask[None, :]
        tl.store(dst, acc.to(x_ptr.dtype.element_ty), mask=mask)


def _acc(dtype: torch.dtype):
    return compute_dtype(accumulate_dtype(dtype) if dtype.is_floating_point else torch.int64)


def segment_sum(keys: torch.Tensor, values: torch.Tensor, v_geometry, x: torch.Tensor, x_geometry, width: int,
                *, accumulate: bool, skip_key: int = -1) -> None:
    """``x[row e] (+)= sum of values[row r] over r with keys[r] == key(e)``, deterministically.

    ``keys``: integer (R,), one per value row, any strides. ``v_geometry = (shape, strides,
    col_stride)`` walks the R value rows (row-major over ``shape``) and their ``width`` columns.
    ``x_geometry = (shape, key_strides, strides, col_stride)`` walks the E destination rows: row e
    has key ``element_offset(e, shape, key_strides)`` and lives at ``element_offset(e, shape, strides)``. Rows
    whose key is ``skip_key`` get nothing. Without ``accumulate`` every row of x is written (0
    where nothing lands); with it, only rows that receive values change."""
    R = keys.numel()
    x_shape, key_strides, x_strides, x_col = x_geometry
    E = 1
    for d in x_shape:
        E *= d
    if E == 0 or width == 0 or (R == 0 and accumulate):
        return
    s, perm = sort(keys.reshape(-1), 0)
    xs, (ks, xst) = collapse(tuple(x_shape), [tuple(key_strides), tuple(x_strides)])
    v_shape, v_strides, v_col = v_geometry
    vs, (vst,) = collapse(tuple(v_shape), [tuple(v_strides)])
    if width == 1:
        block_r, block_w, warps = block_for(E, x.device), 1, 4
    else:
        block_r, block_w, warps = block_shape_2d(E, width, x.device)
    launch(segment_sum_kernel, (cdiv(E, block_r),), s, perm, values, x, R, E, width,
           max(R, 1).bit_length() + 1, int(skip_key), xs, ks, xst, x_col, vs, vst, v_col,
           XD=len(xs), VD=len(vs), ACCUMULATE=bool(accumulate), ACC=_acc(values.dtype), BLOCK_R=block_r,
           BLOCK_W=block_w, num_warps=warps)


def embedding_grad(idx: torch.Tensor, g: torch.Tensor, num_weights: int, padding_idx, out_dtype) -> torch.Tensor:
    """The (V, D) weight gradient: row v = sum of the rows g[k] ((K, D), any strides) with
    idx[k] == v, 0 for ``padding_idx`` and rows nobody picked."""
    K, D = g.shape
    dw = torch.empty((num_weights, D), dtype=out_dtype, device=g.device)
    segment_sum(idx, g, ((K,), (g.stride(0),), g.stride(1)), dw, ((num_weights,), (1,), (D,), 1), D,
                accumulate=False, skip_key=-1 if padding_idx is None else int(padding_idx))
    return dw


def index_add(x: torch.Tensor, offsets: torch.Tensor, other: torch.Tensor, shape, other_strides) -> None:
    """``x.flat_storage[offsets[r]] += other[r]`` over result shape ``shape`` (``offsets``: int64,
    element offsets from x's first element; ``other`` reached through ``other_strides``)."""
    segment_sum(offsets, other, (tuple(shape), tuple(other_strides), 0), x,
                (tuple(x.shape), x.stride(), x.stride(), 0), 1, accumulate=True)
