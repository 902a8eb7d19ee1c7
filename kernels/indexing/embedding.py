"""Embedding lookup and its backward, one-hot encoding, and the range of an index tensor.

    forward:   out[k, :] = weight[idx[k], :]                 (a row gather, checked in-launch)
    backward:  dweight[idx[k], :] += g[k, :]  for idx[k] != padding_idx

The gather masks every lane whose index lies outside [0, V) (nothing is read there) and records
the first such position with an atomic min, which the caller reads once and turns into PyTorch's
``IndexError('index out of range in self')``. The backward scatter-adds rows with ``tl.atomic_add``
so repeated indices accumulate: simple and one launch, but the order of the adds is not fixed on
CUDA, so the last bits of a row hit by many indices may differ between runs; there the backward
takes the sort-based path of ``reductions/segment.py`` instead (a sort plus one launch), unless
``tgrad.use_deterministic_algorithms(False)``. fp16/bf16 gradients accumulate in an fp32 buffer
that is cast once at the end (in fp32 registers on the sort-based path).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import elementwise
from ..reductions import segment
from ..runtime.capture import is_capturing
from ..runtime.launch import launch
from ..runtime.target import target
from ..helpers.layout import block_for, block_shape_2d, cdiv, collapse, element_offset
from ..elementwise.pointwise import pointwise

__all__ = ["embedding_forward", "embedding_backward", "one_hot", "index_range"]


@triton.jit
def embedding_fwd_kernel(idx_ptr, w_ptr, out_ptr, bad_ptr, K, V, D, idx_shape, idx_strides,
                         w_rs, w_cs, NDIM: tl.constexpr, FLOAT: tl.constexpr, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < K
    i = tl.load(idx_ptr + element_offset(rows, idx_shape, idx_strides, NDIM), mask=row_mask,
                other=0).to(tl.int64)
    ok = row_mask & (i >= 0) & (i < V)
    tl.atomic_min(bad_ptr, tl.min(tl.where(row_mask & ~ok, rows, K), 0))
    i = tl.where(ok, i, 0)
    w_rows = w_ptr + i[:, None] * w_rs  # each row's address once, not per block of columns
    out_rows = out_ptr + rows[:, None] * D
    for start in range(0, D, BLOCK_C):
        cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
        col_mask = cols < D
        v = tl.load(w_rows + cols[None, :] * w_cs, mask=ok[:, None] & col_mask[None, :], other=0)
        if FLOAT:  # out of range: NaN, never another row's values (integers stay exact: 0 there)
            v = tl.where(ok[:, None], v, float("nan"))
        tl.store(out_rows + cols[None, :], v, mask=row_mask[:, None] & col_mask[None, :])


@triton.jit
def embedding_bwd_kernel(idx_ptr, g_ptr, dw_ptr, K, V, D, idx_shape, idx_strides, g_rs, g_cs,
                         padding_idx, NDIM: tl.constexpr, BLOCK_R: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < K
    i = tl.load(idx_ptr + element_offset(rows, idx_shape, idx_strides, NDIM), mask=row_mask,
                other=0).to(tl.int64)
    # the padding row gets no gradient; an out-of-range index (a replayed graph does not check) none either
    live = row_mask & (i != padding_idx) & (i >= 0) & (i < V)
    g_rows = g_ptr + rows[:, None] * g_rs  # each row's address once, not per block of columns
    dw_rows = dw_ptr + i[:, None] * D
    for start in range(0, D, BLOCK_C):
        cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
        mask = live[:, None] & (cols < D)[None, :]
        g = tl.load(g_rows + cols[None, :] * g_cs, mask=mask, other=0)
        tl.atomic_add(dw_rows + cols[None, :], g.to(dw_ptr.dtype.element_ty), mask=mask)


@triton.jit
def one_hot_kernel(idx_ptr, out_ptr, K, C, idx_shape, idx_strides, NDIM: tl.constexpr,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < K
    i = tl.load(idx_ptr + element_offset(rows, idx_shape, idx_strides, NDIM), mask=row_mask,
                other=0).to(tl.int64)
    for start in range(0, C, BLOCK_C):
        cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
        hot = (cols[None, :] == i[:, None]).to(out_ptr.dtype.element_ty)
        tl.store(out_ptr + (rows[:, None] * C + cols[None, :]), hot,
                 mask=row_mask[:, None] & (cols < C)[None, :])


@triton.jit
def index_range_kernel(idx_ptr, out_ptr, K, idx_shape, idx_strides, NDIM: tl.constexpr,
                       BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < K
    i = tl.load(idx_ptr + element_offset(lin, idx_shape, idx_strides, NDIM), mask=mask, other=0).to(tl.int64)
    big = 9223372036854775807
    tl.atomic_min(out_ptr, tl.min(tl.where(mask, i, big), 0))  # min and max commute: no race
    tl.atomic_max(out_ptr + 1, tl.max(tl.where(mask, i, -big - 1), 0))


def _index_geometry(idx):
    shape, (strides,) = collapse(tuple(idx.shape), [idx.stride()])
    return shape, strides


def embedding_forward(idx: torch.Tensor, weight: torch.Tensor):
    """``weight[idx]`` as a new contiguous (*idx.shape, D) tensor. Returns ``(out, bad)``, bad the
    first out-of-range index value (in row-major order) or None."""
    V, D = weight.shape
    K = idx.numel()
    out = torch.empty(tuple(idx.shape) + (D,), dtype=weight.dtype, device=weight.device)
    if K == 0:
        return out, None
    shape, strides = _index_geometry(idx)
    bad = torch.full((1,), K, dtype=torch.int64, device=idx.device)
    # interpreted, at least 64 rows a block (as 1-d walks take 64 lanes): a context growing by a token
    # shares one signature up to 64, instead of recording again at 2, 4, 8, 16 and 32
    rows = max(K, 64) if target(weight.device) == "cpu" else K
    block_r, block_c, warps = block_shape_2d(rows, max(D, 1), weight.device)
    launch(embedding_fwd_kernel, (cdiv(K, block_r),), idx, weight, out, bad, K, V, D, shape,
           strides, weight.stride(0), weight.stride(1), NDIM=len(shape), FLOAT=weight.dtype.is_floating_point,
           BLOCK_R=block_r,
           BLOCK_C=block_c, num_warps=warps)
    if is_capturing():  # a captured graph cannot stop to read back; its bad rows hold NaN
        return out, None
    pos = int(bad.item())
    return out, (int(idx.reshape(-1)[pos].item()) if pos < K else None)


def embedding_backward(idx: torch.Tensor, g: torch.Tensor, num_weights: int, padding_idx=None):
    """The (V, D) gradient of the weight: rows of ``g`` ((K, D), any strides) added at ``idx``
    (indices already checked), skipping ``padding_idx``."""
    K, D = g.shape
    if K and D and segment.deterministic(g.device):
        return segment.embedding_grad(idx, g, num_weights, padding_idx, g.dtype)
    acc = torch.float32 if g.dtype in (torch.float16, torch.bfloat16) else g.dtype
    dw = torch.zeros((num_weights, D), dtype=acc, device=g.device)
    if K and D:
        shape, strides = _index_geometry(idx)
        block_r, block_c, warps = block_shape_2d(K, D, g.device)
        launch(embedding_bwd_kernel, (cdiv(K, block_r),), idx, g, dw, K, num_weights, D, shape, strides,
               g.stride(0), g.stride(1), -1 if padding_idx is None else int(padding_idx),
               NDIM=len(shape), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    if acc != g.dtype:
        dw, = pointwise(elementwise.identity, [dw], dw.shape, [g.dtype], compute=tl.float32)
    return dw


def index_range(idx: torch.Tensor):
    """(min, max) of a non-empty integer tensor, read back to the host."""
    K = idx.numel()
    out = torch.tensor([2 ** 63 - 1, -(2 ** 63)], dtype=torch.int64, device=idx.device)
    shape, strides = _index_geometry(idx)
    block = block_for(K, idx.device)
    launch(index_range_kernel, (cdiv(K, block),), idx, out, K, shape, strides,
           NDIM=len(shape), BLOCK=block, num_warps=4)
    lo, hi = out.tolist()
    return lo, hi


def one_hot(idx: torch.Tensor, num_classes: int) -> torch.Tensor:
    """int64 (*idx.shape, num_classes): 1 where the class equals idx (indices already checked)."""
    K = idx.numel()
    out = torch.empty(tuple(idx.shape) + (num_classes,), dtype=torch.int64, device=idx.device)
    if K == 0 or num_classes == 0:
        return out
    shape, strides = _index_geometry(idx)
    block_r, block_c, warps = block_shape_2d(K, num_classes, idx.device)
    launch(one_hot_kernel, (cdiv(K, block_r),), idx, out, K, num_classes, shape, strides,
           NDIM=len(shape), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    return out
