"""im2col (``F.unfold``) and col2im (``F.fold``), each one launch; each is the other's adjoint.

For x (N, C, H, W), kernel (KH, KW), stride s, padding p, dilation d and the OH x OW block grid:

    im2col  cols[n, (c, kh, kw), (oh, ow)] = x[n, c, oh*s - p + kh*d, ow*s - p + kw*d]   (0 outside)
    col2im  x[n, c, ih, iw] = sum over (kh, kw) with oh = (ih + p - kh*d) / s exact and in range
                              (ow likewise) of cols[n, (c, kh, kw), (oh, ow)]

col2im is a gather over the kernel positions, so overlapping blocks need no atomics.
Sums in fp32 (fp64 for fp64).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .launch import launch
from .pointwise import block_for, cdiv, compute_dtype

__all__ = ["im2col", "col2im"]


@triton.jit
def im2col_kernel(x_ptr, y_ptr, TOTAL, C, H, W, OH, OW, KH, KW, sxn, sxc, sxh, sxw, SH, SW, PH, PW, DH, DW,
                  BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (n, c, kh, kw, oh, ow) row-major
    mask = lin < TOTAL
    ow = lin % OW
    oh = (lin // OW) % OH
    kw = (lin // (OW * OH)) % KW
    kh = (lin // (OW * OH * KW)) % KH
    c = (lin // (OW * OH * KW * KH)) % C
    n = lin // (OW * OH * KW * KH * C)
    ih = oh * SH - PH + kh * DH
    iw = ow * SW - PW + kw * DW
    ok = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    v = tl.load(x_ptr + (n * sxn + c * sxc + ih * sxh + iw * sxw), mask=ok, other=0.0)
    tl.store(y_ptr + lin, v, mask=mask)


@triton.jit
def col2im_kernel(g_ptr, x_ptr, TOTAL, C, H, W, OH, OW, KH, KW, sgn, sgk, sgl, SH, SW, PH, PW, DH, DW,
                  COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (n, c, ih, iw) row-major
    mask = lin < TOTAL
    iw = lin % W
    ih = (lin // W) % H
    c = (lin // (W * H)) % C
    n = lin // (W * H * C)
    base = n * sgn + c * (KH * KW) * sgk
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):
        th = ih + PH - kh * DH
        oh = th // SH  # negative th are masked, so how // and % round them does not matter
        row_ok = mask & (th >= 0) & (th % SH == 0) & (oh < OH)
        for kw in range(KW):
            tw = iw + PW - kw * DW
            ow = tw // SW
            ok = row_ok & (tw >= 0) & (tw % SW == 0) & (ow < OW)
            acc += tl.load(g_ptr + (base + (kh * KW + kw) * sgk + (oh * OW + ow) * sgl), mask=ok,
                           other=0.0).to(COMPUTE)
    tl.store(x_ptr + lin, acc.to(x_ptr.dtype.element_ty), mask=mask)


def im2col(x, kernel, stride, padding, dilation, blocks_hw):
    """(N, C*KH*KW, OH*OW) columns of x (N, C, H, W), any strides; contiguous."""
    N, C, H, W = x.shape
    (KH, KW), (OH, OW) = kernel, blocks_hw
    y = torch.empty((N, C * KH * KW, OH * OW), dtype=x.dtype, device=x.device)
    total = y.numel()
    if total:
        block = block_for(total, x.device)
        launch(im2col_kernel, (cdiv(total, block),), x, y, total, C, H, W, OH, OW, KH, KW, *x.stride(), *stride,
               *padding, *dilation, BLOCK=block, num_warps=4)
    return y


def col2im(cols, out_hw, kernel, stride, padding, dilation, blocks_hw):
    """(N, C, H, W) image summing the blocks of cols (N, C*KH*KW, OH*OW), any strides; contiguous."""
    N, CKK, _ = cols.shape
    (KH, KW), (OH, OW), (H, W) = kernel, blocks_hw, out_hw
    C = CKK // (KH * KW)
    x = torch.empty((N, C, H, W), dtype=cols.dtype, device=cols.device)
    total = x.numel()
    if total:
        block = block_for(total, cols.device)
        compute = compute_dtype(torch.float64 if cols.dtype == torch.float64 else torch.float32)
        launch(col2im_kernel, (cdiv(total, block),), cols, x, total, C, H, W, OH, OW, KH, KW, *cols.stride(),
               *stride, *padding, *dilation, COMPUTE=compute, BLOCK=block, num_warps=4)
    return x
