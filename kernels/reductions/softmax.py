"""softmax / log_softmax along one dim of a strided tensor, and their backward, one launch each.

Every index of the other dims is a row; a program owns ``BLOCK_R`` rows. A row that fits in one
``BLOCK_C`` chunk is loaded once and kept in registers; a longer row is read twice: an online pass
for its max ``m`` and ``s = sum exp(x - m)`` (``logsumexp.online_logsumexp``), then a pass
that writes the output, so rows of any length work. Like torch, a row containing NaN, or whose max
is +inf or -inf, comes out all NaN (``x - m`` is NaN there).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import compute_dtype
from ..runtime.launch import launch_site
from ..helpers.layout import block_shape_2d, cdiv, collapse, element_offset
from .logsumexp import online_logsumexp

__all__ = ["softmax", "softmax_backward"]


@triton.jit
def _chunk(rows_mask, start, n_cols, BLOCK_C: tl.constexpr):
    cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
    return cols, rows_mask[:, None] & (cols < n_cols)[None, :]


@triton.jit
def _load(ptr, row_off, cols, col_stride, mask, COMPUTE: tl.constexpr):
    # masked lanes read 0, so they add nothing to the backward's row sums
    return tl.load(ptr + (row_off[:, None] + cols[None, :] * col_stride), mask=mask,
                   other=0).to(COMPUTE)


@triton.jit
def _row_max(x):
    # NaN lanes are left for exp() to propagate; hiding them here keeps numpy's nanmax quiet.
    return tl.max(tl.where(x == x, x, float("-inf")), 1)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, row_shape, x_row_strides, out_row_strides,
                   x_col_stride, out_col_stride, LOG: tl.constexpr, NK: tl.constexpr,
                   COMPUTE: tl.constexpr, ONE_CHUNK: tl.constexpr,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """y = exp(x - m) / s, or log y = x - m - log s, with m = max x and s = sum exp(x - m) per row."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    x_row = element_offset(rows, row_shape, x_row_strides, NK)
    out_row = element_offset(rows, row_shape, out_row_strides, NK)
    if ONE_CHUNK:
        cols, mask = _chunk(row_mask, 0, n_cols, BLOCK_C)
        x = tl.where(mask, _load(x_ptr, x_row, cols, x_col_stride, mask, COMPUTE), float("-inf"))
        m = _row_max(x)
        e = tl.exp(x - m[:, None])  # 0 on masked lanes (-inf), whatever m is, short of NaN
        s = tl.sum(e, 1)
        if LOG:
            y = x - m[:, None] - tl.log(s)[:, None]
        else:
            y = e / s[:, None]
        tl.store(out_ptr + (out_row[:, None] + cols[None, :] * out_col_stride),
                 y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        m = tl.full([BLOCK_R], float("-inf"), COMPUTE)
        s = tl.zeros([BLOCK_R], COMPUTE)
        for start in range(0, n_cols, BLOCK_C):
            cols, mask = _chunk(row_mask, start, n_cols, BLOCK_C)
            x = tl.where(mask, _load(x_ptr, x_row, cols, x_col_stride, mask, COMPUTE),
                         float("-inf"))
            # a +inf or NaN max leaves s NaN, so the row comes out NaN as in torch
            m, s = online_logsumexp(m, s, x)
        log_s = tl.log(s)
        for start in range(0, n_cols, BLOCK_C):
            cols, mask = _chunk(row_mask, start, n_cols, BLOCK_C)
            x = _load(x_ptr, x_row, cols, x_col_stride, mask, COMPUTE)
            if LOG:
                y = x - m[:, None] - log_s[:, None]
            else:
                y = tl.exp(x - m[:, None]) / s[:, None]
            tl.store(out_ptr + (out_row[:, None] + cols[None, :] * out_col_stride),
                     y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _backward_chunk(y, g, total, LOG: tl.constexpr):
    if LOG:
        return g - tl.exp(y) * total[:, None]
    else:
        return y * (g - total[:, None])


@triton.jit
def softmax_backward_kernel(y_ptr, g_ptr, out_ptr, n_rows, n_cols, row_shape, y_row_strides,
                            g_row_strides, out_row_strides, y_col_stride, g_col_stride,
                            out_col_stride, LOG: tl.constexpr, NK: tl.constexpr,
                            COMPUTE: tl.constexpr, ONE_CHUNK: tl.constexpr,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """softmax:     dx = y * (g - sum(g * y))          (y the softmax output)
    log_softmax: dx = g - exp(y) * sum(g)            (y the log_softmax output)"""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    y_row = element_offset(rows, row_shape, y_row_strides, NK)
    g_row = element_offset(rows, row_shape, g_row_strides, NK)
    out_row = element_offset(rows, row_shape, out_row_strides, NK)
    if ONE_CHUNK:
        cols, mask = _chunk(row_mask, 0, n_cols, BLOCK_C)
        y = _load(y_ptr, y_row, cols, y_col_stride, mask, COMPUTE)
        g = _load(g_ptr, g_row, cols, g_col_stride, mask, COMPUTE)
        if LOG:
            total = tl.sum(g, 1)
        else:
            total = tl.sum(g * y, 1)
        dx = _backward_chunk(y, g, total, LOG)
        tl.store(out_ptr + (out_row[:, None] + cols[None, :] * out_col_stride),
                 dx.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, n_cols, BLOCK_C):
            cols, mask = _chunk(row_mask, start, n_cols, BLOCK_C)
            g = _load(g_ptr, g_row, cols, g_col_stride, mask, COMPUTE)
            if LOG:
                acc += g
            else:
                acc += g * _load(y_ptr, y_row, cols, y_col_stride, mask, COMPUTE)
        total = tl.sum(acc, 1)
        for start in range(0, n_cols, BLOCK_C):
            cols, mask = _chunk(row_mask, start, n_cols, BLOCK_C)
            y = _load(y_ptr, y_row, cols, y_col_stride, mask, COMPUTE)
            g = _load(g_ptr, g_row, cols, g_col_stride, mask, COMPUTE)
            dx = _backward_chunk(y, g, total, LOG)
            tl.store(out_ptr + (out_row[:, None] + cols[None, :] * out_col_stride),
                     dx.to(out_ptr.dtype.element_ty), mask=mask)


def _rows_along(shape, dim, tensors):
    """(n_rows, n_cols, row_shape, per-tensor row strides, per-tensor col strides), the rows being
    every dim but ``dim``, collapsed jointly over all ``tensors``."""
    if not shape:  # a 0-d tensor is one row of one element
        return 1, 1, (1,), [(0,)] * len(tensors), [0] * len(tensors)
    kept = [d for d in range(len(shape)) if d != dim]
    row_shape, row_strides = collapse(tuple(shape[d] for d in kept),
                                       [[t.stride(d) for d in kept] for t in tensors])
    n_rows = math.prod(shape[d] for d in kept)
    return n_rows, shape[dim], row_shape, row_strides, [t.stride(dim) for t in tensors]


def _normalize_dim(dim, ndim):
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise ValueError(f"softmax: dim {dim} out of range for a {ndim}-d tensor")
    return dim % size


def _blocks(n_rows, n_cols, device):
    block_r, block_c, warps = block_shape_2d(n_rows, n_cols, device)
    return block_r, block_c, warps, n_cols <= block_c


def _site_strides(t: torch.Tensor, dim: int):
    """``t``'s strides as far as a launch reads them: a size-1 dim's is dropped (``collapse``), but
    ``dim``'s is passed as it is. A slice ``logits[:, -1, :]`` keeps one site for every length."""
    return tuple(st if n != 1 or d == dim else 0 for d, (n, st) in enumerate(zip(t.shape, t.stride())))


def softmax(x: torch.Tensor, dim: int, log: bool = False, out_dtype=None) -> torch.Tensor:
    """softmax (or log_softmax when ``log``) of ``x`` along ``dim`` (negative allowed).
    Returns a new contiguous tensor of x's shape and ``out_dtype`` or ``x.dtype``."""
    dim = _normalize_dim(dim, x.dim())
    out = torch.empty(x.shape, dtype=out_dtype or x.dtype, device=x.device)
    if x.numel() == 0:
        return out

    def arguments():
        n_rows, n_cols, row_shape, (x_rs, out_rs), (x_cs, out_cs) = _rows_along(x.shape, dim, [x, out])
        block_r, block_c, warps, one_chunk = _blocks(n_rows, n_cols, x.device)
        acc = torch.float64 if torch.float64 in (x.dtype, out.dtype) else torch.float32
        return ((cdiv(n_rows, block_r),), (x, out, n_rows, n_cols, row_shape, x_rs, out_rs, x_cs, out_cs),
                dict(LOG=bool(log), NK=len(row_shape), COMPUTE=compute_dtype(acc), ONE_CHUNK=one_chunk,
                     BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps))
    # the site: what the arguments derive from (out is contiguous, of x's shape)
    site = ("softmax", x.shape, _site_strides(x, dim), x.dtype, out.dtype, dim, bool(log))
    launch_site(softmax_kernel, site, (x, out), arguments)
    return out


def softmax_backward(y: torch.Tensor, g: torch.Tensor, dim: int, log: bool = False) -> torch.Tensor:
    """Gradient wrt the input of softmax (log_softmax when ``log``) given its output ``y`` and the
    upstream gradient ``g`` (same shape, any strides). Returns a contiguous tensor of g's dtype."""
    if y.shape != g.shape:
        raise ValueError(f"softmax_backward: y {tuple(y.shape)} and g {tuple(g.shape)} differ")
    dim = _normalize_dim(dim, y.dim())
    out = torch.empty(g.shape, dtype=g.dtype, device=g.device)
    if g.numel() == 0:
        return out

    def arguments():
        n_rows, n_cols, row_shape, (y_rs, g_rs, out_rs), (y_cs, g_cs, out_cs) = _rows_along(
            g.shape, dim, [y, g, out])
        block_r, block_c, warps, one_chunk = _blocks(n_rows, n_cols, g.device)
        acc = torch.float64 if torch.float64 in (y.dtype, g.dtype) else torch.float32
        return ((cdiv(n_rows, block_r),), (y, g, out, n_rows, n_cols, row_shape, y_rs, g_rs, out_rs, y_cs, g_cs,
                                           out_cs),
                dict(LOG=bool(log), NK=len(row_shape), COMPUTE=compute_dtype(acc), ONE_CHUNK=one_chunk,
                     BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps))
    site = ("softmax_backward", g.shape, _site_strides(y, dim), _site_strides(g, dim), y.dtype, g.dtype, dim,
            bool(log))
    launch_site(softmax_backward_kernel, site, (y, g, out), arguments)
    return out
