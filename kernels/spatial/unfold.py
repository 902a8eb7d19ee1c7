"""im2col (``F.unfold``) and col2im (``F.fold``), each one launch; each is the other's adjoint.

For x (N, C, H, W), kernel (KH, KW), stride s, padding p, dilation d and the OH x OW block grid:

    im2col  cols[n, (c, kh, kw), (oh, ow)] = x[n, c, oh*s - p + kh*d, ow*s - p + kw*d]   (0 outside)
    col2im  x[n, c, ih, iw] = sum over (kh, kw) with oh = (ih + p - kh*d) / s exact and in range
                              (ow likewise) of cols[n, (c, kh, kw), (oh, ow)]

col2im is a gather over the kernel positions, so overlapping blocks need no atomics.
Sums in fp32 (fp64 for fp64).

``conv_transpose2d_gemm`` is the transposed convolution as col2im(x^T W): one matmul forms every
input pixel's contribution to its output window, col2im sums the windows (PyTorch's CPU algorithm
too). Interpreted, this is several times cheaper than the implicit-GEMM gather of
``conv.conv2d_grad_input``, which with stride s spends (s^2 - 1)/s^2 of its work on masked taps.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..linalg.matmul import matmul
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_for, cdiv
from ..helpers.windows import plane_block, window_source, window_tap

__all__ = ["im2col", "col2im", "conv_transpose2d_gemm"]


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
    ih, in_h = window_tap(oh, kh, SH, PH, DH, H, mask)
    iw, ok = window_tap(ow, kw, SW, PW, DW, W, in_h)
    v = tl.load(x_ptr + (n * sxn + c * sxc + ih * sxh + iw * sxw), mask=ok, other=0.0)
    tl.store(y_ptr + lin, v, mask=mask)


@triton.jit
def col2im_kernel(g_ptr, b_ptr, x_ptr, TOTAL, C, H, W, OH, OW, KH, KW, sgn, sgk, sgl, sb, SH, SW, PH, PW, DH,
                  DW, HAS_BIAS: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """col2im, plus b[c] when HAS_BIAS (conv_transpose's bias)."""
    lin, mask, ih, iw, nc, base = plane_block(TOTAL, C, H, W, sgn, (KH * KW) * sgk, BLOCK)
    acc = tl.zeros([BLOCK], COMPUTE)
    for kh in range(KH):
        oh, row_ok = window_source(ih, kh, SH, PH, DH, OH, mask)
        for kw in range(KW):
            ow, ok = window_source(iw, kw, SW, PW, DW, OW, row_ok)
            acc += tl.load(g_ptr + (base + (kh * KW + kw) * sgk + (oh * OW + ow) * sgl), mask=ok,
                           other=0.0).to(COMPUTE)
    if HAS_BIAS:
        acc += tl.load(b_ptr + (nc % C) * sb, mask=mask, other=0.0).to(COMPUTE)
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


def col2im(cols, out_hw, kernel, stride, padding, dilation, blocks_hw, bias=None):
    """(N, C, H, W) image summing the blocks of cols (N, C*KH*KW, OH*OW), any strides, plus
    ``bias`` (C,) per channel when given; contiguous."""
    N, CKK, _ = cols.shape
    (KH, KW), (OH, OW), (H, W) = kernel, blocks_hw, out_hw
    C = CKK // (KH * KW)
    x = torch.empty((N, C, H, W), dtype=cols.dtype, device=cols.device)
    total = x.numel()
    if total:
        block = block_for(total, cols.device)
        compute = compute_dtype(torch.float64 if cols.dtype == torch.float64 else torch.float32)
        launch(col2im_kernel, (cdiv(total, block),), cols, x if bias is None else bias, x, total, C, H, W, OH, OW,
               KH, KW, *cols.stride(), 0 if bias is None else bias.stride(0), *stride, *padding, *dilation,
               HAS_BIAS=bias is not None, COMPUTE=compute, BLOCK=block, num_warps=4)
    return x


def conv_transpose2d_gemm(x, w, bias, out_shape, stride, padding, dilation):
    """conv_transpose2d(x, w) + bias for one group: x (N, C_in, H, W), w (C_in, C_out, KH, KW), any
    strides; 3-d x, w and out_shape: the 1-d one's. Returns a contiguous tensor of ``out_shape``."""
    if x.dim() == 3:
        lifted = (out_shape[0], out_shape[1], 1, out_shape[2])
        return conv_transpose2d_gemm(x.unsqueeze(2), w.unsqueeze(2), bias, lifted, stride, padding,
                                     dilation).squeeze(2)
    N, C_in, H, W = x.shape
    _, C_out, KH, KW = w.shape
    if N * C_out * KH * KW == 0:  # nothing to compute (C_out = 0), or nothing to compute it for (N = 0)
        return torch.empty(tuple(out_shape), dtype=x.dtype, device=x.device)
    rows = x.permute(0, 2, 3, 1).reshape(N * H * W, C_in)  # a copy unless x is channels-last
    cols = matmul(rows, w.reshape(C_in, C_out * KH * KW))  # (N*H*W, C_out*KH*KW)
    cols = cols.view(N, H * W, C_out * KH * KW).permute(0, 2, 1)
    return col2im(cols, tuple(out_shape[2:]), (KH, KW), stride, padding, dilation, (H, W), bias)
