"""Layer normalisation of the rows of a (M, D) matrix: one forward launch, one backward launch
(plus, only when several programs ran, one deterministic reduction of their partial sums).

Forward, per row x of length D (accumulated in fp32, fp64 for fp64 inputs):
    mu = mean(x),  rstd = 1 / sqrt(mean((x - mu)^2) + eps),  xhat = (x - mu) * rstd,  y = xhat w + b
mu and rstd are stored (M floats each) for the backward, which with g = dL/dy computes
    dx = rstd * (g w - mean(g w) - xhat * mean(g w xhat))        (row by row)
    dw = sum over rows of g * xhat,     db = sum over rows of g
where the backward's xhat is re-centred: x - mu less its own row mean. mu is stored rounded, and
its rounding error (an ulp of x), times rstd, is large beside xhat's deviation from +-1 when a
row's values nearly cancel (two close numbers): the float32 gradient came out a few % off there.
dw and db use no atomics: program p sums its own rows into row p of a partial buffer (P, 2, D), kept
in fp32/fp64, and ``kernels.reduce`` then adds the P rows in a fixed order, so the result is the same
bit for bit on every run. Interpreted there is one program (it loops over the rows; the interpreter
pays per op, not per program), so its partial row already is the answer.

The variance is two-pass (mean first, then squared deviations), not E[x^2] - mu^2, whose
cancellation loses everything for rows with a large mean. Rows longer than one block are walked in
chunks: three passes in the forward, two in the backward.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch_site
from ..helpers.layout import block_shape_2d, cdiv
from ..reductions.reduce import reduce
from ..helpers.scalars import as_f64, f64_bits
from ..runtime.target import target, sm_count

__all__ = ["layer_norm_forward", "layer_norm_backward"]


@triton.jit
def _tile(ptr, rows, row_stride, cols, col_stride, mask, COMPUTE: tl.constexpr):
    return tl.load(ptr + (rows[:, None] * row_stride + cols[None, :] * col_stride), mask=mask,
                   other=0).to(COMPUTE)


@triton.jit
def _vec(ptr, cols, stride, mask, COMPUTE: tl.constexpr):
    return tl.load(ptr + cols * stride, mask=mask, other=0).to(COMPUTE)


@triton.jit
def layer_norm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, M, D, x_rs, x_cs, w_s, b_s,
                          eps_bits, HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr,
                          ONE_CHUNK: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < M
    eps = as_f64(eps_bits).to(COMPUTE)
    if ONE_CHUNK:
        cols = tl.arange(0, BLOCK_C).to(tl.int64)
        col_mask = cols < D
        mask = row_mask[:, None] & col_mask[None, :]
        x = _tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE)
        mean = tl.sum(x, 1) / D
        xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, 1) / D + eps)
        y = xc * rstd[:, None]
        if HAS_W:
            y = y * _vec(w_ptr, cols, w_s, col_mask, COMPUTE)[None, :]
        if HAS_B:
            y = y + _vec(b_ptr, cols, b_s, col_mask, COMPUTE)[None, :]
        tl.store(y_ptr + (rows[:, None] * D + cols[None, :]), y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, D, BLOCK_C):
            cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
            mask = row_mask[:, None] & (cols < D)[None, :]
            acc += _tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE)
        mean = tl.sum(acc, 1) / D
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, D, BLOCK_C):
            cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
            mask = row_mask[:, None] & (cols < D)[None, :]
            xc = tl.where(mask, _tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE) - mean[:, None], 0.0)
            acc += xc * xc
        rstd = 1.0 / tl.sqrt(tl.sum(acc, 1) / D + eps)
        for start in range(0, D, BLOCK_C):
            cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
            col_mask = cols < D
            mask = row_mask[:, None] & col_mask[None, :]
            y = (_tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE) - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * _vec(w_ptr, cols, w_s, col_mask, COMPUTE)[None, :]
            if HAS_B:
                y = y + _vec(b_ptr, cols, b_s, col_mask, COMPUTE)[None, :]
            tl.store(y_ptr + (rows[:, None] * D + cols[None, :]), y.to(y_ptr.dtype.element_ty),
                     mask=mask)
    tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def layer_norm_bwd_kernel(x_ptr, g_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, part_ptr, M, D,
                          x_rs, x_cs, g_rs, g_cs, w_s, rows_per_prog,
                          HAS_W: tl.constexpr, NEED_DX: tl.constexpr, NEED_WB: tl.constexpr,
                          COMPUTE: tl.constexpr, ONE_CHUNK: tl.constexpr,
                          BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    first = pid * rows_per_prog
    last = tl.minimum(first + rows_per_prog, M)
    part_dw = part_ptr + pid * 2 * D  # this program's own partial rows: dw, then db
    part_db = part_dw + D
    if ONE_CHUNK:
        cols = tl.arange(0, BLOCK_C).to(tl.int64)
        col_mask = cols < D
        if HAS_W:
            w = _vec(w_ptr, cols, w_s, col_mask, COMPUTE)[None, :]
        else:
            w = 1.0
        acc_dw = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)  # lane-wise over rows, summed once at the end
        acc_db = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for r0 in range(first, last, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            row_mask = rows < last
            mask = row_mask[:, None] & col_mask[None, :]
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
            g = _tile(g_ptr, rows, g_rs, cols, g_cs, mask, COMPUTE)  # 0 on masked lanes
            xc = tl.where(mask, _tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE) - mean[:, None], 0.0)
            xhat = tl.where(mask, xc - (tl.sum(xc, 1) / D)[:, None], 0.0) * rstd[:, None]
            if NEED_DX:
                wg = g * w
                c1 = tl.sum(wg * xhat, 1) / D
                c2 = tl.sum(wg, 1) / D
                dx = (wg - c2[:, None] - xhat * c1[:, None]) * rstd[:, None]
                tl.store(dx_ptr + (rows[:, None] * D + cols[None, :]), dx.to(dx_ptr.dtype.element_ty),
                         mask=mask)
            if NEED_WB:
                acc_dw += g * xhat
                acc_db += g
        if NEED_WB:
            tl.store(part_dw + cols, tl.sum(acc_dw, 0), mask=col_mask)
            tl.store(part_db + cols, tl.sum(acc_db, 0), mask=col_mask)
    else:
        for r0 in range(first, last, BLOCK_R):
            rows = r0 + tl.arange(0, BLOCK_R)
            row_mask = rows < last
            mean = tl.load(mean_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
            rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
            c1 = tl.zeros([BLOCK_R], COMPUTE)
            c2 = tl.zeros([BLOCK_R], COMPUTE)
            # the row sums first (every chunk of dx needs them), and the centred row's own mean
            acc1 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
            acc2 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
            acc3 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
            for start in range(0, D, BLOCK_C):
                cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
                col_mask = cols < D
                mask = row_mask[:, None] & col_mask[None, :]
                xc = tl.where(mask, _tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE) - mean[:, None], 0.0)
                acc3 += xc
                if NEED_DX:
                    g = _tile(g_ptr, rows, g_rs, cols, g_cs, mask, COMPUTE)
                    if HAS_W:
                        g = g * _vec(w_ptr, cols, w_s, col_mask, COMPUTE)[None, :]
                    acc1 += g * xc
                    acc2 += g
            shift = tl.sum(acc3, 1) / D
            if NEED_DX:
                c2 = tl.sum(acc2, 1) / D
                c1 = (tl.sum(acc1, 1) / D - shift * c2) * rstd
            for start in range(0, D, BLOCK_C):
                cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
                col_mask = cols < D
                mask = row_mask[:, None] & col_mask[None, :]
                g = _tile(g_ptr, rows, g_rs, cols, g_cs, mask, COMPUTE)
                xhat = tl.where(mask, (_tile(x_ptr, rows, x_rs, cols, x_cs, mask, COMPUTE)
                                       - mean[:, None] - shift[:, None]) * rstd[:, None], 0.0)
                if NEED_DX:
                    wg = g
                    if HAS_W:
                        wg = g * _vec(w_ptr, cols, w_s, col_mask, COMPUTE)[None, :]
                    dx = (wg - c2[:, None] - xhat * c1[:, None]) * rstd[:, None]
                    tl.store(dx_ptr + (rows[:, None] * D + cols[None, :]),
                             dx.to(dx_ptr.dtype.element_ty), mask=mask)
                if NEED_WB:  # the partial row is this program's alone: load, add, store is race-free
                    tl.store(part_dw + cols, tl.load(part_dw + cols, mask=col_mask, other=0)
                             + tl.sum(g * xhat, 0), mask=col_mask)
                    tl.store(part_db + cols, tl.load(part_db + cols, mask=col_mask, other=0)
                             + tl.sum(g, 0), mask=col_mask)


def layer_norm_forward(x: torch.Tensor, weight, bias, eps: float):
    """``x`` (M, D), any strides; ``weight``/``bias`` (D,) or None. Returns ``(y, mean, rstd)``:
    y contiguous (M, D) of x's dtype, mean and rstd (M,) in fp32 (fp64 for fp64 x)."""
    M, D = x.shape
    acc = accumulate_dtype(x.dtype)
    y = torch.empty((M, D), dtype=x.dtype, device=x.device)
    mean = torch.empty((M,), dtype=acc, device=x.device)
    rstd = torch.empty((M,), dtype=acc, device=x.device)
    if M == 0 or D == 0:
        return y, mean.fill_(float("nan")), rstd.fill_(float("nan"))
    w, b = x if weight is None else weight, x if bias is None else bias

    def arguments():
        block_r, block_c, warps = _row_blocks(M, D, x.device)
        return ((cdiv(M, block_r),), (x, w, b, y, mean, rstd, M, D, x.stride(0), x.stride(1),
                                      0 if weight is None else weight.stride(0), 0 if bias is None else bias.stride(0),
                                      f64_bits(eps)),
                dict(HAS_W=weight is not None, HAS_B=bias is not None, COMPUTE=compute_dtype(acc),
                     ONE_CHUNK=D <= block_c, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps))
    # the site: what the arguments derive from (y, mean and rstd are contiguous, of x's dtype and acc);
    # eps by its bits, so -0.0 and 0.0 are two sites
    site = ("layer_norm_fwd", M, D, x.stride(), x.dtype, _vector_key(weight), _vector_key(bias), f64_bits(eps))
    launch_site(layer_norm_fwd_kernel, site, (x, w, b, y, mean, rstd), arguments)
    return y, mean, rstd


def _vector_key(v):
    """What a launch reads of a weight or bias vector besides its address: None when absent."""
    return None if v is None else (v.dtype, v.stride(0))


def _row_blocks(M: int, D: int, device: torch.device):
    """(BLOCK_R, BLOCK_C, num_warps). Rows of 2049..4096 on a GPU: one whole row a program over 16
    warps. Measured on an H200 at (8192, 4096) against the generic (2, 2048, 8): forward 2.0x
    (fp32) and 1.4x (bf16) faster, forward + backward 1.4x and 1.6x (docs/gpu.md)."""
    if target(device) == "cuda" and 2048 < D <= 4096:
        return 1, 4096, 16
    return block_shape_2d(M, D, device)


def _programs(M, block_r, device) -> int:
    if target(device) == "cpu":
        return 1
    sms = sm_count(device)
    return max(1, min(cdiv(M, block_r), 4 * sms))


def layer_norm_backward(x, g, weight, mean, rstd, need_dx=True, need_wb=True, wb_dtype=None):
    """Gradients of ``layer_norm_forward``: ``(dx, dw, db)`` for ``x``/``g`` (M, D) of any strides.
    dx is contiguous of g's dtype (None unless ``need_dx``); dw and db are (D,) of ``wb_dtype``
    (default g's dtype), both None unless ``need_wb``. Without ``weight``, w = 1."""
    M, D = x.shape
    acc = accumulate_dtype(g.dtype)
    wb_dtype = wb_dtype or g.dtype
    dx = torch.empty((M, D), dtype=g.dtype, device=g.device) if need_dx else None
    if M == 0 or D == 0:
        zero = torch.zeros((D,), dtype=wb_dtype, device=g.device)
        return dx, (zero if need_wb else None), (zero.clone() if need_wb else None)
    block_r, block_c, warps = _row_blocks(M, D, x.device)
    programs = _programs(M, block_r, x.device)
    rows_per_prog = cdiv(cdiv(M, block_r), programs) * block_r
    programs = cdiv(M, rows_per_prog)
    # zeros: the chunked path adds into its partial rows
    part = torch.zeros((programs, 2, D) if need_wb else (1,), dtype=acc, device=g.device)
    w, out = x if weight is None else weight, g if dx is None else dx

    def arguments():
        return ((programs,), (x, g, w, mean, rstd, out, part, M, D, x.stride(0), x.stride(1), g.stride(0),
                              g.stride(1), 0 if weight is None else weight.stride(0), rows_per_prog),
                dict(HAS_W=weight is not None, NEED_DX=need_dx, NEED_WB=need_wb, COMPUTE=compute_dtype(acc),
                     ONE_CHUNK=D <= block_c, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps))
    # the site: what the arguments derive from (dx and part are contiguous, of g's dtype and acc)
    site = ("layer_norm_bwd", M, D, x.stride(), g.stride(), x.dtype, g.dtype, mean.dtype, _vector_key(weight),
            need_dx, need_wb)
    launch_site(layer_norm_bwd_kernel, site, (x, g, w, mean, rstd, out, part), arguments)
    if not need_wb:
        return dx, None, None
    if programs == 1 and wb_dtype == acc:
        dwb = part[0]
    else:  # the fixed-order sum of the per-program partials (and the cast to the weights' dtype)
        dwb = reduce(part, (0,), "sum", out_dtype=wb_dtype)
    return dx, dwb[0], dwb[1]
