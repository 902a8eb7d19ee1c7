"""Gradient clipping over many separately allocated tensors, each step one launch for all of them
(per dtype), through a pointer table (``tables.py``):

    row = [ptr, n, partial_index]

``grad_norm_partials``: each row reduces its chunk of ``n`` elements to one partial, written at
``partial_index`` of an fp32 (fp64 when any tensor is fp64) buffer:

    p = 2: sum g^2    p = 1: sum |g|    p = inf: max |g|    p = -inf: min |g|
    p = 0: count of g != 0    other p: sum |g|^p (as exp(p log |g|))

``clip_by_total_norm``: every program first reduces the partials to the total norm (sqrt, the sum,
max, min, the number of tensors with a nonzero count for p = 0, sum^(1/p)), the way PyTorch's
norm of per-tensor norms comes out; program 0 stores it; then each row scales its gradients by
``min(max_norm / (total + 1e-6), 1)``, computed in the total's dtype as PyTorch computes it with
0-d tensors. With ``SKIP_NONFINITE`` (``error_if_nonfinite``) a non-finite total leaves the
gradients untouched, so the host can raise PyTorch's error with nothing modified.

``clamp_rows``: each row's elements clamped to [-v, v] in place (NaN stays NaN).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tgrad.kernels.runtime.launch import launch
from tgrad.kernels.helpers.layout import next_pow2
from tgrad.kernels.helpers.scalars import as_f64, f64_bits
from tgrad.kernels.runtime.target import target

__all__ = ["NORM_KINDS", "grad_norm_partials", "clip_by_total_norm", "clamp_rows", "ROW"]

ROW = tl.constexpr(3)
NORM_KINDS = {"p": 0, "1": 1, "2": 2, "inf": 3, "-inf": 4, "0": 5}


@triton.jit
def _row_ptr(table, row, like):
    return tl.load(table + row * ROW).to(tl.pointer_type(like.dtype.element_ty))


@triton.jit
def _lanes_total(acc, nans, KIND: tl.constexpr):
    """The block's lanes folded: max / min (NaN if any lane saw one) for KIND 3 / 4, else the sum."""
    if KIND == 3:
        return tl.where(tl.sum(nans, axis=0) > 0, float("nan"), tl.max(acc, axis=0))
    elif KIND == 4:
        return tl.where(tl.sum(nans, axis=0) > 0, float("nan"), tl.min(acc, axis=0))
    return tl.sum(acc, axis=0)


@triton.jit
def _norm_partials_kernel(table, like, partials, rows_per_program, p_bits, KIND: tl.constexpr,
                          ACC: tl.constexpr, BLOCK: tl.constexpr):
    p = as_f64(p_bits).to(ACC)
    first_row = tl.program_id(0).to(tl.int64) * rows_per_program
    for row in range(first_row, first_row + rows_per_program):
        ptr = _row_ptr(table, row, like)
        n = tl.load(table + row * ROW + 1)
        out = tl.load(table + row * ROW + 2)
        if KIND == 4:
            acc = tl.full([BLOCK], float("inf"), ACC)
        else:
            acc = tl.zeros([BLOCK], ACC)
        nans = tl.zeros([BLOCK], ACC)  # max/min would drop a NaN that PyTorch's norms propagate
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            a = tl.abs(tl.load(ptr + offs, mask=mask, other=0.0).to(ACC))
            if KIND == 1:
                acc += a
            elif KIND == 2:
                acc += a * a
            elif KIND == 3:
                acc = tl.maximum(acc, a)
                nans += tl.where(a != a, 1.0, 0.0).to(ACC)
            elif KIND == 4:
                acc = tl.minimum(acc, tl.where(mask, a, float("inf")))
                nans += tl.where(a != a, 1.0, 0.0).to(ACC)
            elif KIND == 5:
                acc += tl.where(a != 0.0, 1.0, 0.0).to(ACC)
            else:
                acc += tl.where(mask, tl.exp(p * tl.log(a)), 0.0)
        tl.store(partials + out, _lanes_total(acc, nans, KIND).to(ACC))


@triton.jit
def _total(partials, n_partials, p, KIND: tl.constexpr, ACC: tl.constexpr, P_BLOCK: tl.constexpr):
    """The total norm from the partials (module docstring)."""
    if KIND == 4:
        acc = tl.full([P_BLOCK], float("inf"), ACC)
    else:
        acc = tl.zeros([P_BLOCK], ACC)
    nans = tl.zeros([P_BLOCK], ACC)
    for start in range(0, n_partials, P_BLOCK):
        offs = start + tl.arange(0, P_BLOCK)
        mask = offs < n_partials
        if KIND == 4:
            v = tl.load(partials + offs, mask=mask, other=float("inf"))
            acc = tl.minimum(acc, v)
            nans += tl.where(v != v, 1.0, 0.0).to(ACC)
        else:
            v = tl.load(partials + offs, mask=mask, other=0.0)
            if KIND == 3:
                acc = tl.maximum(acc, v)
                nans += tl.where(v != v, 1.0, 0.0).to(ACC)
            elif KIND == 5:
                acc += tl.where(v != 0.0, 1.0, 0.0).to(ACC)
            else:
                acc += v
    total = _lanes_total(acc, nans, KIND)
    if KIND == 2:
        total = tl.sqrt(total)
    elif KIND == 0:
        total = tl.exp(tl.log(total) / p)
    return total


@triton.jit
def _clip_scale_kernel(table, like, partials, n_partials, total_out, rows_per_program, p_bits, max_norm_bits,
                       eps_bits, KIND: tl.constexpr, SKIP_NONFINITE: tl.constexpr, ACC: tl.constexpr,
                       OUT: tl.constexpr, OUT_MATH: tl.constexpr, G_MATH: tl.constexpr, P_BLOCK: tl.constexpr,
                       BLOCK: tl.constexpr):
    p = as_f64(p_bits).to(ACC)
    total = _total(partials, n_partials, p, KIND, ACC, P_BLOCK).to(OUT)
    if tl.program_id(0).to(tl.int64) == 0:
        tl.store(total_out, total)
    # PyTorch: clip_coef = max_norm / (total + 1e-6), i.e. (total + 1e-6).reciprocal() * max_norm
    # (Tensor.__rtruediv__), clamped to at most 1; each op rounded to OUT, computed in OUT_MATH
    shifted = (total.to(OUT_MATH) + as_f64(eps_bits).to(OUT_MATH)).to(OUT)
    recip = (1.0 / shifted.to(OUT_MATH)).to(OUT)
    coef = (recip.to(OUT_MATH) * as_f64(max_norm_bits).to(OUT_MATH)).to(OUT)
    coef = tl.where(coef > 1.0, 1.0, coef).to(OUT)
    if SKIP_NONFINITE:  # the host raises; scaling by 1 leaves every value as it was
        finite = (total == total) & (tl.abs(total.to(OUT_MATH)) != float("inf"))
        coef = tl.where(finite, coef, 1.0).to(OUT)
    _update_rows(table, like, rows_per_program, _scaled, coef.to(G_MATH), G_MATH, BLOCK)


@triton.jit
def _scaled(g, c, MATH: tl.constexpr):
    return g.to(MATH) * c


@triton.jit
def _clamped(g, v, MATH: tl.constexpr):
    x = g.to(MATH)
    x = tl.where(x < -v, -v, x)
    return tl.where(x > v, v, x)


@triton.jit
def _update_rows(table, like, rows_per_program, OP: tl.constexpr, a, MATH: tl.constexpr, BLOCK: tl.constexpr):
    """g = OP(g, a, MATH) in place, rounded back to g's dtype, over this program's rows of the table."""
    first_row = tl.program_id(0).to(tl.int64) * rows_per_program
    for row in range(first_row, first_row + rows_per_program):
        ptr = _row_ptr(table, row, like)
        n = tl.load(table + row * ROW + 1)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            g = tl.load(ptr + offs, mask=mask, other=0.0)
            tl.store(ptr + offs, OP(g, a, MATH).to(g.dtype), mask=mask)


@triton.jit
def _clamp_kernel(table, like, rows_per_program, v_bits, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    _update_rows(table, like, rows_per_program, _clamped, as_f64(v_bits).to(COMPUTE), COMPUTE, BLOCK)


def _grid(device, n_rows):
    """One program walks every row under the interpreter (it pays per program); one per row compiled.
    With no rows (``get_total_norm`` scales nothing) one program still runs: it stores the total."""
    return ((1,), n_rows) if target(device) == "cpu" or n_rows == 0 else ((n_rows,), 1)


def grad_norm_partials(table, like, partials, n_rows, p: float, kind: int, acc, block: int):
    grid, per_program = _grid(like.device, n_rows)
    launch(_norm_partials_kernel, grid, table, like, partials, per_program, f64_bits(p), KIND=kind, ACC=acc,
           BLOCK=block, num_warps=4, keep_alive=(like,))


def clip_by_total_norm(table, like, partials, total_out, n_rows, p: float, max_norm: float, kind: int,
                       skip_nonfinite: bool, acc, out, block: int, keep=()):
    """``out``: the total's dtype (tl); ``like``: a gradient of the rows' dtype."""
    n_partials = partials.numel()
    p_block = min(next_pow2(max(n_partials, 16)), 1024)
    grid, per_program = _grid(like.device, n_rows)
    g_math = tl.float64 if like.dtype == torch.float64 else tl.float32
    launch(_clip_scale_kernel, grid, table, like, partials, n_partials, total_out, per_program, f64_bits(p),
           f64_bits(max_norm), f64_bits(1e-6), KIND=kind, SKIP_NONFINITE=bool(skip_nonfinite), ACC=acc, OUT=out,
           OUT_MATH=tl.float64 if out == tl.float64 else tl.float32, G_MATH=g_math, P_BLOCK=p_block, BLOCK=block,
           num_warps=4, keep_alive=keep)


def clamp_rows(table, like, n_rows, value: float, compute, block: int, keep=()):
    grid, per_program = _grid(like.device, n_rows)
    launch(_clamp_kernel, grid, table, like, per_program, f64_bits(value), COMPUTE=compute, BLOCK=block,
           num_warps=4, keep_alive=keep)
