"""2-d convolution as implicit GEMM: forward, grad of the input, grad of the weight.

With x (N, C, H, W), w (OC, C/G, KH, KW), G groups (CG = C/G input and OCG = OC/G output channels
per group), stride s, padding p (top/left) and dilation d:

    y[n, o, oh, ow] = b[o] + sum_{c, kh, kw} x[n, g*CG + c, oh*s - p + kh*d, ow*s - p + kw*d] w[o, c, kh, kw]

with g = o // OCG and x read as 0 outside the image. Per group this is a GEMM

    forward      Y[(n,oh,ow), o]  = X[(n,oh,ow), (c,kh,kw)]   @ W[(c,kh,kw), o]        K = CG*KH*KW
    grad input  dX[(n,ih,iw), c]  = dY[(n,ih,iw), (o,kh,kw)] @ W[(o,kh,kw), c]        K = OCG*KH*KW
    grad weight dW[o, (c,kh,kw)]  = dY[o, (n,oh,ow)]          @ X[(n,oh,ow), (c,kh,kw)] K = N*OH*OW

whose left (and for dW right) operand is never materialised: each K-chunk of it is gathered from
the 4-d tensor through its strides, masked where the position falls in the padding. The grad of
the input is the transposed convolution written as a gather: dY is read at
oh = (ih + p - kh*d) / s where that division is exact and in range, so every dX element is one
program's dot product (no atomics; the result is the same bit for bit on every run). Interpreted
on the CPU with one group it is computed instead as col2im(dY^T W)
(``unfold.conv_transpose2d_gemm``), which skips the gather's masked taps. dW sums over all
N*OH*OW pixels; on a GPU that long K is split over programs that write fp32/fp64 partial
products, added in a fixed order by ``kernels.reduce`` (deterministic too).

Products accumulate through ``tl.dot`` (blocks >= 16 wide) in fp32, fp64 for fp64; fp32 inputs
multiply in full IEEE precision (no TF32). Interpreted on the CPU they accumulate in fp64 (see
``_acc``).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype
from ..runtime.launch import launch
from ..helpers.layout import cdiv
from ..reductions.reduce import reduce
from .unfold import conv_transpose2d_gemm
from ..runtime.target import target

__all__ = ["conv2d_forward", "conv2d_grad_input", "conv2d_grad_weight"]


@triton.jit
def _group_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """(group, tile row, tile column) of this program: the tiles of an M x N output per group."""
    pid = tl.program_id(0)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    tile = pid % (grid_m * grid_n)
    return pid // (grid_m * grid_n), tile // grid_n, tile % grid_n


@triton.jit
def _pixel_tile(M, N, HW, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """This program's tile of an implicit GEMM whose M rows are pixels (n, p) of planes of HW:
    (group, columns, row mask, column mask, n, p)."""
    group, tile_m, tile_n = _group_tile(M, N, BLOCK_M, BLOCK_N)
    rm = tile_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return group, rn, rm < M, rn < N, rm // HW, rm % HW


@triton.jit
def _kernel_tap(rk, K, KH, KW):
    """(channel, kh, kw, rk < K) of the reduction index rk = (channel, kh, kw) row-major."""
    kk = rk % (KH * KW)
    return rk // (KH * KW), kk // KW, kk % KW, rk < K


@triton.jit
def _dot(a, b, acc, ACC: tl.constexpr, UPCAST: tl.constexpr):
    if UPCAST:
        a = a.to(ACC)
        b = b.to(ACC)
    return tl.dot(a, b, acc, input_precision="ieee", out_dtype=ACC)


@triton.jit
def _store_channels(acc, out_ptr, b_ptr, ch, sb, n, pix, CH, HW, mask_m, mask_n, HAS_BIAS: tl.constexpr,
                    ACC: tl.constexpr):
    """out[n, ch, pix] = acc (+ b[ch] when HAS_BIAS) for a contiguous (N, CH, HW) output."""
    if HAS_BIAS:
        acc += tl.load(b_ptr + ch * sb, mask=mask_n, other=0.0).to(ACC)[None, :]
    off = (n * CH * HW + pix)[:, None] + (ch.to(tl.int64) * HW)[None, :]
    tl.store(out_ptr + off, acc.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


@triton.jit
def conv_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, H, W, OH, OW, M, K, KH, KW, CG, OCG, OC,
                    sxn, sxc, sxh, sxw, swo, swc, swh, sww, sb,
                    STRIDE_H, STRIDE_W, PAD_H, PAD_W, DIL_H, DIL_W,
                    HAS_BIAS: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # rows: output pixels (n, oh, ow); columns: output channels in the group
    group, rn, mask_m, mask_n, n, pix = _pixel_tile(M, OCG, OH * OW, BLOCK_M, BLOCK_N)
    oh = pix // OW
    ow = pix % OW
    ih0 = oh * STRIDE_H - PAD_H
    iw0 = ow * STRIDE_W - PAD_W
    x_row = n * sxn + (group * CG).to(tl.int64) * sxc
    oc = group * OCG + rn
    w_col = oc.to(tl.int64) * swo

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        c, kh, kw, mask_k = _kernel_tap(k0 + tl.arange(0, BLOCK_K), K, KH, KW)  # reduction index (c, kh, kw)
        ih = ih0[:, None] + (kh * DIL_H)[None, :]
        iw = iw0[:, None] + (kw * DIL_W)[None, :]
        a_mask = (mask_m[:, None] & mask_k[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W))
        a = tl.load(x_ptr + (x_row[:, None] + (c.to(tl.int64) * sxc)[None, :] + ih * sxh + iw * sxw),
                    mask=a_mask, other=0.0)
        w_row = c.to(tl.int64) * swc + kh * swh + kw * sww
        acc = _dot(a, tl.load(w_ptr + (w_row[:, None] + w_col[None, :]), mask=mask_k[:, None] & mask_n[None, :],
                              other=0.0), acc, ACC, UPCAST)

    _store_channels(acc, y_ptr, b_ptr, oc, sb, n, pix, OC, OH * OW, mask_m, mask_n, HAS_BIAS, ACC)


@triton.jit
def conv_dgrad_kernel(g_ptr, w_ptr, b_ptr, dx_ptr, H, W, OH, OW, M, K, KH, KW, CG, OCG, C,
                      sgn, sgc, sgh, sgw, swo, swc, swh, sww, sb,
                      STRIDE_H, STRIDE_W, PAD_H, PAD_W, DIL_H, DIL_W,
                      HAS_BIAS: tl.constexpr, ACC: tl.constexpr, UPCAST: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dx[n, c, ih, iw] = sum_{o, kh, kw} g[n, o, oh, ow] w[o, c, kh, kw] over the (oh, ow) with
    oh*s - p + kh*d = ih (and the same for w): the transposed convolution as a gather; plus b[c]
    when HAS_BIAS (conv_transpose's bias)."""
    # rows: input pixels (n, ih, iw); columns: input channels in the group
    group, rn, mask_m, mask_n, n, pix = _pixel_tile(M, CG, H * W, BLOCK_M, BLOCK_N)
    th0 = pix // W + PAD_H  # oh*s + kh*d for the (oh, kh) that reach this row
    tw0 = pix % W + PAD_W
    g_row = n * sgn + (group * OCG).to(tl.int64) * sgc
    w_col = rn.to(tl.int64) * swc

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        o, kh, kw, mask_k = _kernel_tap(k0 + tl.arange(0, BLOCK_K), K, KH, KW)  # reduction index (o, kh, kw)
        th = th0[:, None] - (kh * DIL_H)[None, :]
        tw = tw0[:, None] - (kw * DIL_W)[None, :]
        # negative th are masked, so how // and % round them does not matter
        oh = th // STRIDE_H
        ow = tw // STRIDE_W
        a_mask = (mask_m[:, None] & mask_k[None, :] & (th >= 0) & (tw >= 0) & (th % STRIDE_H == 0)
                  & (tw % STRIDE_W == 0) & (oh < OH) & (ow < OW))
        a = tl.load(g_ptr + (g_row[:, None] + (o.to(tl.int64) * sgc)[None, :] + oh * sgh + ow * sgw),
                    mask=a_mask, other=0.0)
        w_row = (group * OCG + o).to(tl.int64) * swo + kh * swh + kw * sww
        acc = _dot(a, tl.load(w_ptr + (w_row[:, None] + w_col[None, :]), mask=mask_k[:, None] & mask_n[None, :],
                              other=0.0), acc, ACC, UPCAST)

    _store_channels(acc, dx_ptr, b_ptr, group * CG + rn, sb, n, pix, C, H * W, mask_m, mask_n, HAS_BIAS, ACC)


@triton.jit
def conv_wgrad_kernel(x_ptr, g_ptr, dw_ptr, H, W, OH, OW, P, CKK, KH, KW, CG, OCG, OC, K_PER_SPLIT,
                      sxn, sxc, sxh, sxw, sgn, sgc, sgh, sgw,
                      STRIDE_H, STRIDE_W, PAD_H, PAD_W, DIL_H, DIL_W,
                      ACC: tl.constexpr, UPCAST: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dw[o, c, kh, kw] = sum_{n, oh, ow} g[n, o, oh, ow] x[n, c, oh*s - p + kh*d, ow*s - p + kw*d],
    over the pixels [split*K_PER_SPLIT, (split+1)*K_PER_SPLIT) of program axis 1, stored in slice
    ``split`` of dw (viewed as (splits, OC, CKK))."""
    split = tl.program_id(1)
    group, tile_m, tile_n = _group_tile(OCG, CKK, BLOCK_M, BLOCK_N)
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)  # output channels in group
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (c, kh, kw)
    mask_m = rm < OCG
    mask_n = rn < CKK
    oc = group * OCG + rm
    g_col = oc.to(tl.int64) * sgc
    c, kh, kw, _ = _kernel_tap(rn, CKK, KH, KW)
    kh_d = kh * DIL_H - PAD_H
    kw_d = kw * DIL_W - PAD_W
    x_col = (group * CG + c).to(tl.int64) * sxc

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    k_start = split.to(tl.int64) * K_PER_SPLIT
    k_end = tl.minimum(k_start + K_PER_SPLIT, P)
    for k0 in range(k_start, k_end, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)  # reduction index: output pixel (n, oh, ow)
        mask_k = rk < k_end
        n = rk // (OH * OW)
        pix = rk % (OH * OW)
        oh = pix // OW
        ow = pix % OW
        a = tl.load(g_ptr + (g_col[:, None] + (n * sgn + oh * sgh + ow * sgw)[None, :]),
                    mask=mask_m[:, None] & mask_k[None, :], other=0.0)
        ih = (oh * STRIDE_H)[:, None] + kh_d[None, :]
        iw = (ow * STRIDE_W)[:, None] + kw_d[None, :]
        b_mask = mask_k[:, None] & mask_n[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        b = tl.load(x_ptr + ((n * sxn)[:, None] + x_col[None, :] + ih * sxh + iw * sxw), mask=b_mask,
                    other=0.0)
        acc = _dot(a, b, acc, ACC, UPCAST)

    dw_off = split.to(tl.int64) * OC * CKK + oc.to(tl.int64)[:, None] * CKK + rn[None, :]
    tl.store(dw_ptr + dw_off, acc.to(dw_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_n[None, :])


# ----------------------------------------------------------------------------- launch helpers

def _pow2(n: int, lo: int, hi: int) -> int:
    return min(max(triton.next_power_of_2(max(n, 1)), lo), hi)


def _acc(dtype: torch.dtype, device: torch.device):
    """(accumulator dtype, UPCAST). Interpreted, tl.dot is numpy's matmul with an explicit dtype,
    which for fp32 skips BLAS and runs ~100x slower than for fp64: products of fp32/fp16 are formed
    and summed in fp64 there (exact products, and a more accurate sum than the GPU's fp32)."""
    if dtype == torch.float64 or target(device) == "cpu":
        return tl.float64, dtype != torch.float64
    return tl.float32, False


def _gemm_blocks(M: int, N: int, K: int, dtype: torch.dtype, device: torch.device):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps) of an implicit GEMM. Interpreted, every launch and tl
    op costs the same whatever the block, so tiles hold up to 2^17 elements and K is taken in as
    few chunks as fit; compiled, the usual register-sized tiles."""
    if target(device) == "cpu":
        bn, bk = _pow2(N, 16, 128), _pow2(K, 16, 512)
        bm = _pow2(M, 16, max(16, (1 << 17) // max(bk, bn)))
        return bm, bn, bk, 4
    if dtype in (torch.float16, torch.bfloat16):
        return _pow2(M, 16, 64), _pow2(N, 16, 64), _pow2(K, 16, 32), 4
    # fp32/fp64 products are FMAs on registers (no tensor cores, input_precision="ieee"): 64 x 64 x 32
    # tiles spilled (sm_90: the dgrad of a 3-channel 7x7 stride-2 stem; sm_80: every fp32 wgrad);
    # 32 x 64 x 16 do not (tests/kernels/test_gpu_shapes.py, docs/gpu.md's probe)
    return _pow2(M, 16, 32), _pow2(N, 16, 64), _pow2(K, 16, 16), 4


def _lift(*tensors):
    """3-d (N, C, L) operands of a 1-d convolution viewed as 4-d with H = 1."""
    return [t if t is None or t.dim() == 4 else t.unsqueeze(2) for t in tensors]


def _lift_shape(shape):
    return tuple(shape) if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])


def conv2d_forward(x, w, bias, stride, padding, dilation, groups, out_hw):
    """y = conv2d(x, w) + bias for x (N, C, H, W), w (OC, C/groups, KH, KW), any strides, with
    (top, left) ``padding`` and output size ``out_hw`` (the caller's, so asymmetric 'same' padding
    works). Returns a contiguous (N, OC, OH, OW) tensor of x's dtype. A 1-d convolution passes 3-d
    x (N, C, L) and w (OC, C/groups, K), (1, s) / (0, p) / (1, d) and out_hw (OL,) or (1, OL)."""
    if x.dim() == 3:
        out_hw = (1, out_hw[-1])
        return conv2d_forward(*_lift(x, w), bias, stride, padding, dilation, groups, out_hw).squeeze(2)
    N, C, H, W = x.shape
    OC, CG, KH, KW = w.shape
    OH, OW = out_hw
    OCG = OC // groups
    y = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
    M, K = N * OH * OW, CG * KH * KW
    if M == 0 or OC == 0:
        return y
    bm, bn, bk, warps = _gemm_blocks(M, OCG, K, x.dtype, x.device)
    acc, upcast = _acc(x.dtype, x.device)
    grid = (groups * cdiv(M, bm) * cdiv(OCG, bn),)
    launch(conv_fwd_kernel, grid, x, w, y if bias is None else bias, y, H, W, OH, OW, M, K, KH, KW,
           CG, OCG, OC, *x.stride(), *w.stride(), 0 if bias is None else bias.stride(0),
           *stride, *padding, *dilation, HAS_BIAS=bias is not None, ACC=acc, UPCAST=upcast,
           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
           num_warps=warps, num_stages=2)
    return y


def conv2d_grad_input(g, w, x_shape, stride, padding, dilation, groups, bias=None, gemm=None):
    """dL/dx (contiguous, of g's dtype and ``x_shape``) from g = dL/dy (N, OC, OH, OW), any strides;
    plus ``bias`` (x_shape[1],) per channel when given: conv_transpose2d(g, w) + bias. 3-d g, w and
    x_shape: the 1-d convolution's. ``gemm``: compute it as matmul + col2im instead of the gather
    kernel (default: on the CPU with one group; it needs one group)."""
    if g.dim() == 3:
        return conv2d_grad_input(*_lift(g, w), _lift_shape(x_shape), stride, padding, dilation, groups,
                                 bias, gemm).squeeze(2)
    N, C, H, W = x_shape
    OC, CG, KH, KW = w.shape
    OH, OW = g.shape[2:]
    OCG = OC // groups
    dx = torch.empty(tuple(x_shape), dtype=g.dtype, device=g.device)
    M, K = N * H * W, OCG * KH * KW
    if M == 0 or C == 0:
        return dx
    if (K == 0 or OH == 0 or OW == 0) and bias is None:
        return dx.fill_(0)
    if gemm is None:
        gemm = target(g.device) == "cpu" and groups == 1
    if gemm and groups == 1 and K > 0:
        # interpreted, the gather below pays for every (pixel, tap) pair, (s^2 - 1)/s^2 of them
        # masked off with stride s; a matmul + col2im is several times cheaper there
        return conv_transpose2d_gemm(g, w, bias, x_shape, stride, padding, dilation)
    bm, bn, bk, warps = _gemm_blocks(M, CG, K, g.dtype, g.device)
    acc, upcast = _acc(g.dtype, g.device)
    grid = (groups * cdiv(M, bm) * cdiv(CG, bn),)
    launch(conv_dgrad_kernel, grid, g, w, dx if bias is None else bias, dx, H, W, OH, OW, M, K, KH, KW,
           CG, OCG, C, *g.stride(), *w.stride(), 0 if bias is None else bias.stride(0), *stride, *padding,
           *dilation, HAS_BIAS=bias is not None, ACC=acc, UPCAST=upcast,
           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
           num_warps=warps, num_stages=2)
    return dx


def conv2d_grad_weight(x, g, w_shape, stride, padding, dilation, groups, splits=None):
    """dL/dw (contiguous, of ``w_shape`` and x's dtype) from x (N, C, H, W) and g = dL/dy.
    ``splits`` (default: 1 on the CPU, enough for ~256 programs on a GPU) is how many programs
    share each tile's pixel sum. 3-d x, g and w_shape: the 1-d convolution's."""
    if x.dim() == 3:
        return conv2d_grad_weight(*_lift(x, g), _lift_shape(w_shape), stride, padding, dilation, groups,
                                  splits).squeeze(2)
    N, C, H, W = x.shape
    OC, CG, KH, KW = w_shape
    OH, OW = g.shape[2:]
    OCG, CKK, P = OC // groups, CG * KH * KW, N * OH * OW
    dw = torch.empty(tuple(w_shape), dtype=x.dtype, device=x.device)
    if OC == 0 or CKK == 0:
        return dw
    if P == 0:
        return dw.fill_(0)
    bm, bn, bk, warps = _gemm_blocks(OCG, CKK, P, x.dtype, x.device)
    acc, upcast = _acc(x.dtype, x.device)
    tiles = groups * cdiv(OCG, bm) * cdiv(CKK, bn)
    if splits is None:
        splits = 1
        if target(x.device) != "cpu":  # a long pixel sum over few tiles: spread it over ~256 programs
            splits = max(1, min(256 // tiles, cdiv(P, 8 * bk)))
    k_per_split = cdiv(cdiv(P, splits), bk) * bk
    splits = cdiv(P, k_per_split)
    acc_dtype = accumulate_dtype(x.dtype)
    out = dw if splits == 1 else torch.empty((splits, OC, CG, KH, KW), dtype=acc_dtype, device=x.device)
    launch(conv_wgrad_kernel, (tiles, splits), x, g, out, H, W, OH, OW, P, CKK, KH, KW, CG, OCG, OC,
           k_per_split, *x.stride(), *g.stride(), *stride, *padding, *dilation, ACC=acc, UPCAST=upcast,
           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
           num_warps=warps, num_stages=2)
    if splits > 1:
        return reduce(out, (0,), "sum", out_dtype=x.dtype)
    return dw
