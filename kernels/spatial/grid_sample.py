"""2-d grid sampling (``F.grid_sample``): bilinear or nearest, zeros / border / reflection padding,
align_corners; forward, the gradient of the grid and the gradient of the input, one launch each.

Per grid point (x, y) in [-1, 1] and dim of size L, the source coordinate (PyTorch's
grid_sampler_compute_source_index) with its derivative d src / d coordinate:

    unnormalise   src = (c + 1) (L - 1) / 2 (align_corners), else ((c + 1) L - 1) / 2
    reflection    src reflected at -1/2 and L - 1/2 (0 and L - 1 with align_corners): the
                  derivative's sign flips with each reflection
    border / reflection  src clipped to [0, L - 1]: no derivative where clipped

    bilinear  out = sum over the 4 neighbours (x0 + i, y0 + j) of w_x w_y input (0 outside)
    nearest   out = input at (round-half-even(x), round-half-even(y))

The grid's gradient is a gather: per grid point, the sum over channels of g times the bilinear
weights' derivatives (zero for nearest). The input's gradient is a scatter-add: each (n, c, point)
adds g w to its neighbours with ``tl.atomic_add`` (on CUDA in deterministic mode the caller takes
the composed form instead). Computed in fp32 (fp64 for fp64); input and grid are read contiguous.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .. import elementwise
from ..elementwise.pointwise import pointwise
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import block_for, cdiv
from ..runtime.launch import launch

__all__ = ["PADDING", "grid_sample_forward", "grid_sample_backward"]

PADDING = {"zeros": 0, "border": 1, "reflection": 2}


@triton.jit
def _source(c, L, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """(src, d src / d c) of normalised coordinates c along a dim of size L. L goes through
    ``tl.to_tensor``: a GPU launch turns an int argument equal to 1 into a constant, which has no ``.to``."""
    Lf = tl.to_tensor(L).to(c.dtype)
    if ALIGN:
        src = (c + 1.0) * ((Lf - 1.0) * 0.5)
        d = c * 0.0 + (Lf - 1.0) * 0.5
    else:
        src = ((c + 1.0) * Lf - 1.0) * 0.5
        d = c * 0.0 + Lf * 0.5
    if PAD == 2:
        if ALIGN:
            low = 0.0
            span = Lf - 1.0
        else:
            low = -0.5
            span = Lf
        off = src - low
        d = tl.where(off < 0, -d, d)
        off = tl.abs(off)
        safe = tl.where(span > 0, span, 1.0)
        flips = tl.floor(off / safe)
        extra = off - flips * safe
        odd = (flips - 2.0 * tl.floor(flips * 0.5)) == 1.0
        src = tl.where(odd, span - extra + low, extra + low)
        d = tl.where(odd, -d, d)
        src = tl.where(span > 0, src, 0.0)
        d = tl.where(span > 0, d, 0.0)
    if PAD != 0:
        inside = (src > 0) & (src < Lf - 1.0)
        d = tl.where(inside, d, 0.0)
        src = tl.minimum(tl.maximum(src, 0.0), Lf - 1.0)
    return src, d


@triton.jit
def _round_half_even(v):
    f = tl.floor(v)
    r = v - f
    up = (r > 0.5) | ((r == 0.5) & ((f - 2.0 * tl.floor(f * 0.5)) == 1.0))
    return tl.where(up, f + 1.0, f)


@triton.jit
def _point(grid_ptr, n, p, P, H, W, mask, PAD: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr):
    at = (n * P + p) * 2
    gx = tl.load(grid_ptr + at, mask=mask, other=0.0).to(COMPUTE)
    gy = tl.load(grid_ptr + at + 1, mask=mask, other=0.0).to(COMPUTE)
    ix, dx = _source(gx, W, PAD, ALIGN)
    iy, dy = _source(gy, H, PAD, ALIGN)
    return ix, dx, iy, dy


@triton.jit
def _corner(ix, iy):
    """The top-left neighbour (x0, y0) of (ix, iy) and the weights of the next column / row."""
    fx = tl.floor(ix)
    fy = tl.floor(iy)
    return fx.to(tl.int64), fy.to(tl.int64), ix - fx, iy - fy


@triton.jit
def _read(x_ptr, plane, xi, yi, H, W, mask):
    ok = mask & (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
    return tl.load(x_ptr + plane + yi * W + xi, mask=ok, other=0.0), ok


@triton.jit
def grid_sample_fwd_kernel(x_ptr, grid_ptr, out_ptr, TOTAL, C, P, H, W, NEAREST: tl.constexpr, PAD: tl.constexpr,
                           ALIGN: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (n, c, p) row-major
    mask = lin < TOTAL
    p = lin % P
    n = lin // P // C
    plane = lin // P * H * W  # input[n, c]
    ix, dx, iy, dy = _point(grid_ptr, n, p, P, H, W, mask, PAD, ALIGN, COMPUTE)
    if NEAREST:
        v, ok = _read(x_ptr, plane, _round_half_even(ix).to(tl.int64), _round_half_even(iy).to(tl.int64), H, W, mask)
        v = v.to(COMPUTE)
    else:
        x0, y0, wx1, wy1 = _corner(ix, iy)
        v00, ok = _read(x_ptr, plane, x0, y0, H, W, mask)
        v01, ok = _read(x_ptr, plane, x0 + 1, y0, H, W, mask)
        v10, ok = _read(x_ptr, plane, x0, y0 + 1, H, W, mask)
        v11, ok = _read(x_ptr, plane, x0 + 1, y0 + 1, H, W, mask)
        v = ((1.0 - wy1) * ((1.0 - wx1) * v00.to(COMPUTE) + wx1 * v01.to(COMPUTE))
             + wy1 * ((1.0 - wx1) * v10.to(COMPUTE) + wx1 * v11.to(COMPUTE)))
    tl.store(out_ptr + lin, v.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _scatter(dx_ptr, plane, xi, yi, H, W, mask, val):
    ok = mask & (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
    tl.atomic_add(dx_ptr + plane + yi * W + xi, val.to(dx_ptr.dtype.element_ty), mask=ok)


@triton.jit
def grid_sample_dinput_kernel(g_ptr, grid_ptr, dx_ptr, TOTAL, C, P, H, W, NEAREST: tl.constexpr,
                              PAD: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (n, c, p) row-major
    mask = lin < TOTAL
    p = lin % P
    n = lin // P // C
    plane = lin // P * H * W  # input[n, c]
    g = tl.load(g_ptr + lin, mask=mask, other=0.0).to(COMPUTE)
    ix, dx, iy, dy = _point(grid_ptr, n, p, P, H, W, mask, PAD, ALIGN, COMPUTE)
    if NEAREST:
        _scatter(dx_ptr, plane, _round_half_even(ix).to(tl.int64), _round_half_even(iy).to(tl.int64), H, W, mask, g)
    else:
        x0, y0, wx1, wy1 = _corner(ix, iy)
        _scatter(dx_ptr, plane, x0, y0, H, W, mask, g * (1.0 - wx1) * (1.0 - wy1))
        _scatter(dx_ptr, plane, x0 + 1, y0, H, W, mask, g * wx1 * (1.0 - wy1))
        _scatter(dx_ptr, plane, x0, y0 + 1, H, W, mask, g * (1.0 - wx1) * wy1)
        _scatter(dx_ptr, plane, x0 + 1, y0 + 1, H, W, mask, g * wx1 * wy1)


@triton.jit
def grid_sample_dgrid_kernel(x_ptr, g_ptr, grid_ptr, dgrid_ptr, TOTAL, C, P, H, W, PAD: tl.constexpr,
                             ALIGN: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # (n, p) row-major
    mask = lin < TOTAL
    p = lin % P
    n = lin // P
    ix, dx, iy, dy = _point(grid_ptr, n, p, P, H, W, mask, PAD, ALIGN, COMPUTE)
    x0, y0, wx1, wy1 = _corner(ix, iy)
    sx = tl.zeros([BLOCK], COMPUTE)
    sy = tl.zeros([BLOCK], COMPUTE)
    for c in range(C):
        plane = (n * C + c) * H * W
        g = tl.load(g_ptr + (n * C + c) * P + p, mask=mask, other=0.0).to(COMPUTE)
        v00, ok = _read(x_ptr, plane, x0, y0, H, W, mask)
        v01, ok = _read(x_ptr, plane, x0 + 1, y0, H, W, mask)
        v10, ok = _read(x_ptr, plane, x0, y0 + 1, H, W, mask)
        v11, ok = _read(x_ptr, plane, x0 + 1, y0 + 1, H, W, mask)
        v00 = v00.to(COMPUTE)
        v01 = v01.to(COMPUTE)
        v10 = v10.to(COMPUTE)
        v11 = v11.to(COMPUTE)
        sx += g * ((1.0 - wy1) * (v01 - v00) + wy1 * (v11 - v10))
        sy += g * ((1.0 - wx1) * (v10 - v00) + wx1 * (v11 - v01))
    at = lin * 2
    tl.store(dgrid_ptr + at, (sx * dx).to(dgrid_ptr.dtype.element_ty), mask=mask)
    tl.store(dgrid_ptr + at + 1, (sy * dy).to(dgrid_ptr.dtype.element_ty), mask=mask)


def _cfg(x, mode, padding_mode, align_corners):
    return dict(PAD=PADDING[padding_mode], ALIGN=bool(align_corners), COMPUTE=compute_dtype(x.dtype),
                num_warps=8 if x.dtype == torch.float64 else 4)


def _block(total, x):
    """fp64 takes blocks of at most 512 over 8 warps (2 lanes a thread): at 1024 over 4 warps the grid
    gradient's four taps per channel spilled 128 B a thread on sm_90 and 416 B on sm_80."""
    block = block_for(total, x.device)
    return min(block, 512) if x.dtype == torch.float64 else block


def grid_sample_forward(x: torch.Tensor, grid: torch.Tensor, mode: str, padding_mode: str, align_corners: bool):
    """(N, C, Ho, Wo) samples of x (N, C, H, W) at grid (N, Ho, Wo, 2)."""
    x, grid = x.contiguous(), grid.contiguous()
    N, C, H, W = x.shape
    Ho, Wo = grid.shape[1:3]
    out = torch.empty((N, C, Ho, Wo), dtype=x.dtype, device=x.device)
    total = out.numel()
    if total:
        block = _block(total, x)
        launch(grid_sample_fwd_kernel, (cdiv(total, block),), x, grid, out, total, C, Ho * Wo, H, W,
               NEAREST=mode == "nearest", BLOCK=block, **_cfg(x, mode, padding_mode, align_corners))
    return out


def grid_sample_backward(g: torch.Tensor, x: torch.Tensor, grid: torch.Tensor, mode: str, padding_mode: str,
                         align_corners: bool, need_input: bool, need_grid: bool):
    """(d input or None, d grid or None) for the upstream gradient g (N, C, Ho, Wo)."""
    x, grid, g = x.contiguous(), grid.contiguous(), g.contiguous()
    N, C, H, W = x.shape
    Ho, Wo = grid.shape[1:3]
    cfg = _cfg(x, mode, padding_mode, align_corners)
    dx = dgrid = None
    if need_input:
        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        dx = torch.zeros((N, C, H, W), dtype=acc, device=x.device)
        total = g.numel()
        if total:
            block = _block(total, x)
            launch(grid_sample_dinput_kernel, (cdiv(total, block),), g, grid, dx, total, C, Ho * Wo, H, W,
                   NEAREST=mode == "nearest", BLOCK=block, **cfg)
        if acc != x.dtype:  # fp16 / bf16: accumulated in fp32, cast once
            dx, = pointwise(elementwise.identity, [dx], dx.shape, [x.dtype], compute=tl.float32)
    if need_grid:
        dgrid = torch.zeros((N, Ho, Wo, 2), dtype=grid.dtype, device=grid.device)
        total = N * Ho * Wo
        if total and mode != "nearest":
            block = _block(total, x)
            launch(grid_sample_dgrid_kernel, (cdiv(total, block),), x, g, grid, dgrid, total, C, Ho * Wo, H, W,
                   BLOCK=block, **cfg)
    return dx, dgrid
