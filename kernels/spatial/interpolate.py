"""2-d resampling (1-d is H = 1): nearest, nearest-exact and (bi)linear, forward and backward, one
launch each, with PyTorch's index arithmetic.

Per dim, with L inputs, O outputs and scale s = 1/scale_factor when one was given, else L/O:

    nearest        i = min(floor(o s), L-1)                       (in fp32, as torch's CPU kernel)
    nearest-exact  i = min(floor((o + 0.5) s), L-1)
    linear         src = o (L-1)/(O-1) with align_corners (0 when O = 1),
                   else max(s (o + 0.5) - 0.5, 0);  i0 = floor(src), i1 = min(i0 + 1, L-1),
                   l1 = src - i0, l0 = 1 - l1               (fp64 for fp64 inputs, else fp32)

    y[o_h, o_w] = sum over the (i_h, i_w) it reads of the product of the two dims' weights.

The backward is a gather (no atomics): input i is read only by the outputs o in a window of 1/s
(nearest) or 2/s (linear) around i / s (``_first_reader``), so each input enumerates that many
candidates per dim (plus slack for rounding), recomputes each candidate's indices and weights
exactly as the forward does, and adds g times the weight of every read that names i. Sums in fp32 (fp64 for fp64).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_for, cdiv
from ..helpers.windows import grad_planes, plane_block
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["MODES", "interpolate_forward", "interpolate_backward"]

MODES = {"nearest": 0, "nearest-exact": 1, "linear": 2}


@triton.jit
def _scale(L, O, scale_bits, HAS_SCALE, ALIGN: tl.constexpr, T: tl.constexpr):
    """torch's area_pixel_compute_scale in dtype T. The sizes go through ``tl.to_tensor``: a GPU
    launch turns an int argument equal to 1 into a constant, which has no ``.to``."""
    L, O, HAS_SCALE = tl.to_tensor(L), tl.to_tensor(O), tl.to_tensor(HAS_SCALE)
    if ALIGN:
        s = tl.where(O > 1, (L - 1).to(T) / tl.maximum(O - 1, 1).to(T), 0.0)
    else:
        s = tl.where(HAS_SCALE != 0, as_f64(scale_bits).to(T), L.to(T) / O.to(T))
    return s


@triton.jit
def _reads(o, L, O, s, MODE: tl.constexpr, ALIGN: tl.constexpr, T: tl.constexpr):
    """(i0, i1, l0, l1): the input indices output o reads and their weights (nearest: i1 = i0, l1 = 0)."""
    if MODE == 2:
        if ALIGN:
            src = o.to(T) * s
        else:
            src = tl.maximum(s * (o.to(T) + 0.5) - 0.5, 0.0)
        i0 = src.to(tl.int64)  # src >= 0: truncation is floor
        i1 = tl.where(i0 < L - 1, i0 + 1, i0)
        l1 = tl.minimum(tl.maximum(src - i0.to(T), 0.0), 1.0)
        l0 = 1.0 - l1
    else:
        if MODE == 1:
            src = tl.floor((o.to(tl.float32) + 0.5) * s)
        else:
            src = tl.floor(o.to(tl.float32) * s)
        i0 = tl.minimum(src.to(tl.int64), L - 1)
        if MODE == 0:  # torch's shortcuts for equal and doubled sizes, whatever the scale factor
            i0 = tl.where(O == L, o, tl.where(O == 2 * L, o // 2, i0))
        i1 = i0
        l0 = (o * 0 + 1).to(T)
        l1 = (o * 0).to(T)
    return i0, i1, l0, l1


@triton.jit
def interp_fwd_kernel(x_ptr, y_ptr, TOTAL, C, H, W, OH, OW, sxn, sxc, sxh, sxw, sbits_h, sbits_w, HAS_H, HAS_W,
                      MODE: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr, IDX: tl.constexpr,
                      BLOCK: tl.constexpr):
    lin, mask, oh, ow, nc, base = plane_block(TOTAL, C, OH, OW, sxn, sxc, BLOCK)
    h0, h1, a0, a1 = _reads(oh, H, OH, _scale(H, OH, sbits_h, HAS_H, ALIGN, IDX), MODE, ALIGN, IDX)
    w0, w1, b0, b1 = _reads(ow, W, OW, _scale(W, OW, sbits_w, HAS_W, ALIGN, IDX), MODE, ALIGN, IDX)
    v = tl.load(x_ptr + (base + h0 * sxh + w0 * sxw), mask=mask, other=0.0).to(COMPUTE)
    if MODE == 2:
        v01 = tl.load(x_ptr + (base + h0 * sxh + w1 * sxw), mask=mask, other=0.0).to(COMPUTE)
        v10 = tl.load(x_ptr + (base + h1 * sxh + w0 * sxw), mask=mask, other=0.0).to(COMPUTE)
        v11 = tl.load(x_ptr + (base + h1 * sxh + w1 * sxw), mask=mask, other=0.0).to(COMPUTE)
        v = (a0.to(COMPUTE) * (b0.to(COMPUTE) * v + b1.to(COMPUTE) * v01)
             + a1.to(COMPUTE) * (b0.to(COMPUTE) * v10 + b1.to(COMPUTE) * v11))
    tl.store(y_ptr + lin, v.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _weight_of(i, o, L, O, s, MODE: tl.constexpr, ALIGN: tl.constexpr, T: tl.constexpr):
    """The weight with which output o (if in range) reads input i along one dim, 0 if it does not."""
    i0, i1, l0, l1 = _reads(tl.maximum(o, 0), L, O, s, MODE, ALIGN, T)
    w = tl.where(i0 == i, l0, 0.0) + tl.where(i1 == i, l1, 0.0)
    return tl.where((o >= 0) & (o < O), w, 0.0)


@triton.jit
def _first_reader(i, inv, MODE: tl.constexpr, ALIGN: tl.constexpr, T: tl.constexpr):
    """A lower bound (one below, for rounding, and >= 0) of the outputs that read input i: they lie in
    [i/s, (i+1)/s) (nearest), [i/s - 1/2, (i+1)/s - 1/2) (nearest-exact), ((i-1/2)/s - 1/2, (i+3/2)/s - 1/2)
    (linear) or ((i-1)/s, (i+1)/s) (linear, align_corners)."""
    if MODE == 2:
        if ALIGN:
            lo = (i.to(T) - 1.0) * inv
        else:
            lo = (i.to(T) - 0.5) * inv - 0.5
    elif MODE == 1:
        lo = i.to(T) * inv - 0.5
    else:
        lo = i.to(T) * inv
    return tl.maximum(tl.floor(lo).to(tl.int64) - 1, 0)


@triton.jit
def interp_bwd_kernel(g_ptr, dx_ptr, TOTAL, C, H, W, OH, OW, sgn, sgc, sgh, sgw, sbits_h, sbits_w, HAS_H, HAS_W,
                      CH, CW, MODE: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr, IDX: tl.constexpr,
                      BLOCK: tl.constexpr):
    lin, mask, ih, iw, nc, g_base = plane_block(TOTAL, C, H, W, sgn, sgc, BLOCK)
    s_h = _scale(H, OH, sbits_h, HAS_H, ALIGN, IDX)
    s_w = _scale(W, OW, sbits_w, HAS_W, ALIGN, IDX)
    # the first candidate output of each dim (1/s: 0 when s is, which only align_corners with O = 1 gives)
    inv_h = tl.where(s_h > 0, 1.0 / tl.where(s_h > 0, s_h, 1.0), 0.0)
    inv_w = tl.where(s_w > 0, 1.0 / tl.where(s_w > 0, s_w, 1.0), 0.0)
    oh0 = _first_reader(ih, inv_h, MODE, ALIGN, IDX)
    ow0 = _first_reader(iw, inv_w, MODE, ALIGN, IDX)
    acc = tl.zeros([BLOCK], COMPUTE)
    for jh in range(CH):
        oh = oh0 + jh
        wh = _weight_of(ih, oh, H, OH, s_h, MODE, ALIGN, IDX).to(COMPUTE)
        row_ok = mask & (wh != 0.0)
        for jw in range(CW):
            ow = ow0 + jw
            ww = _weight_of(iw, ow, W, OW, s_w, MODE, ALIGN, IDX).to(COMPUTE)
            ok = row_ok & (ww != 0.0)
            g = tl.load(g_ptr + (g_base + oh * sgh + ow * sgw), mask=ok, other=0.0).to(COMPUTE)
            acc += tl.where(ok, g * (wh * ww), 0.0)
    tl.store(dx_ptr + lin, acc.to(dx_ptr.dtype.element_ty), mask=mask)


def _meta(dtype, mode, scales):
    """(COMPUTE, IDX dtypes, per-dim (scale bits, has scale)) for the launches."""
    compute = compute_dtype(torch.float64 if dtype == torch.float64 else torch.float32)
    idx = tl.float64 if (dtype == torch.float64 and mode == "linear") else tl.float32
    parts = []
    for s in scales:
        parts += [f64_bits(1.0 / s) if s else 0]
    parts += [1 if s else 0 for s in scales]
    return compute, idx, parts


def _candidates(L, O, s, mode, align):
    """Candidates per dim from ``_first_reader``'s bound: the readers span 1/s (nearest) or 2/s
    (linear) outputs; plus the one below and slack for rounding; never more than the O outputs."""
    if align:
        scale = (L - 1) / (O - 1) if O > 1 else 0.0
    else:
        scale = 1.0 / s if s else L / O
    if scale <= 0:
        return O
    span = 2.0 if mode == "linear" else 1.0
    return min(math.ceil(span / (scale * (1 - 1e-6))) + 3, O)


def interpolate_forward(x, out_hw, mode, align_corners, scales):
    """x (N, C, H, W), any strides, resampled to out_hw; ``scales`` (scale_factor per dim, or None
    to use the size ratio). Returns a contiguous (N, C, OH, OW) tensor."""
    N, C, H, W = x.shape
    OH, OW = out_hw
    y = torch.empty((N, C, OH, OW), dtype=x.dtype, device=x.device)
    total = y.numel()
    if total:
        compute, idx, parts = _meta(x.dtype, mode, scales)
        block = block_for(total, x.device)
        launch(interp_fwd_kernel, (cdiv(total, block),), x, y, total, C, H, W, OH, OW, *x.stride(), *parts,
               MODE=MODES[mode], ALIGN=bool(align_corners), COMPUTE=compute, IDX=idx, BLOCK=block, num_warps=4)
    return y


def interpolate_backward(g, x_shape, mode, align_corners, scales):
    """dL/dx (contiguous, g's dtype) from g = dL/dy (N, C, OH, OW), any strides."""
    dx, C, H, W, OH, OW = grad_planes(g, x_shape)
    total = dx.numel()
    if total:
        compute, idx, parts = _meta(g.dtype, mode, scales)
        ch = _candidates(H, OH, scales[0], mode, align_corners)
        cw = _candidates(W, OW, scales[1], mode, align_corners)
        block = block_for(total, g.device)
        launch(interp_bwd_kernel, (cdiv(total, block),), g, dx, total, C, H, W, OH, OW, *g.stride(), *parts, ch, cw,
               MODE=MODES[mode], ALIGN=bool(align_corners), COMPUTE=compute, IDX=idx, BLOCK=block, num_warps=4)
    return dx
