"""Dropout whose keep-mask is a pure function of ``(seed, offset)``: never stored, regenerated.

Element i (row-major logical index) is kept iff ``x0 < ceil((1 - p) 2^32)``, where x0 is the first
Philox-4x32-10 word of counter ``offset + i`` under key ``seed``: exactly the Bernoulli(1 - p) draw
of ``kernels.random.fill_bernoulli`` at the same ``(seed, offset)``. So

    forward:   y  = x * keep / (1 - p)
    backward:  dx = g * keep / (1 - p)     (the same launch on g, with the same seed and offset)

and the backward costs no memory for the mask. The caller takes the offset from the generator and
advances it by ``counters_for(numel)``, as any random fill does.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..factories import compile_options
from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, collapse, element_offset
from .philox import as_int64_bits, bernoulli, counters_for, philox_block
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["dropout", "counters_for"]


@triton.jit
def dropout_kernel(x_ptr, out_ptr, seed, offset, state, threshold, scale_bits, numel, shape, strides,
                   NDIM: tl.constexpr, CONTIGUOUS: tl.constexpr, COMPUTE: tl.constexpr,
                   FROM_STATE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, key, ctr = philox_block(seed, offset, state, numel, FROM_STATE, BLOCK)
    keep = bernoulli(key, ctr, threshold, 0, 0, False)
    if CONTIGUOUS:
        x = tl.load(x_ptr + lin, mask=mask, other=0)
    else:
        x = tl.load(x_ptr + element_offset(lin, shape, strides, NDIM), mask=mask, other=0)
    # x * (keep * scale), as torch multiplies by the mask: a dropped inf gives nan there too
    y = x.to(COMPUTE) * tl.where(keep, as_f64(scale_bits).to(COMPUTE), 0.0)
    tl.store(out_ptr + lin, y.to(out_ptr.dtype.element_ty), mask=mask)


def dropout(x: torch.Tensor, p: float, seed: int, offset: int, state=None) -> torch.Tensor:
    """``x * keep / (1 - p)`` for ``0 <= p < 1``, a new contiguous tensor of x's shape and dtype;
    ``keep`` is drawn from ``(seed, offset)`` as described above (in a captured graph from
    ``state``'s key and base counter plus ``offset``: ``random.philox_key_and_base``). x may have
    any strides."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    numel = x.numel()
    if numel == 0:
        return out
    shape, (strides,) = collapse(tuple(x.shape), [x.stride()])
    contiguous = x.is_contiguous()
    threshold = min(max(math.ceil((1.0 - p) * 4294967296.0), 0), 1 << 32)
    compute = accumulate_dtype(x.dtype)
    block = block_for(numel, x.device)
    launch(dropout_kernel, (cdiv(numel, block),), x, out, as_int64_bits(seed),
           as_int64_bits(offset), out if state is None else state, threshold, f64_bits(1.0 / (1.0 - p)),
           numel, shape, strides, NDIM=len(shape), CONTIGUOUS=contiguous, COMPUTE=compute_dtype(compute),
           FROM_STATE=state is not None, BLOCK=block, **compile_options(x.device))
    return out
