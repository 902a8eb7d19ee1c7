"""2-d max and average pooling, forward and backward, one launch each.

For x (N, C, H, W) and an output pixel (oh, ow), the window is the input rows
ih = oh*s - p + kh*d (kh < KH) and columns likewise, clipped to the image.

    max:  y = max over the window, idx = ih*W + iw of the winner (the first one, or the last NaN:
          ``v > best or v is NaN`` as torch), the flat position within the input plane
    avg:  y = sum over the window / divisor, divisor = divisor_override, or with count_include_pad
          the window's size clipped to the padded image [-p, H + p), else to the image itself

Both backwards are gathers, not scatters: each input element visits the output pixels whose
window holds it (oh = (ih + p - kh*d) / s where that division is exact and in range) and sums
their contributions, so overlapping windows (stride < kernel) need no atomics and the result is
deterministic. Sums run in fp32 (fp64 for fp64).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv
from ..helpers.windows import grad_planes, plane_block, window_source, window_tap
from ..runtime.target import target

__all__ = ["max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward"]


@triton.jit
def max_pool_fwd_kernel(x_ptr, y_ptr, idx_ptr, TOTAL, C, H, W, OH, OW, sxn, sxc, sxh, sxw,
                        KH, KW, SH, SW, PH, PW, DH, DW, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, oh, ow, nc, base = plane_block(TOTAL, C, OH, OW, sxn, sxc, BLOCK)
    best = tl.full([BLOCK], float("-inf"), COMPUTE)
    best_idx = tl.zeros([BLOCK], tl.int64)
    found = lin < 0
    for kh in range(KH):
        ih, row_ok = window_tap(oh, kh, SH, PH, DH, H, mask)
        for kw in range(KW):
            iw, ok = window_tap(ow, kw, SW, PW, DW, W, row_ok)
            v = tl.load(x_ptr + (base + ih * sxh + iw * sxw), mask=ok, other=float("-inf")).to(COMPUTE)
            # the first in-image position starts the search, even if it (and all after it) is -inf
            take = ok & ((v > best) | (v != v) | (found == 0))
            best = tl.where(take, v, best)
            best_idx = tl.where(take, ih * W + iw, best_idx)
            found = found | ok
    tl.store(y_ptr + lin, best.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(idx_ptr + lin, best_idx, mask=mask)


@triton.jit
def max_pool_bwd_kernel(g_ptr, idx_ptr, dx_ptr, TOTAL, C, H, W, OH, OW, sgn, sgc, sgh, sgw,
                        KH, KW, SH, SW, PH, PW, DH, DW, TILED: tl.constexpr, COMPUTE: tl.constexpr,
                        BLOCK: tl.constexpr):
    """dx[n, c, ih, iw] = sum of g over the output pixels whose argmax (idx) is ih*W + iw.
    ``TILED`` (stride = kernel, no padding, dilation 1): the windows tile the input, so an input
    element lies in at most one, (ih // SH, iw // SW): one tap instead of KH x KW."""
    lin, mask, ih, iw, nc, g_base = plane_block(TOTAL, C, H, W, sgn, sgc, BLOCK)
    idx_base = nc * (OH * OW)
    me = ih * W + iw
    if TILED:
        oh = ih // SH
        ow = iw // SW
        ok = mask & (oh < OH) & (ow < OW)
        won = tl.load(idx_ptr + (idx_base + oh * OW + ow), mask=ok, other=-1) == me
        acc = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=ok & won, other=0.0).to(COMPUTE)
    else:
        acc = tl.zeros([BLOCK], COMPUTE)
        for kh in range(KH):
            oh, row_ok = window_source(ih, kh, SH, PH, DH, OH, mask)
            for kw in range(KW):
                ow, ok = window_source(iw, kw, SW, PW, DW, OW, row_ok)
                won = tl.load(idx_ptr + (idx_base + oh * OW + ow), mask=ok, other=-1) == me
                g = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=ok & won, other=0.0)
                acc += g.to(COMPUTE)
    tl.store(dx_ptr + lin, acc.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _avg_divisor(oh, ow, H, W, KH, KW, SH, SW, PH, PW, divisor, COUNT_INCLUDE_PAD: tl.constexpr,
                 HAS_DIVISOR: tl.constexpr):
    """The divisor of output pixel (oh, ow), never 0 (an empty window sums to 0 and stays 0)."""
    h0 = oh * SH - PH
    w0 = ow * SW - PW
    h1 = tl.minimum(h0 + KH, H + PH)
    w1 = tl.minimum(w0 + KW, W + PW)
    if HAS_DIVISOR:
        d = h0 * 0 + divisor
    elif COUNT_INCLUDE_PAD:
        d = (h1 - h0) * (w1 - w0)
    else:
        d = (tl.minimum(h1, H) - tl.maximum(h0, 0)) * (tl.minimum(w1, W) - tl.maximum(w0, 0))
    return tl.where(d > 0, d, 1)


@triton.jit
def avg_pool_fwd_kernel(x_ptr, y_ptr, TOTAL, C, H, W, OH, OW, sxn, sxc, sxh, sxw,
                        KH, KW, SH, SW, PH, PW, divisor, COUNT_INCLUDE_PAD: tl.constexpr,
                        HAS_DIVISOR: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, oh, ow, nc, base = plane_block(TOTAL, C, OH, OW, sxn, sxc, BLOCK)
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):
        ih, row_ok = window_tap(oh, kh, SH, PH, 1, H, mask)
        for kw in range(KW):
            iw, ok = window_tap(ow, kw, SW, PW, 1, W, row_ok)
            acc += tl.load(x_ptr + (base + ih * sxh + iw * sxw), mask=ok, other=0.0).to(COMPUTE)
    d = _avg_divisor(oh, ow, H, W, KH, KW, SH, SW, PH, PW, divisor, COUNT_INCLUDE_PAD, HAS_DIVISOR)
    tl.store(y_ptr + lin, (acc / d.to(COMPUTE)).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def avg_pool_bwd_kernel(g_ptr, dx_ptr, TOTAL, C, H, W, OH, OW, sgn, sgc, sgh, sgw,
                        KH, KW, SH, SW, PH, PW, divisor, COUNT_INCLUDE_PAD: tl.constexpr,
                        HAS_DIVISOR: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """dx[n, c, ih, iw] = sum of g[oh, ow] / divisor(oh, ow) over the windows holding (ih, iw)."""
    lin, mask, ih, iw, nc, g_base = plane_block(TOTAL, C, H, W, sgn, sgc, BLOCK)
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):
        oh, row_ok = window_source(ih, kh, SH, PH, 1, OH, mask)
        for kw in range(KW):
            ow, ok = window_source(iw, kw, SW, PW, 1, OW, row_ok)
            g = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=ok, other=0.0).to(COMPUTE)
            d = _avg_divisor(oh, ow, H, W, KH, KW, SH, SW, PH, PW, divisor, COUNT_INCLUDE_PAD,
                             HAS_DIVISOR)
            acc += g / d.to(COMPUTE)
    tl.store(dx_ptr + lin, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _block(total: int, device: torch.device):
    return block_for(total, device) if target(device) == "cpu" else 256


def _compute(dtype: torch.dtype):
    return compute_dtype(accumulate_dtype(dtype))


def max_pool2d_forward(x, kernel, stride, padding, dilation, out_hw):
    """(values, int64 indices), both contiguous (N, C, OH, OW), of x (N, C, H, W), any strides."""
    N, C, H, W = x.shape
    OH, OW = out_hw
    y = torch.empty((N, C, OH, OW), dtype=x.dtype, device=x.device)
    idx = torch.empty((N, C, OH, OW), dtype=torch.int64, device=x.device)
    total = y.numel()
    if total:
        block = _block(total, x.device)
        launch(max_pool_fwd_kernel, (cdiv(total, block),), x, y, idx, total, C, H, W, OH, OW,
               *x.stride(), *kernel, *stride, *padding, *dilation, COMPUTE=_compute(x.dtype),
               BLOCK=block, num_warps=4)
    return y, idx


def max_pool2d_backward(g, idx, x_shape, kernel, stride, padding, dilation):
    """dL/dx (contiguous, g's dtype) from g = dL/dy (any strides) and the forward's indices."""
    dx, C, H, W, OH, OW = grad_planes(g, x_shape)
    total = dx.numel()
    if total:
        block = _block(total, g.device)
        tiled = tuple(stride) == tuple(kernel) and tuple(padding) == (0, 0) and tuple(dilation) == (1, 1)
        launch(max_pool_bwd_kernel, (cdiv(total, block),), g, idx.contiguous(), dx, total, C, H, W,
               OH, OW, *g.stride(), *kernel, *stride, *padding, *dilation, TILED=tiled,
               COMPUTE=_compute(g.dtype), BLOCK=block, num_warps=4)
    return dx


def avg_pool2d_forward(x, kernel, stride, padding, out_hw, count_include_pad, divisor_override):
    N, C, H, W = x.shape
    OH, OW = out_hw
    y = torch.empty((N, C, OH, OW), dtype=x.dtype, device=x.device)
    total = y.numel()
    if total:
        block = _block(total, x.device)
        launch(avg_pool_fwd_kernel, (cdiv(total, block),), x, y, total, C, H, W, OH, OW,
               *x.stride(), *kernel, *stride, *padding, int(divisor_override or 0),
               COUNT_INCLUDE_PAD=bool(count_include_pad), HAS_DIVISOR=bool(divisor_override),
               COMPUTE=_compute(x.dtype), BLOCK=block, num_warps=4)
    return y


def avg_pool2d_backward(g, x_shape, kernel, stride, padding, count_include_pad, divisor_override):
    dx, C, H, W, OH, OW = grad_planes(g, x_shape)
    total = dx.numel()
    if total:
        block = _block(total, g.device)
        launch(avg_pool_bwd_kernel, (cdiv(total, block),), g, dx, total, C, H, W, OH, OW,
               *g.stride(), *kernel, *stride, *padding, int(divisor_override or 0),
               COUNT_INCLUDE_PAD=bool(count_include_pad), HAS_DIVISOR=bool(divisor_override),
               COMPUTE=_compute(g.dtype), BLOCK=block, num_warps=4)
    return dx
