"""Row normalisations with a per-channel affine: RMSNorm, GroupNorm and InstanceNorm.

x is viewed as M rows of length D, contiguous. Row r's element at column j belongs to channel
ch = (r mod G) * CPG + j // SP (GroupNorm of (N, C, *): rows (n, group), G groups of CPG = C/G
channels of SP spatial elements; InstanceNorm is G = C; RMSNorm is G = 1, CPG = D, SP = 1). Per row:

    centred (GroupNorm):  mu = mean(x),  rstd = 1/sqrt(mean((x - mu)^2) + eps)     (two passes)
    RMS (RMSNorm):        mu = 0,        rstd = 1/sqrt(mean(x^2) + eps)
    xhat = (x - mu) rstd,   y = xhat w[ch] + b[ch]

Backward, with gw = g w[ch]:
    dx = rstd (gw - mean(gw) - xhat mean(gw xhat))      (mean(gw) only when centred)
    dw[ch] = sum of g xhat over the channel's elements, db[ch] = sum of g
where, centred, the backward's xhat is x - mu less its own row mean: mu is stored rounded, and that
rounding (an ulp of x) times rstd is large beside the gradient of a row whose values nearly cancel.
The backward launch writes dx and (for dw) the products g xhat; ``kernels.reduce`` sums those per
channel (a fixed order, deterministic). mu and rstd are kept (M floats each), fp32 or fp64.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_shape_2d, cdiv
from ..reductions.reduce import reduce
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["norm_forward", "norm_backward"]


@triton.jit
def _channel_vec(ptr, rows, cols, G, CPG, SP, mask, COMPUTE: tl.constexpr):
    ch = (rows % G)[:, None] * CPG + (cols // SP)[None, :]
    return tl.load(ptr + ch, mask=mask, other=0).to(COMPUTE)


@triton.jit
def row_norm_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, M, D, G, CPG, SP, eps_bits,
                        CENTER: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, COMPUTE: tl.constexpr,
                        BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < M
    eps = as_f64(eps_bits).to(COMPUTE)
    mean = tl.zeros([BLOCK_R], COMPUTE)
    if CENTER:
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, D, BLOCK_C):
            cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
            mask = row_mask[:, None] & (cols < D)[None, :]
            acc += tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0).to(COMPUTE)
        mean = tl.sum(acc, 1) / D
    acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
    for start in range(0, D, BLOCK_C):
        cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
        mask = row_mask[:, None] & (cols < D)[None, :]
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0).to(COMPUTE)
        xc = tl.where(mask, x - mean[:, None], 0.0)
        acc += xc * xc
    rstd = 1.0 / tl.sqrt(tl.sum(acc, 1) / D + eps)
    for start in range(0, D, BLOCK_C):
        cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
        mask = row_mask[:, None] & (cols < D)[None, :]
        x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=mask, other=0).to(COMPUTE)
        y = (x - mean[:, None]) * rstd[:, None]
        if HAS_W:
            y = y * _channel_vec(w_ptr, rows, cols, G, CPG, SP, mask, COMPUTE)
        if HAS_B:
            y = y + _channel_vec(b_ptr, rows, cols, G, CPG, SP, mask, COMPUTE)
        tl.store(y_ptr + rows[:, None] * D + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=row_mask)
    tl.store(rstd_ptr + rows, rstd, mask=row_mask)


@triton.jit
def row_norm_bwd_kernel(x_ptr, g_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, gx_ptr, M, D, G, CPG, SP,
                        CENTER: tl.constexpr, HAS_W: tl.constexpr, NEED_DX: tl.constexpr, NEED_GX: tl.constexpr,
                        COMPUTE: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < M
    mean = tl.load(mean_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
    rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
    c1 = tl.zeros([BLOCK_R], COMPUTE)
    c2 = tl.zeros([BLOCK_R], COMPUTE)
    shift = tl.zeros([BLOCK_R], COMPUTE)
    if NEED_DX or CENTER:  # the row sums, and the centred row's own mean
        acc1 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        acc2 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        acc3 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, D, BLOCK_C):
            cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
            mask = row_mask[:, None] & (cols < D)[None, :]
            off = rows[:, None] * D + cols[None, :]
            xc = tl.where(mask, tl.load(x_ptr + off, mask=mask, other=0).to(COMPUTE) - mean[:, None], 0.0)
            acc3 += xc
            if NEED_DX:
                gw = tl.load(g_ptr + off, mask=mask, other=0).to(COMPUTE)
                if HAS_W:
                    gw = gw * _channel_vec(w_ptr, rows, cols, G, CPG, SP, mask, COMPUTE)
                acc1 += gw * xc
                acc2 += gw
        if CENTER:
            shift = tl.sum(acc3, 1) / D
            c2 = tl.sum(acc2, 1) / D
        c1 = (tl.sum(acc1, 1) / D - shift * tl.sum(acc2, 1) / D) * rstd
    for start in range(0, D, BLOCK_C):
        cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
        mask = row_mask[:, None] & (cols < D)[None, :]
        off = rows[:, None] * D + cols[None, :]
        g = tl.load(g_ptr + off, mask=mask, other=0).to(COMPUTE)
        xhat = (tl.load(x_ptr + off, mask=mask, other=0).to(COMPUTE) - mean[:, None] - shift[:, None]) * rstd[:, None]
        if NEED_DX:
            gw = g
            if HAS_W:
                gw = g * _channel_vec(w_ptr, rows, cols, G, CPG, SP, mask, COMPUTE)
            dx = (gw - c2[:, None] - xhat * c1[:, None]) * rstd[:, None]
            tl.store(dx_ptr + off, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        if NEED_GX:
            tl.store(gx_ptr + off, (g * xhat).to(gx_ptr.dtype.element_ty), mask=mask)


def _acc(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def norm_forward(x, weight, bias, groups, cpg, sp, eps, center):
    """x contiguous (M, D); weight/bias (G*CPG,) contiguous or None. Returns (y, mean, rstd)."""
    M, D = x.shape
    y = torch.empty((M, D), dtype=x.dtype, device=x.device)
    mean = torch.empty((M,), dtype=_acc(x.dtype), device=x.device)
    rstd = torch.empty((M,), dtype=_acc(x.dtype), device=x.device)
    if M == 0 or D == 0:
        return y, mean.fill_(float("nan")), rstd.fill_(float("nan"))
    br, bc, warps = block_shape_2d(M, D, x.device)
    launch(row_norm_fwd_kernel, (cdiv(M, br),), x, x if weight is None else weight, x if bias is None else bias,
           y, mean, rstd, M, D, groups, cpg, sp, f64_bits(eps), CENTER=center, HAS_W=weight is not None,
           HAS_B=bias is not None, COMPUTE=compute_dtype(_acc(x.dtype)), BLOCK_R=br, BLOCK_C=bc, num_warps=warps)
    return y, mean, rstd


def norm_backward(x, g, weight, mean, rstd, groups, cpg, sp, center, need_dx, need_dw, need_db):
    """(dx (M, D), dw (C,), db (C,)), each None unless needed; x and g contiguous (M, D)."""
    M, D = x.shape
    C = groups * cpg
    dx = torch.empty((M, D), dtype=g.dtype, device=g.device) if need_dx else None
    gx = torch.empty((M, D), dtype=_acc(g.dtype), device=g.device) if need_dw else None
    if M and D and (need_dx or need_dw):
        br, bc, warps = block_shape_2d(M, D, x.device)
        launch(row_norm_bwd_kernel, (cdiv(M, br),), x, g, x if weight is None else weight, mean, rstd,
               g if dx is None else dx, g if gx is None else gx, M, D, groups, cpg, sp, CENTER=center,
               HAS_W=weight is not None, NEED_DX=need_dx, NEED_GX=need_dw, COMPUTE=compute_dtype(_acc(g.dtype)),
               BLOCK_R=br, BLOCK_C=bc, num_warps=warps)
    shape = (M // groups, C, sp)
    dw = reduce(gx.view(shape), (0, 2), "sum", out_dtype=g.dtype) if need_dw else None
    db = reduce(g.view(shape), (0, 2), "sum", out_dtype=g.dtype) if need_db else None
    return dx, dw, db
