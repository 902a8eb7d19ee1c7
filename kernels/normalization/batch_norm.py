"""Batch normalisation over channel dim 1 of an (N, C, *spatial) tensor: one launch forward, one
backward.

A program owns ``BLOCK_R`` channels and walks each channel's M = N * prod(spatial) values (reached
through the strides of the non-channel dims) in chunks of ``BLOCK_C``. Per channel, with fp32
accumulation (fp64 for fp64):

    training:  mean = sum(x) / M,  var = sum((x - mean)^2) / M   (two passes: no cancellation)
               running_mean <- (1 - momentum) running_mean + momentum mean
               running_var  <- (1 - momentum) running_var  + momentum var * M / (M - 1)
    eval:      mean, var = running_mean, running_var
    both:      rstd = 1 / sqrt(var + eps),  xhat = (x - mean) rstd,  y = xhat w + b

mean and rstd are stored for the backward, which with g = dL/dy computes
    dw = sum(g xhat),  db = sum(g)
    dx = w rstd (g - db / M - xhat dw / M)    (training: mean and var depend on x)
    dx = w rstd g                              (eval: they are constants)
where in training the backward's xhat is x - mean less its own mean: mean is stored rounded, and
that rounding (an ulp of x) times rstd is large beside the gradient of a channel whose values
nearly cancel.
in two passes over the channel (the sums first). The running statistics are written in place by
the forward launch itself.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch
from ..helpers.layout import block_shape_2d, cdiv, collapse, element_offset
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["batch_norm_forward", "batch_norm_backward"]


@triton.jit
def _chunk(ptr, ch_off, ch_mask, start, M, col_shape, col_strides, ND: tl.constexpr,
           COMPUTE: tl.constexpr, BLOCK_C: tl.constexpr):
    """x[channels, start : start + BLOCK_C] as COMPUTE (0 where masked), its offsets and mask."""
    cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
    mask = ch_mask[:, None] & (cols < M)[None, :]
    off = ch_off[:, None] + element_offset(cols, col_shape, col_strides, ND)[None, :]
    return tl.load(ptr + off, mask=mask, other=0).to(COMPUTE), mask


@triton.jit
def _channel_vec(ptr, ch, stride, mask, COMPUTE: tl.constexpr, fill):
    return tl.load(ptr + ch * stride, mask=mask, other=fill).to(COMPUTE)


@triton.jit
def bn_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, mean_ptr, rstd_ptr, C, M, sxc, syc,
                  sw, sb, srm, srv, col_shape, x_col_strides, y_col_strides, eps_bits, momentum_bits,
                  TRAINING: tl.constexpr, UPDATE: tl.constexpr, HAS_W: tl.constexpr,
                  HAS_B: tl.constexpr, ND: tl.constexpr, COMPUTE: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    ch = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    ch_mask = ch < C
    x_ch = ch * sxc
    eps = as_f64(eps_bits).to(COMPUTE)
    if TRAINING:
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, M, BLOCK_C):
            x, mask = _chunk(x_ptr, x_ch, ch_mask, start, M, col_shape, x_col_strides, ND, COMPUTE,
                             BLOCK_C)
            acc += x
        mean = tl.sum(acc, 1) / M
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, M, BLOCK_C):
            x, mask = _chunk(x_ptr, x_ch, ch_mask, start, M, col_shape, x_col_strides, ND, COMPUTE,
                             BLOCK_C)
            d = tl.where(mask, x - mean[:, None], 0.0)
            acc += d * d
        var = tl.sum(acc, 1) / M
        if UPDATE:
            momentum = as_f64(momentum_bits).to(COMPUTE)
            rm = _channel_vec(rm_ptr, ch, srm, ch_mask, COMPUTE, 0.0)
            rv = _channel_vec(rv_ptr, ch, srv, ch_mask, COMPUTE, 0.0)
            unbiased = var * M / (M - 1)
            tl.store(rm_ptr + ch * srm, ((1 - momentum) * rm + momentum * mean).to(rm_ptr.dtype.element_ty),
                     mask=ch_mask)
            tl.store(rv_ptr + ch * srv, ((1 - momentum) * rv + momentum * unbiased).to(rv_ptr.dtype.element_ty),
                     mask=ch_mask)
    else:
        mean = _channel_vec(rm_ptr, ch, srm, ch_mask, COMPUTE, 0.0)
        var = _channel_vec(rv_ptr, ch, srv, ch_mask, COMPUTE, 1.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    tl.store(mean_ptr + ch, mean, mask=ch_mask)
    tl.store(rstd_ptr + ch, rstd, mask=ch_mask)
    scale = rstd
    shift = -mean * rstd
    if HAS_W:
        w = _channel_vec(w_ptr, ch, sw, ch_mask, COMPUTE, 0.0)
        scale = scale * w
        shift = shift * w
    if HAS_B:
        shift = shift + _channel_vec(b_ptr, ch, sb, ch_mask, COMPUTE, 0.0)
    y_ch = ch * syc
    for start in range(0, M, BLOCK_C):
        x, mask = _chunk(x_ptr, x_ch, ch_mask, start, M, col_shape, x_col_strides, ND, COMPUTE, BLOCK_C)
        cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
        y_off = y_ch[:, None] + element_offset(cols, col_shape, y_col_strides, ND)[None, :]
        y = x * scale[:, None] + shift[:, None]
        tl.store(y_ptr + y_off, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def bn_bwd_kernel(x_ptr, g_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, C, M,
                  sxc, sgc, sdc, sw, col_shape, x_col_strides, g_col_strides, dx_col_strides,
                  TRAINING: tl.constexpr, HAS_W: tl.constexpr, NEED_DX: tl.constexpr,
                  NEED_DWB: tl.constexpr, ND: tl.constexpr, COMPUTE: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    ch = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    ch_mask = ch < C
    mean = _channel_vec(mean_ptr, ch, 1, ch_mask, COMPUTE, 0.0)
    rstd = _channel_vec(rstd_ptr, ch, 1, ch_mask, COMPUTE, 0.0)
    x_ch = ch * sxc
    g_ch = ch * sgc
    sum_g = tl.zeros([BLOCK_R], COMPUTE)
    sum_gx = tl.zeros([BLOCK_R], COMPUTE)
    shift = tl.zeros([BLOCK_R], COMPUTE)
    if TRAINING or NEED_DWB:
        acc_g = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        acc_gx = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        acc_x = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(0, M, BLOCK_C):
            x, mask = _chunk(x_ptr, x_ch, ch_mask, start, M, col_shape, x_col_strides, ND, COMPUTE,
                             BLOCK_C)
            g, mask = _chunk(g_ptr, g_ch, ch_mask, start, M, col_shape, g_col_strides, ND, COMPUTE,
                             BLOCK_C)
            xc = tl.where(mask, x - mean[:, None], 0.0)
            acc_g += g
            acc_gx += g * xc
            acc_x += xc
        sum_g = tl.sum(acc_g, 1)
        if TRAINING:  # mean is this batch's: the centred values' own mean is its rounding error
            shift = tl.sum(acc_x, 1) / M
        sum_gx = (tl.sum(acc_gx, 1) - shift * sum_g) * rstd
    if NEED_DWB:
        tl.store(dw_ptr + ch, sum_gx.to(dw_ptr.dtype.element_ty), mask=ch_mask)
        tl.store(db_ptr + ch, sum_g.to(db_ptr.dtype.element_ty), mask=ch_mask)
    if NEED_DX:
        scale = rstd
        if HAS_W:
            scale = scale * _channel_vec(w_ptr, ch, sw, ch_mask, COMPUTE, 0.0)
        mean_g = sum_g / M
        mean_gx = sum_gx / M
        dx_ch = ch * sdc
        for start in range(0, M, BLOCK_C):
            g, mask = _chunk(g_ptr, g_ch, ch_mask, start, M, col_shape, g_col_strides, ND, COMPUTE,
                             BLOCK_C)
            if TRAINING:
                x, mask = _chunk(x_ptr, x_ch, ch_mask, start, M, col_shape, x_col_strides, ND,
                                 COMPUTE, BLOCK_C)
                xhat = (x - mean[:, None] - shift[:, None]) * rstd[:, None]
                dx = (g - mean_g[:, None] - xhat * mean_gx[:, None]) * scale[:, None]
            else:
                dx = g * scale[:, None]
            cols = start + tl.arange(0, BLOCK_C).to(tl.int64)
            off = dx_ch[:, None] + element_offset(cols, col_shape, dx_col_strides, ND)[None, :]
            tl.store(dx_ptr + off, dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _columns(shape, *tensors):
    """(M, collapsed non-channel shape, its strides in each tensor): the channel's M values."""
    col_dims = [0] + list(range(2, len(shape)))
    col_shape = tuple(shape[d] for d in col_dims)
    cshape, cstrides = collapse(col_shape, [[t.stride(d) for d in col_dims] for t in tensors])
    return math.prod(col_shape), cshape, cstrides


def batch_norm_forward(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """(y, mean, rstd) for x (N, C, *spatial), any strides; y contiguous of x's dtype, mean and
    rstd (C,) in the accumulation dtype. Training with running stats given updates them in place."""
    C = x.shape[1]
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    acc = accumulate_dtype(x.dtype)
    mean = torch.empty((C,), dtype=acc, device=x.device)
    rstd = torch.empty((C,), dtype=acc, device=x.device)
    M, cshape, (x_cs, y_cs) = _columns(x.shape, x, y)
    if C == 0 or (M == 0 and training):
        return y, mean, rstd
    update = training and running_mean is not None
    block_r, block_c, warps = block_shape_2d(C, M, x.device)
    vec_strides = [t.stride(0) if t is not None else 0 for t in (weight, bias, running_mean, running_var)]
    launch(bn_fwd_kernel, (cdiv(C, block_r),), x, y, weight if weight is not None else x,
           bias if bias is not None else x, running_mean if running_mean is not None else mean,
           running_var if running_var is not None else rstd, mean, rstd, C, M, x.stride(1),
           y.stride(1), *vec_strides, cshape, x_cs, y_cs, f64_bits(eps), f64_bits(momentum),
           TRAINING=training, UPDATE=update, HAS_W=weight is not None, HAS_B=bias is not None, ND=len(cshape),
           COMPUTE=compute_dtype(acc), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    return y, mean, rstd


def batch_norm_backward(x, g, weight, mean, rstd, training, need_dx, need_dwb, dw_dtype=None,
                        db_dtype=None):
    """(dx, dw, db) from the forward's x, mean, rstd and g = dL/dy (any strides); dx contiguous of
    g's dtype (None unless need_dx), dw and db (C,) of the given dtypes, default x's (None unless
    need_dwb)."""
    C = x.shape[1]
    dx = torch.empty(x.shape, dtype=g.dtype, device=g.device) if need_dx else None
    dw = torch.empty((C,), dtype=dw_dtype or x.dtype, device=x.device) if need_dwb else None
    db = torch.empty((C,), dtype=db_dtype or x.dtype, device=x.device) if need_dwb else None
    M, cshape, (x_cs, g_cs, dx_cs) = _columns(x.shape, x, g, dx if dx is not None else x)
    if C == 0 or not (need_dx or need_dwb):
        return dx, dw, db
    block_r, block_c, warps = block_shape_2d(C, M, x.device)
    launch(bn_bwd_kernel, (cdiv(C, block_r),), x, g, dx if need_dx else x,
           weight if weight is not None else x, mean, rstd, dw if need_dwb else mean,
           db if need_dwb else mean, C, M, x.stride(1), g.stride(1),
           dx.stride(1) if need_dx else 0, weight.stride(0) if weight is not None else 0, cshape, x_cs,
           g_cs, dx_cs, TRAINING=training, HAS_W=weight is not None, NEED_DX=need_dx, NEED_DWB=need_dwb,
           ND=len(cshape),
           COMPUTE=compute_dtype(accumulate_dtype(x.dtype)), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    return dx, dw, db
