"""``cat``/``stack`` of N tensors in one launch, whatever their strides and dtypes.

The output (contiguous, of the promoted dtype) is walked element by element; each output element
finds the input it comes from by a binary search over the inputs' starts along the cat dim, then
reads that input through its own strides. Everything per input lives in one int64 table:

    table[0 : NP]             the inputs' starts along the cat dim (NP = next power of two of N,
                              padded with a start no index reaches)
    table[NP + k * ROW + 0]   input k's address
    table[NP + k * ROW + 1]   its kind: which of the launch's up to four source dtypes it has
    table[NP + k * ROW + 2 + d]  its stride along (collapsed) dim d, in elements

N enters the signature only as log2(NP), so 17 inputs and 30 share a compiled kernel (and a CPU
trace). Inputs of one size ``seg`` along the cat dim (every stack) need no search: input k starts
at k * seg, and the starts region is one unused entry (LOG_N = 0). The shape is collapsed on the
host first: size-1 dims dropped, neighbours merged where every input is contiguous across them,
so a cat of contiguous tensors indexes 2 or 3 dims.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch
import triton
import triton.language as tl

from ..helpers.layout import block_for, cdiv, next_pow2
from ..optim.tables import upload
from ..runtime.capture import is_capturing
from ..runtime.launch import launch, launch_site

__all__ = ["MAX_KINDS", "cat_into"]

MAX_KINDS = 4  # source dtypes one launch reads (the like0..like3 arguments)
_CAPTURED_TABLES: list = []  # (device table, host table) of the joins captured into CUDA graphs
_NO_START = 1 << 62  # the padding rows' start: above every index


@triton.jit
def _read(rows, kind, off, mask, like, K: tl.constexpr, OUT: tl.constexpr):
    """The values of the lanes whose input has kind K, as OUT (0 elsewhere). A masked lane's row
    may lie past the table (its search ends on a padding slot): its address is not read."""
    src = tl.load(rows, mask=mask, other=0).to(tl.pointer_type(like.dtype.element_ty)) + off
    return tl.load(src, mask=mask & (kind == K), other=0).to(OUT)


@triton.jit
def cat_kernel(out, table, like0, like1, like2, like3, numel, shape, seg, CAT: tl.constexpr, NDIM: tl.constexpr,
               LOG_N: tl.constexpr, ROW: tl.constexpr, KINDS: tl.constexpr, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    # the index along the cat dim: innermost dims first, as the output is contiguous
    at = lin * 0
    rem = lin
    for i in tl.static_range(NDIM):
        if NDIM - 1 - i == CAT:
            at = rem % shape[NDIM - 1 - i]
        rem = rem // shape[NDIM - 1 - i]
    if LOG_N == 0:  # every input has size seg along the cat dim (a stack: 1)
        k = at // seg
        start = k * seg
    else:  # the last input whose start is <= at (empty inputs are not in the table)
        k = lin * 0
        for s in tl.static_range(LOG_N):
            cand = k + (1 << (LOG_N - 1 - s))
            k = tl.where(tl.load(table + cand, mask=mask, other=0) <= at, cand, k)
        start = tl.load(table + k, mask=mask, other=0)
    rows = table + (1 << LOG_N) + k * ROW
    off = lin * 0
    rem = lin
    for i in tl.static_range(NDIM):
        idx = rem % shape[NDIM - 1 - i]
        rem = rem // shape[NDIM - 1 - i]
        if NDIM - 1 - i == CAT:
            idx = idx - start
        off += idx * tl.load(rows + 2 + (NDIM - 1 - i), mask=mask, other=0)
    OUT: tl.constexpr = out.dtype.element_ty
    if KINDS == 1:
        v = tl.load(tl.load(rows, mask=mask, other=0).to(tl.pointer_type(like0.dtype.element_ty)) + off,
                    mask=mask, other=0).to(OUT)
    else:
        kind = tl.load(rows + 1, mask=mask, other=-1)
        v = _read(rows, kind, off, mask, like0, 0, OUT)
        v = tl.where(kind == 1, _read(rows, kind, off, mask, like1, 1, OUT), v)
        if KINDS > 2:
            v = tl.where(kind == 2, _read(rows, kind, off, mask, like2, 2, OUT), v)
        if KINDS > 3:
            v = tl.where(kind == 3, _read(rows, kind, off, mask, like3, 3, OUT), v)
    tl.store(out + lin, v, mask=mask)


def _collapse(shape, dim, strides):
    """(shape, cat dim, strides per input) with size-1 dims other than ``dim`` dropped and
    neighbours on the same side of ``dim`` merged where every input is contiguous across them
    (the output, contiguous, always is)."""
    dims = []  # [size, [stride per input], is the cat dim]
    for d, size in enumerate(shape):
        if d != dim and size == 1:
            continue
        col = [st[d] for st in strides]
        if dims and d != dim and not dims[-1][2] and all(p == s * size for p, s in zip(dims[-1][1], col)):
            dims[-1][0] *= size
            dims[-1][1] = col
            continue
        dims.append([size, col, d == dim])
    new_dim = next(i for i, e in enumerate(dims) if e[2])
    return tuple(e[0] for e in dims), new_dim, [[e[1][k] for e in dims] for k in range(len(strides))]


def _storage(t: torch.Tensor) -> torch.Tensor:
    """Bool is read and written as its bytes (0/1), which every dtype converts as bool would."""
    return t.view(torch.uint8) if t.dtype == torch.bool else t


def cat_into(out: torch.Tensor, inputs: list, dim: int, stacked: bool = False) -> None:
    """Write the cat of ``inputs`` (torch tensors of ``out``'s ndim, sizes equal but along ``dim``,
    at most ``MAX_KINDS`` distinct dtypes, none empty) into the contiguous ``out`` in one launch.
    ``stacked``: the inputs lack ``dim`` (a stack), each stands for size 1 along it. Everything but
    the addresses is decided once per signature of the inputs (``_plan``): a call fills the
    addresses into the plan's table and launches."""
    key = (out.dtype, out.shape, out.device, dim, stacked, *[(t.dtype, t.shape, t.stride()) for t in inputs])
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 1024:
            _plans.clear()
        plan = _plans[key] = [*_plan(out, inputs, dim, stacked), 0]
    plan[-1] += 1
    site, template, ptr_at, like_at, grid, scalars, meta, uses = plan
    host = template.copy()
    host[ptr_at] = [t.data_ptr() for t in inputs]
    capturing = out.is_cuda and is_capturing()
    table, host = upload(host, out.device, capturing)
    if capturing:  # the graph's copy node re-reads the host table at every replay: keep both for good
        _CAPTURED_TABLES.append((table, host))
    tensors = [_storage(out), table, *[_storage(inputs[k]) for k in like_at]]
    if uses <= 2:  # a signature seen once or twice (a sequence growing by a token) would plan a site it never
        # replays, which costs more than the launch: launched as launch does, planned from its third call
        launch(cat_kernel, grid, *tensors, *scalars, keep_alive=tuple(inputs), **meta)
        return
    # the site (the plan) decides every argument but the addresses, the table's included
    launch_site(cat_kernel, site, tensors, lambda: (grid, (*tensors, *scalars), meta), keep_alive=tuple(inputs))


_plans: dict = {}  # the inputs' signature -> [what _plan decided..., calls so far]
_site_ids = itertools.count()  # a plan's launch site (never reused: the executor keeps plans by site)


def _plan(out, inputs, dim, stacked):
    """(the table with zero addresses, where the addresses go, the inputs passed as like0..like3,
    grid, the scalar arguments, the constexprs) of a cat launch, from metadata alone."""
    kind_of: dict = {}  # source dtype -> its kind (its like argument), in order of first appearance
    likes = []
    for k, t in enumerate(inputs):
        dt = _storage(t).dtype
        if dt not in kind_of:
            kind_of[dt] = len(likes)
            likes.append(k)
    if stacked:
        strides = [(*st[:dim], 0, *st[dim:]) for st in (t.stride() for t in inputs)]
        sizes = [1] * len(inputs)
    else:
        strides = [t.stride() for t in inputs]
        sizes = [t.shape[dim] for t in inputs]
    shape, cat, strides = _collapse(out.shape, dim, strides)
    seg = sizes[0]
    if all(n == seg for n in sizes):
        rows, log_n = [0], 0
    else:
        np2 = next_pow2(len(inputs))
        rows, s = [], 0
        for n in sizes:
            rows.append(s)
            s += n
        rows += [_NO_START] * (np2 - len(inputs))
        log_n = np2.bit_length() - 1
    ptr_at = []
    for t, st in zip(inputs, strides):
        ptr_at.append(len(rows))
        rows += [0, kind_of[_storage(t).dtype], *st]
    numel = out.numel()
    block = block_for(numel, out.device)
    meta = dict(CAT=cat, NDIM=len(shape), LOG_N=log_n, ROW=2 + len(shape), KINDS=len(likes), BLOCK=block)
    return (("cat", next(_site_ids)), np.array(rows, dtype=np.int64), np.array(ptr_at, dtype=np.intp),
            likes + [likes[0]] * (MAX_KINDS - len(likes)), (cdiv(numel, block),), (numel, shape, seg), meta)
