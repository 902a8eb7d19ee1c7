"""2-d adaptive average and max pooling (1-d is H = 1), forward and backward, one launch each.

Output (oh, ow) of an (H, W) -> (OH, OW) pooling covers the input rows

    [ floor(oh H / OH), ceil((oh + 1) H / OH) )      (columns likewise)

    avg:  y = mean over the window
    max:  y = max over the window, idx = ih*W + iw of the winner (the first, or the last NaN, as
          torch), the flat position within the input plane

Both backwards are gathers (no atomics): input row ih lies in the windows of the output rows

    [ floor(ih OH / H), ceil((ih + 1) OH / H) )

(the same formula with the sizes swapped), at most ceil(OH / H) + 1 of them; avg adds
g / window size over them, max adds the g whose idx names this input. Sums in fp32 (fp64 for fp64).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_for, cdiv
from ..helpers.windows import grad_planes, plane_block

__all__ = ["adaptive_pool2d_forward", "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_backward"]


@triton.jit
def _window(o, L, O):
    """[start, end) of the input range of output index o (L inputs, O outputs)."""
    return (o * L) // O, ((o + 1) * L + O - 1) // O


@triton.jit
def adaptive_pool_fwd_kernel(x_ptr, y_ptr, idx_ptr, TOTAL, C, H, W, OH, OW, sxn, sxc, sxh, sxw, KH, KW,
                             IS_MAX: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, oh, ow, nc, base = plane_block(TOTAL, C, OH, OW, sxn, sxc, BLOCK)
    h0, h1 = _window(oh, H, OH)
    w0, w1 = _window(ow, W, OW)
    if IS_MAX:
        best = tl.full([BLOCK], float("-inf"), COMPUTE)
        best_idx = h0 * W + w0
    else:
        acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):  # KH, KW: the largest window
        ih = h0 + kh
        row_ok = mask & (ih < h1)
        for kw in range(KW):
            iw = w0 + kw
            ok = row_ok & (iw < w1)
            v = tl.load(x_ptr + (base + ih * sxh + iw * sxw), mask=ok, other=0.0).to(COMPUTE)
            if IS_MAX:
                take = ok & ((v > best) | (v != v))
                best = tl.where(take, v, best)
                best_idx = tl.where(take, ih * W + iw, best_idx)
            else:
                acc += v
    if IS_MAX:
        tl.store(y_ptr + lin, best.to(y_ptr.dtype.element_ty), mask=mask)
        tl.store(idx_ptr + lin, best_idx, mask=mask)
    else:
        count = ((h1 - h0) * (w1 - w0)).to(COMPUTE)
        tl.store(y_ptr + lin, (acc / count).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def adaptive_pool_bwd_kernel(g_ptr, idx_ptr, dx_ptr, TOTAL, C, H, W, OH, OW, sgn, sgc, sgh, sgw, CH, CW,
                             IS_MAX: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, ih, iw, nc, g_base = plane_block(TOTAL, C, H, W, sgn, sgc, BLOCK)
    idx_base = nc * (OH * OW)
    oh0, oh1 = _window(ih, OH, H)
    ow0, ow1 = _window(iw, OW, W)
    me = ih * W + iw
    acc = tl.zeros([BLOCK], COMPUTE)
    for jh in range(CH):  # CH, CW: the most outputs one input feeds
        oh = oh0 + jh
        row_ok = mask & (oh < oh1)
        h0, h1 = _window(oh, H, OH)
        for jw in range(CW):
            ow = ow0 + jw
            ok = row_ok & (ow < ow1)
            if IS_MAX:
                ok = ok & (tl.load(idx_ptr + (idx_base + oh * OW + ow), mask=ok, other=-1) == me)
            g = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=ok, other=0.0).to(COMPUTE)
            if IS_MAX:
                acc += g
            else:
                w0, w1 = _window(ow, W, OW)
                acc += g / ((h1 - h0) * (w1 - w0)).to(COMPUTE)
    tl.store(dx_ptr + lin, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _compute(dtype):
    return compute_dtype(torch.float64 if dtype == torch.float64 else torch.float32)


def adaptive_pool2d_forward(x, out_hw, is_max):
    """y (and for max the int64 indices, else None), contiguous (N, C, OH, OW), of x (N, C, H, W)
    with any strides."""
    N, C, H, W = x.shape
    OH, OW = out_hw
    y = torch.empty((N, C, OH, OW), dtype=x.dtype, device=x.device)
    idx = torch.empty((N, C, OH, OW), dtype=torch.int64, device=x.device) if is_max else None
    total = y.numel()
    if total:
        block = block_for(total, x.device)
        launch(adaptive_pool_fwd_kernel, (cdiv(total, block),), x, y, y if idx is None else idx, total, C, H, W,
               OH, OW, *x.stride(), cdiv(H, OH) + 1, cdiv(W, OW) + 1, IS_MAX=is_max, COMPUTE=_compute(x.dtype),
               BLOCK=block, num_warps=4)
    return y, idx


def _backward(g, idx, x_shape):
    dx, C, H, W, OH, OW = grad_planes(g, x_shape)
    total = dx.numel()
    if total:
        block = block_for(total, g.device)
        launch(adaptive_pool_bwd_kernel, (cdiv(total, block),), g, g if idx is None else idx.contiguous(), dx,
               total, C, H, W, OH, OW, *g.stride(), cdiv(OH, H) + 1, cdiv(OW, W) + 1, IS_MAX=idx is not None,
               COMPUTE=_compute(g.dtype), BLOCK=block, num_warps=4)
    return dx


def adaptive_avg_pool2d_backward(g, x_shape):
    """dL/dx (contiguous, g's dtype) from g = dL/dy (N, C, OH, OW), any strides."""
    return _backward(g, None, x_shape)


def adaptive_max_pool2d_backward(g, idx, x_shape):
    """dL/dx from g = dL/dy and the forward's indices."""
    return _backward(g, idx, x_shape)
