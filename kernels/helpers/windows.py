"""Index helpers of the kernels that walk (N, C, H, W) planes and slide windows over them
(pooling, adaptive pooling, interpolation, fold/unfold, convolution). ``@triton.jit`` but the last.

- ``plane_block(TOTAL, C, H, W, sn, sc, BLOCK)``: this program's block of the row-major
  (n, c, h, w) elements of a contiguous output: ``(lin, mask, h, w, nc, base)``, with nc = n*C + c
  and base the offset of plane (n, c) in a strided operand (strides sn, sc).
- ``window_tap(o, k, S, P, D, L, live)``: the input index i = o*S - P + k*D that tap k of output
  o's window reads, and whether the lane is ``live`` and i lies in [0, L) (outside it reads the
  padding).
- ``window_source(i, k, S, P, D, O, live)``: the adjoint, for the gathers of the backwards: the
  output o whose window's tap k reads input i, and whether the lane is ``live`` and there is one
  (the division exact, o in [0, O)).
- ``grad_planes(g, x_shape)`` (host): the contiguous input gradient a backward's launch fills, and
  the sizes it takes.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["plane_block", "window_tap", "window_source", "grad_planes"]


@triton.jit
def plane_block(TOTAL, C, H, W, sn, sc, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < TOTAL
    w = lin % W
    h = (lin // W) % H
    nc = lin // (W * H)
    base = (nc // C) * sn + (nc % C) * sc
    return lin, mask, h, w, nc, base


@triton.jit
def window_tap(o, k, S, P, D, L, live):
    i = o * S - P + k * D
    return i, live & (i >= 0) & (i < L)


@triton.jit
def window_source(i, k, S, P, D, O, live):
    t = i + P - k * D
    o = t // S  # negative t are masked, so how // and % round them does not matter
    return o, live & (t >= 0) & (t % S == 0) & (o < O)


def grad_planes(g, x_shape):
    """(dx, C, H, W, OH, OW): dx empty and contiguous, of ``x_shape`` (N, C, H, W) and g's dtype;
    (OH, OW) g's planes."""
    _, C, H, W = x_shape
    OH, OW = g.shape[2:]
    return torch.empty(tuple(x_shape), dtype=g.dtype, device=g.device), C, H, W, OH, OW
