"""Reductions over any set of dims of a strided tensor, in one launch each.

The input is viewed, without copying, as a matrix: rows are the kept dims (row-major, so row ``r``
is element ``r`` of the contiguous output) and columns the reduced dims, each side reached through
its own shape/stride tuple and ``layout.element_offset``. A program owns ``BLOCK_R`` rows and walks the
columns in chunks of ``BLOCK_C``, folding each chunk into a ``[BLOCK_R, BLOCK_C]`` accumulator
lane by lane; the lanes are reduced across once, at the end. Lane-wise accumulation keeps the
per-chunk work elementwise and sums accurate (each lane adds only ``n_cols / BLOCK_C`` terms).

Only ``tl.sum``/``tl.max``/``tl.min`` reduce across lanes: in the interpreter they are single
numpy calls, whereas ``tl.reduce`` with a custom combine runs one Python call per element. So NaN
propagation and first-index tie-breaking are built from those three (see ``_extreme_rows``), and
``prod`` folds lanes with a reshape/split tree when interpreted.

Accumulation is fp32 for fp16/bf16/fp32, fp64 when the input or output is fp64, int64 for
integer/bool inputs with an integer output.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import compute_dtype
from ..runtime.launch import launch, launch_site, site_replayer
from ..helpers.layout import block_shape_2d, cdiv, collapse, element_offset, next_pow2
from .logsumexp import online_logsumexp
from .terms import column, divide, magnitude, root, root_of_quotient, square
from ..runtime.target import target, sm_count

__all__ = ["reduce", "planned", "REDUCE_OPS", "REDUCTIONS", "Reduction"]

@triton.jit
def _load_chunk(x_ptr, row_off, row_mask, start, n_cols, red_shape, red_strides,
                NR: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_C: tl.constexpr):
    """Columns ``start .. start+BLOCK_C`` of the program's rows; masked lanes hold 0."""
    cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
    col_mask = cols < n_cols
    col_off = element_offset(cols, red_shape, red_strides, NR)
    mask = row_mask[:, None] & col_mask[None, :]
    x = tl.load(x_ptr + (row_off[:, None] + col_off[None, :]), mask=mask, other=0)
    return x.to(COMPUTE), cols, mask


@triton.jit
def _sum_chunk(x_ptr, row_off, row_mask, cols, n_cols, red_shape, red_strides, NR: tl.constexpr,
               COMPUTE: tl.constexpr, TERM: tl.constexpr, EVEN_C: tl.constexpr):
    """A chunk of what sum-like ops add: TERM(x) (x when None), with 0 in masked lanes (a mask is
    None where every lane of its side is in bounds)."""
    ptrs = x_ptr + (row_off[:, None] + element_offset(cols, red_shape, red_strides, NR)[None, :])
    if EVEN_C:
        if row_mask is None:
            x = tl.load(ptrs)
        else:
            x = tl.load(ptrs, mask=row_mask[:, None], other=0)
    else:
        if row_mask is None:
            x = tl.load(ptrs, mask=(cols < n_cols)[None, :], other=0)
        else:
            x = tl.load(ptrs, mask=row_mask[:, None] & (cols < n_cols)[None, :], other=0)
    if x.dtype != COMPUTE:
        x = x.to(COMPUTE)
    if TERM is not None:
        x = TERM(x)
    return x  # masked lanes loaded as 0, which every term keeps


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _prod_rows(acc, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, INTERPRETED: tl.constexpr):
    """prod over axis 1. Interpreted, a log2(BLOCK_C)-step pairwise tree of whole-array multiplies
    replaces ``tl.reduce``, whose custom combine would run once per element in Python."""
    if INTERPRETED:
        for _ in tl.static_range(BLOCK_C.bit_length() - 1):
            left, right = tl.split(tl.reshape(acc, [BLOCK_R, acc.shape[1] // 2, 2]))
            acc = left * right
        return tl.reshape(acc, [BLOCK_R])
    else:
        return tl.reduce(acc, 1, _mul)


@triton.jit
def _beats(v, best, IS_MAX: tl.constexpr):
    """Whether ``v`` replaces ``best``: strictly better (ties keep the earlier column), or NaN
    where ``best`` is not (NaN outranks everything, like torch)."""
    if IS_MAX:
        better = v > best
    else:
        better = v < best
    return better | ((v != v) & (best == best))


@triton.jit
def _extreme_rows(best, best_col, n_cols, FILL: tl.constexpr, IS_MAX: tl.constexpr):
    """(value, first column) of the row max/min over lanes that each hold their own best value and
    its first column. A NaN anywhere wins, at its first column."""
    is_nan = best != best
    clean = tl.where(is_nan, FILL, best)  # NaN-free, so the numpy nanmax/nanmin path never warns
    if IS_MAX:
        value = tl.max(clean, 1)
    else:
        value = tl.min(clean, 1)
    first_col = tl.min(tl.where(clean == value[:, None], best_col, n_cols), 1)
    first_nan_col = tl.min(tl.where(is_nan, best_col, n_cols), 1)
    has_nan = first_nan_col < n_cols
    # A sum over the NaN lanes is NaN for floats and 0 (unused) for ints: one dtype-agnostic NaN.
    nan_value = tl.sum(tl.where(is_nan, best, 0), 1)
    return tl.where(has_nan, nan_value, value), tl.where(has_nan, first_nan_col, first_col)


# --- the formulas a reduction is made of (see REDUCTIONS): a term folded over the columns
# (terms.py), a fold (one loop structure each) returning (value, column), and a finish on the row's
# result (terms.py).

@triton.jit
def sum_fold(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR: tl.constexpr,
             COMPUTE: tl.constexpr, TERM: tl.constexpr, IS_MAX: tl.constexpr, FILL: tl.constexpr,
             INTERPRETED: tl.constexpr, ONE_CHUNK: tl.constexpr, EVEN_C: tl.constexpr,
             BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """sum of TERM(x), accumulated lane-wise."""
    if ONE_CHUNK:  # the interpreter pays per tl op: one chunk needs no loop and no accumulator
        acc = _sum_chunk(x_ptr, row_off, row_mask, tl.arange(0, BLOCK_C).to(tl.int64), col_hi,
                         red_shape, red_strides, NR, COMPUTE, TERM, EVEN_C)
    else:
        acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
        for start in range(col_lo, col_hi, BLOCK_C):
            acc += _sum_chunk(x_ptr, row_off, row_mask, tl.arange(0, BLOCK_C).to(tl.int64) + start,
                              col_hi, red_shape, red_strides, NR, COMPUTE, TERM, EVEN_C)
    result = tl.sum(acc, 1)
    return result, result


@triton.jit
def prod_fold(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR: tl.constexpr,
              COMPUTE: tl.constexpr, TERM: tl.constexpr, IS_MAX: tl.constexpr, FILL: tl.constexpr,
              INTERPRETED: tl.constexpr, ONE_CHUNK: tl.constexpr, EVEN_C: tl.constexpr,
              BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    acc = tl.full([BLOCK_R, BLOCK_C], 1, COMPUTE)
    for start in range(col_lo, col_hi, BLOCK_C):
        x, cols, mask = _load_chunk(x_ptr, row_off, row_mask, start, col_hi, red_shape,
                                    red_strides, NR, COMPUTE, BLOCK_C)
        acc = tl.where(mask, acc * x, acc)
    result = _prod_rows(acc, BLOCK_R, BLOCK_C, INTERPRETED)
    return result, result


@triton.jit
def moments_fold(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR: tl.constexpr,
                 COMPUTE: tl.constexpr, TERM: tl.constexpr, IS_MAX: tl.constexpr, FILL: tl.constexpr,
                 INTERPRETED: tl.constexpr, ONE_CHUNK: tl.constexpr, EVEN_C: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """sum d^2 - (sum d)^2 / n with d = x - mean: two passes over the row; the second term
    corrects the rounding of the mean."""
    acc = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
    for start in range(col_lo, col_hi, BLOCK_C):
        x, cols, mask = _load_chunk(x_ptr, row_off, row_mask, start, col_hi, red_shape,
                                    red_strides, NR, COMPUTE, BLOCK_C)
        acc += x
    mean = tl.sum(acc, 1) / col_hi
    acc_d = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
    acc_d2 = tl.zeros([BLOCK_R, BLOCK_C], COMPUTE)
    for start in range(col_lo, col_hi, BLOCK_C):
        x, cols, mask = _load_chunk(x_ptr, row_off, row_mask, start, col_hi, red_shape,
                                    red_strides, NR, COMPUTE, BLOCK_C)
        d = tl.where(mask, x - mean[:, None], 0)
        acc_d += d
        acc_d2 += d * d
    sum_d = tl.sum(acc_d, 1)
    result = tl.sum(acc_d2, 1) - sum_d * sum_d / col_hi
    return result, result


@triton.jit
def logsumexp_fold(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR: tl.constexpr,
                   COMPUTE: tl.constexpr, TERM: tl.constexpr, IS_MAX: tl.constexpr, FILL: tl.constexpr,
                   INTERPRETED: tl.constexpr, ONE_CHUNK: tl.constexpr, EVEN_C: tl.constexpr,
                   BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """m + log(sum exp(x - m)), online (logsumexp.py); m itself where it is +-inf or NaN."""
    m = tl.full([BLOCK_R], float("-inf"), COMPUTE)
    s = tl.zeros([BLOCK_R], COMPUTE)
    for start in range(col_lo, col_hi, BLOCK_C):
        x, cols, mask = _load_chunk(x_ptr, row_off, row_mask, start, col_hi, red_shape,
                                    red_strides, NR, COMPUTE, BLOCK_C)
        m, s = online_logsumexp(m, s, tl.where(mask, x, float("-inf")))
    result = tl.where((m == float("inf")) | (m == float("-inf")) | (m != m), m, m + tl.log(s))
    return result, result


@triton.jit
def extreme_fold(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR: tl.constexpr,
                 COMPUTE: tl.constexpr, TERM: tl.constexpr, IS_MAX: tl.constexpr, FILL: tl.constexpr,
                 INTERPRETED: tl.constexpr, ONE_CHUNK: tl.constexpr, EVEN_C: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """(max or min of TERM(x), its first column); NaN propagates."""
    best = tl.full([BLOCK_R, BLOCK_C], FILL, COMPUTE)
    best_col = tl.zeros([BLOCK_R, BLOCK_C], tl.int64)
    for start in range(col_lo, col_hi, BLOCK_C):
        x, cols, mask = _load_chunk(x_ptr, row_off, row_mask, start, col_hi, red_shape,
                                    red_strides, NR, COMPUTE, BLOCK_C)
        if TERM is not None:
            x = TERM(x)
        take = mask & _beats(x, best, IS_MAX)
        best = tl.where(take, x, best)
        best_col = tl.where(take, cols[None, :], best_col)
    return _extreme_rows(best, best_col, col_hi, FILL, IS_MAX)


@triton.jit
def reduce_kernel(x_ptr, out_ptr, idx_ptr, n_rows, n_cols, kept_shape, kept_strides,
                  red_shape, red_strides, divisor, col_span, n_splits,
                  FOLD: tl.constexpr, TERM: tl.constexpr, FINISH: tl.constexpr, IS_MAX: tl.constexpr,
                  STORE_INDEX: tl.constexpr, STAGE: tl.constexpr,
                  NK: tl.constexpr, NR: tl.constexpr, COMPUTE: tl.constexpr,
                  FILL: tl.constexpr, INTERPRETED: tl.constexpr, ONE_PROGRAM: tl.constexpr,
                  ONE_CHUNK: tl.constexpr, EVEN_R: tl.constexpr, EVEN_C: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """out[r] = FINISH(FOLD over c of TERM(x[r, c])), for r < n_rows, c < n_cols (REDUCTIONS):

    sum: S = sum x          mean: S / divisor        norm1: sum |x|        norm2: sqrt(sum x^2)
    prod: prod x            amax/amin/norminf: max x, min x, max |x| (NaN propagates)
    max/min: value and first column of it (idx_ptr); argmax/argmin: that column alone
    var: (sum d^2 - (sum d)^2 / n) / divisor with d = x - mean, std = sqrt(var)
    logsumexp: m + log(sum exp(x - m)), m the running row max (rescaled online); m if |m| = inf.

    Split (few rows, long columns, on a GPU): STAGE 1 runs program (row block, s) over columns
    [s col_span, (s+1) col_span) and stores the partial -- the fold of TERM(x) before any FINISH --
    at out[r, s] (n_splits per row); STAGE 2 folds those partials, already transformed (no TERM),
    then finishes. STAGE 0 is the whole reduction in one pass.
    """
    if STAGE == 1:
        split = tl.program_id(1).to(tl.int64)
        col_lo = split * col_span
        col_hi = tl.minimum(col_lo + col_span, n_cols)
    else:
        col_lo = 0
        col_hi = n_cols
    if ONE_PROGRAM:  # the interpreter pays per tl op: skip the program's row arithmetic
        rows = tl.arange(0, BLOCK_R).to(tl.int64)
    else:
        rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    if EVEN_R:  # whole blocks of rows (sum folds only): no row lane is out of bounds
        row_mask = None
    else:
        row_mask = rows < n_rows
    row_off = element_offset(rows, kept_shape, kept_strides, NK)
    result, result_col = FOLD(x_ptr, row_off, row_mask, col_lo, col_hi, red_shape, red_strides, NR, COMPUTE,
                              TERM, IS_MAX, FILL, INTERPRETED, ONE_CHUNK, EVEN_C, BLOCK_R, BLOCK_C)
    if STORE_INDEX:
        tl.store(idx_ptr + rows, result_col, mask=row_mask)
    if STAGE != 1 and FINISH is not None:
        result = FINISH(result, result_col, divisor)
    if result.dtype != out_ptr.dtype.element_ty:
        result = result.to(out_ptr.dtype.element_ty)
    if STAGE == 1:
        tl.store(out_ptr + rows * n_splits + split, result, mask=row_mask)
    else:
        tl.store(out_ptr + rows, result, mask=row_mask)


class Reduction(NamedTuple):
    fold: object
    term: object = None  # x -> what is folded; None: x itself
    finish: object = None  # (value, column, divisor) -> the result; None: the value
    is_max: bool = False  # extreme folds: max (else min)
    store_index: bool = False  # also writes the column of the extreme (max/min)


REDUCTIONS = {
    "sum": Reduction(sum_fold), "mean": Reduction(sum_fold, finish=divide),
    "norm1": Reduction(sum_fold, term=magnitude), "norm2": Reduction(sum_fold, term=square, finish=root),
    "amax": Reduction(extreme_fold, is_max=True), "amin": Reduction(extreme_fold),
    "max": Reduction(extreme_fold, is_max=True, store_index=True), "min": Reduction(extreme_fold, store_index=True),
    "argmax": Reduction(extreme_fold, finish=column, is_max=True), "argmin": Reduction(extreme_fold, finish=column),
    "norminf": Reduction(extreme_fold, term=magnitude, is_max=True),
    "prod": Reduction(prod_fold), "var": Reduction(moments_fold, finish=divide),
    "std": Reduction(moments_fold, finish=root_of_quotient), "logsumexp": Reduction(logsumexp_fold),
}
REDUCE_OPS = tuple(REDUCTIONS)
_SUM_LIKE = tuple(op for op, r in REDUCTIONS.items() if r.fold is sum_fold)
_EXTREME = tuple(op for op, r in REDUCTIONS.items() if r.fold is extreme_fold)
_ARG = tuple(op for op, r in REDUCTIONS.items() if r.finish is column)


def _accumulate_dtype(x_dtype: torch.dtype, out_dtype: torch.dtype, op: str) -> torch.dtype:
    dtypes = (x_dtype,) if op in _ARG or op in ("max", "min") else (x_dtype, out_dtype)
    if torch.float64 in dtypes:
        return torch.float64
    if any(d.is_floating_point for d in dtypes):
        return torch.float32
    return torch.int64


def reduce(x: torch.Tensor, dims, op: str, *, out_dtype=None, correction=1):
    """Reduce ``x`` over exactly ``dims`` (non-negative, any order) with ``op`` (``REDUCE_OPS``).

    Returns a contiguous tensor shaped like ``x`` without ``dims``, of ``out_dtype`` or ``x.dtype``
    (int64 for argmax/argmin); for 'max'/'min' a pair (values, int64 indices), the index being the
    row-major position within the reduced dims (torch's when one dim is reduced), first on ties,
    the first NaN's if any. var/std divide by max(0, N - correction). Empty reductions give
    sum 0, prod 1, mean/var/std nan, logsumexp -inf, norms 0; the max/min family raises ValueError.
    """
    dims, kept, out_shape, n_rows, n_cols, value_dtype = _decide(x, dims, op, out_dtype)
    out = torch.empty(out_shape, dtype=value_dtype, device=x.device)
    idx = torch.empty(out_shape, dtype=torch.int64, device=x.device) if op in ("max", "min") else None
    if n_rows == 0:
        return (out, idx) if idx is not None else out
    block_r, block_c, warps = block_shape_2d(n_rows, n_cols, x.device)
    grid = cdiv(n_rows, block_r)
    splits = _splits(op, grid, n_cols, block_c, x.device)
    blocks = (block_r, block_c, warps, grid, splits)
    if target(x.device) == "cpu" and splits == 1:  # one launch, decided by what the site names
        site = (op, dims, x.dtype, x.shape, x.stride(), value_dtype, correction)

        def arguments():
            got = []
            _launch(x, dims, kept, out_shape, n_rows, n_cols, op, value_dtype, correction, out, idx, blocks,
                    lambda kernel, grid, *args, **meta: got.append((grid, args, meta)))
            return got[0]
        launch_site(reduce_kernel, site, [x, out, out if idx is None else idx], arguments)
    else:
        _launch(x, dims, kept, out_shape, n_rows, n_cols, op, value_dtype, correction, out, idx, blocks, launch)
    return (out, idx) if idx is not None else out


def _decide(x, dims, op, out_dtype):
    """What ``reduce`` decides from the call's metadata: (sorted dims, kept dims, output shape, rows,
    columns, output dtype), refusing unknown ops, dims out of range and empty extreme reductions."""
    if op not in REDUCE_OPS:
        raise ValueError(f"reduce: unknown op {op!r}; expected one of {REDUCE_OPS}")
    dims = tuple(sorted(set(int(d) for d in dims))) if x.dim() else ()
    if any(d < 0 or d >= x.dim() for d in dims):
        raise ValueError(f"reduce: dims {dims} out of range for a {x.dim()}-d tensor")
    kept = [d for d in range(x.dim()) if d not in dims]
    out_shape = tuple(x.shape[d] for d in kept)
    n_cols = math.prod(x.shape[d] for d in dims)
    if n_cols == 0 and op in _EXTREME:
        empty = [d for d in dims if x.shape[d] == 0]
        raise ValueError(f"{op}(): Expected reduction dim {empty[0]} to have non-zero size.")
    value_dtype = torch.int64 if op in _ARG else (out_dtype or x.dtype)
    return dims, kept, out_shape, math.prod(out_shape), n_cols, value_dtype


def planned(x, dims, op, *, out_dtype=None):
    """``reduce(x, dims, op, out_dtype=out_dtype)`` as a function of ``x`` alone, for a caller that
    sees the same call again (the same op, dims, dtypes, shape, strides and device: the caller's
    key): ``run(x) -> out``, whose launch replays the site's trace directly
    (``launch.site_replayer``). None while the CPU executor has no plan for the site yet, and for
    what is not one CPU launch of a fresh output (max/min's indices, an empty result, split columns)."""
    if op in ("max", "min") or target(x.device) != "cpu":
        return None
    dims, _, out_shape, n_rows, n_cols, value_dtype = _decide(x, dims, op, out_dtype)
    if n_rows == 0:
        return None
    block_r, block_c, _ = block_shape_2d(n_rows, n_cols, x.device)
    grid = cdiv(n_rows, block_r)
    if _splits(op, grid, n_cols, block_c, x.device) != 1:
        return None
    site = (op, dims, x.dtype, x.shape, x.stride(), value_dtype, 1)
    sample = torch.empty(out_shape, dtype=value_dtype, device=x.device)
    replay = site_replayer(reduce_kernel, site, [x, sample, sample])
    if replay is None:
        return None

    device = x.device

    def run(x):
        out = torch.empty_like(sample)  # (a fresh tensor's dtype, shape and device: the cheapest allocation)
        # the split decision is asked on each call, as reduce asks it
        if _splits(op, grid, n_cols, block_c, device) != 1 or not replay([x, out, out]):
            return reduce(x, dims, op, out_dtype=out_dtype)
        return out
    return run


def _launch(x, dims, kept, out_shape, n_rows, n_cols, op, value_dtype, correction, out, idx, blocks, launch):
    """The launches of ``reduce`` (one, or a split's two), through ``launch``; ``blocks``: (BLOCK_R,
    BLOCK_C, warps, row programs, column splits) as ``reduce`` chose them."""
    kept_shape, (kept_strides,) = collapse(out_shape, [[x.stride(d) for d in kept]])
    red_shape, (red_strides,) = collapse(tuple(x.shape[d] for d in dims),
                                          [[x.stride(d) for d in dims]])
    if n_cols == 0:  # the column loop never runs; keep element_offset's modulus non-zero regardless
        red_shape, red_strides = (1,), (0,)
    acc_dtype = _accumulate_dtype(x.dtype, value_dtype, op)
    row = REDUCTIONS[op]
    is_max = row.is_max
    if acc_dtype.is_floating_point:
        fill = float("-inf") if is_max else float("inf")
    else:
        fill = -(2 ** 63) if is_max else 2 ** 63 - 1
    divisor = float(n_cols if op == "mean" else max(0, n_cols - correction))
    block_r, block_c, warps, grid, splits = blocks
    sum_like = op in _SUM_LIKE  # the other ops build on the row mask
    if splits > 1:  # chunks small enough that each split walks whole ones (a no-op for _splits' own counts)
        block_c = max(2, min(block_c, next_pow2(cdiv(n_cols, 2 * splits))))
        splits = max(1, min(splits, cdiv(n_cols, block_c)))
    common = dict(FOLD=row.fold, IS_MAX=row.is_max, NK=len(kept_shape), COMPUTE=compute_dtype(acc_dtype), FILL=fill,
                  INTERPRETED=target(x.device) == "cpu", ONE_PROGRAM=grid == 1,
                  EVEN_R=sum_like and n_rows % block_r == 0, BLOCK_R=block_r, num_warps=warps)
    if splits == 1:
        launch(reduce_kernel, (grid,), x, out, out if idx is None else idx, n_rows, n_cols, kept_shape,
               kept_strides, red_shape, red_strides, divisor, 0, 1, TERM=row.term, FINISH=row.finish,
               STORE_INDEX=row.store_index, STAGE=0,
               NR=len(red_shape), ONE_CHUNK=n_cols <= block_c, EVEN_C=n_cols > 0 and n_cols % block_c == 0,
               BLOCK_C=block_c, **common)
    else:
        span = cdiv(cdiv(n_cols, splits), block_c) * block_c  # whole chunks per split
        splits = cdiv(n_cols, span)
        partial = torch.empty((n_rows, splits), dtype=acc_dtype, device=x.device)
        launch(reduce_kernel, (grid, splits), x, partial, partial, n_rows, n_cols, kept_shape, kept_strides,
               red_shape, red_strides, divisor, span, splits, TERM=row.term, FINISH=None, STORE_INDEX=False, STAGE=1,
               NR=len(red_shape), ONE_CHUNK=False, EVEN_C=n_cols % block_c == 0, BLOCK_C=block_c, **common)
        # the partials, a contiguous (n_rows, splits) matrix, reduced along its rows
        block_c2 = min(next_pow2(splits), block_c)
        launch(reduce_kernel, (grid,), partial, out, out, n_rows, splits, kept_shape, _row_major(kept_shape, splits),
               (splits,), (1,), divisor, 0, 1, TERM=None, FINISH=row.finish, STORE_INDEX=False, STAGE=2,
               NR=1, ONE_CHUNK=splits <= block_c2, EVEN_C=splits % block_c2 == 0, BLOCK_C=block_c2, **common)


SPLITTABLE = _SUM_LIKE + ("amax", "amin", "norminf")  # partials that combine with the same kind of op


def _splits(op: str, row_programs: int, n_cols: int, block_c: int, device: torch.device) -> int:
    """How many ways to split the columns. A GPU needs a few programs per SM to reach memory
    bandwidth; a full reduction of 2^26 elements is one row, one program unsplit. The interpreter
    pays per program, so the CPU never splits."""
    if op not in SPLITTABLE:
        return 1
    if target(device) != "cuda":
        return 1
    sms = sm_count(device)
    wanted = cdiv(4 * sms, row_programs)  # about four programs per SM in all
    return max(1, min(wanted, n_cols // (4 * block_c)))  # each split walks at least four chunks


def _row_major(shape, width: int):
    """Strides of a contiguous (*shape, width) tensor's leading dims."""
    strides, step = [], width
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))
