"""Lower/upper triangles of the last two dims (``tril``/``triu``), the masks of causal attention.

    tril:  y[..., i, j] = x[..., i, j] if j - i <= k else 0
    triu:  y[..., i, j] = x[..., i, j] if j - i >= k else 0

for diagonal offset k. Both are linear and self-adjoint (a 0/1 mask times x), so the backward is
the same launch on the upstream gradient. x is read through its strides; y is contiguous (or
``out``, e.g. x itself for the in-place forms: each lane reads its own element before writing it).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, element_offset

__all__ = ["triangle"]


@triton.jit
def triangle_kernel(x_ptr, y_ptr, numel, R, C, k, shape, strides, NDIM: tl.constexpr, UPPER: tl.constexpr,
                    BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    j = lin % C
    i = (lin // C) % R
    if UPPER:
        keep = j - i >= k
    else:
        keep = j - i <= k
    x = tl.load(x_ptr + element_offset(lin, shape, strides, NDIM), mask=mask & keep, other=0)
    tl.store(y_ptr + lin, x, mask=mask)


def triangle(x: torch.Tensor, k: int, upper: bool, out=None) -> torch.Tensor:
    """tril (``upper=False``) or triu of ``x`` (..., R, C), any dtype and strides; ``out``
    contiguous of x's shape and dtype (default: a new tensor)."""
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device) if out is None else out
    numel = x.numel()
    if numel == 0:
        return y
    xs, ys = (x.view(torch.uint8), y.view(torch.uint8)) if x.dtype == torch.bool else (x, y)
    R, C = x.shape[-2], x.shape[-1]
    block = block_for(numel, x.device)
    launch(triangle_kernel, (cdiv(numel, block),), xs, ys, numel, R, C, int(k), tuple(x.shape), x.stride(),
           NDIM=x.dim(), UPPER=upper, BLOCK=block)
    return y
