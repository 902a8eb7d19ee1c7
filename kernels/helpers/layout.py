"""How kernels reach strided tensors and how work is cut into blocks: the helpers every kernel
family shares.

- ``collapse(shape, stride_lists)``: drop size-1 dims and merge neighbours contiguous in every
  operand, so the common layouts index with one or two dims instead of N (host side).
- ``element_offset(lin, shape, strides, NDIM)``: the memory offset of a row-major linear index
  (``@triton.jit``; one multiply when the layout collapsed to one dim).
- ``block_for(numel, device)``: the 1-d block of an elementwise walk; ``block_shape_2d(rows,
  cols, device)``: the ``(BLOCK_R, BLOCK_C, num_warps)`` of a rows x columns walk.
- ``cdiv``, ``next_pow2``: host integer helpers.

Interpreted (CPU), a launch pays per program instance and per ``tl`` op, not per element, so
blocks are as large as the interpreter's arrays allow; compiled, they are sized for registers
and for keeping every SM busy.
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from ..runtime.target import target

__all__ = ["collapse", "element_offset", "block_for", "block_shape_2d", "cdiv", "next_pow2"]


def contiguous_strides(shape) -> tuple:
    """The strides of a contiguous tensor of ``shape`` (row-major, in elements)."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides[::-1])


def collapse(shape, stride_lists):
    """``(shape, [strides per operand])`` with size-1 dims dropped and neighbours merged that are
    contiguous in every operand; at least one dim (``(1,)``, strides 0) for a one-element shape."""
    dims = [(s, [st[d] for st in stride_lists]) for d, s in enumerate(shape) if s != 1]
    merged = []
    for size, strides in dims:
        if merged:
            psize, pstrides = merged[-1]
            if all(ps == st * size for ps, st in zip(pstrides, strides)):
                merged[-1] = (psize * size, strides)
                continue
        merged.append((size, strides))
    if not merged:
        merged = [(1, [0] * len(stride_lists))]
    new_shape = tuple(s for s, _ in merged)
    return new_shape, [tuple(st[i] for _, st in merged) for i in range(len(stride_lists))]


@triton.jit
def element_offset(lin, shape, strides, NDIM: tl.constexpr):
    """Memory offset of the row-major linear index ``lin`` in a tensor of ``shape`` and ``strides``."""
    if NDIM == 1:  # the common collapsed case: one multiply, where the loop below pays three ops
        return lin * strides[0]
    rem = lin
    off = lin * 0
    # innermost dims first; the outermost needs no modulus (lin < numel on every live lane).
    # Tuples are indexed by the expression itself: a name assigned in a static_range body stops
    # being a compile-time constant when compiled, and tuples only take constant indices.
    for i in tl.static_range(NDIM - 1):
        off += (rem % shape[NDIM - 1 - i]) * strides[NDIM - 1 - i]
        rem = rem // shape[NDIM - 1 - i]
    return off + rem * strides[0]


def next_pow2(n: int) -> int:
    """``triton.next_power_of_2`` for host code: that one is a constexpr function whose call
    wrapper costs more than the arithmetic, paid several times per launch."""
    return 1 << (n - 1).bit_length() if n > 1 else 1


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_for(numel: int, device: torch.device) -> int:
    """Elements per program of a 1-d walk: one big block interpreted, 1024 compiled. Interpreted,
    a block is at least 64 elements: every size up to 64 then shares one signature (the interpreter
    and a replay pay per op, not per lane), so a recorded trace serves them all."""
    if target(device) == "cpu":
        return min(max(next_pow2(numel), 64), 1 << 16)
    return 1024


def block_shape_2d(n_rows: int, n_cols: int, device: torch.device):
    """(BLOCK_R, BLOCK_C, num_warps) for a rows x cols walk. Interpreted, a block-step costs per
    tl op whatever its size, so blocks hold 2^16 elements, shaped for the fewest steps; compiled,
    a few thousand elements per program keep registers in check and every SM busy."""
    return _block_shape_2d(n_rows, n_cols, target(device) == "cpu")


@functools.lru_cache(maxsize=4096)  # asked on every reduction's launch: the search below costs ~20 us
def _block_shape_2d(n_rows: int, n_cols: int, cpu: bool):
    budget, max_cols = (1 << 16, 1 << 16) if cpu else (4096, 2048)
    rows_p2 = next_pow2(n_rows)

    def shape_and_steps(block_c):
        # Block-steps over the padded matrix: the work, counting masked-off padding. For a row of
        # 70000, 8192-wide chunks pad 5% where one 65536 chunk plus a second pads 87%.
        block_r = min(rows_p2, max(1, budget // block_c))
        return cdiv(n_rows, block_r) * cdiv(n_cols, block_c), block_r, block_c

    widest = min(next_pow2(n_cols), max_cols)
    if not cpu:  # narrow column blocks would serialise a row on the GPU
        _, block_r, block_c = shape_and_steps(widest)
    else:
        candidates = [shape_and_steps(widest >> k) for k in range(widest.bit_length())]
        _, block_r, block_c = min(candidates, key=lambda c: (c[0], -c[2]))  # ties: wider chunks
    return block_r, block_c, 8 if block_r * block_c >= 2048 else 4
