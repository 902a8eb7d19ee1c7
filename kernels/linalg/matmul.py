"""Batched matrix multiply with a fused bias + activation epilogue.

    C[b] = act(A[b] @ B[b] + bias),   A[b]: (M, K),  B[b]: (K, N),  bias: (N,) added to every row

for every index ``b`` of the batch shape ``(*batch)``. Each operand is reached through its own
strides, so transposed, sliced and broadcast (stride-0, ``expand``-ed) operands are read in place
and never copied; the batch index is unflattened over the (collapsed) batch shape like any
pointwise operand.

Why fp32 accumulation: a K-long dot product summed in fp16/bf16 loses about log2(K) bits and
overflows fp16's 65504 easily, while tensor cores accumulate fp16/bf16 products into fp32 at no
cost. fp32 inputs multiply in full IEEE precision unless ``allow_tf32`` (tensor cores, ~10-bit
mantissa inputs); fp64 inputs multiply and accumulate in fp64. The result is rounded once, to
``out_dtype`` (default ``a.dtype``), after the epilogue, so bias and activation see the fp32/fp64
sum. ``return_preact`` also stores ``A @ B + bias`` (rounded like the output), which the backward
of gelu/silu needs since their derivative is a function of the input, not the output.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .. import elementwise
from ..runtime.capture import is_capturing
from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch, launch_site, site_replayer
from ..helpers.layout import cdiv, collapse, next_pow2
from ..reductions.reduce import reduce
from ..runtime.target import target

__all__ = ["matmul", "planned", "ACTIVATIONS"]

# the formulas the pointwise ops use, so fused matches unfused and their *_bwd formulas apply
ACTIVATIONS = {None: None, "relu": elementwise.relu, "gelu": elementwise.gelu,
               "gelu_tanh": elementwise.gelu_tanh, "silu": elementwise.silu,
               "tanh": elementwise.tanh_, "sigmoid": elementwise.sigmoid}
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, p_ptr, bias_ptr, rs_ptr, M, N, K,
                  batch_shape, a_bstrides, b_bstrides, c_bstrides, p_bstrides,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  stride_pm, stride_pn, stride_bias, stride_rs,
                  BATCH_NDIM: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                  STORE_PREACT: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, ONE_TILE: tl.constexpr,
                  ONE_K: tl.constexpr, EVEN_M: tl.constexpr, EVEN_N: tl.constexpr,
                  EVEN_K: tl.constexpr, ROWSUM: tl.constexpr):
    # The interpreter pays per tl op, not per flop: ONE_TILE (one program covers the whole
    # unbatched product, the usual CPU case) skips the tile and batch arithmetic below.
    if ONE_TILE:
        rm = tl.arange(0, BLOCK_M).to(tl.int64)  # int64: a row stride times rm may pass 2^31
        rn = tl.arange(0, BLOCK_N).to(tl.int64)
        a_ptrs = a_ptr + rm[:, None] * stride_am
        b_ptrs = b_ptr + rn[None, :] * stride_bn
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        if STORE_PREACT:
            p_ptrs = p_ptr + rm[:, None] * stride_pm + rn[None, :] * stride_pn
    else:
        # Batch and tile share axis 0: CUDA caps axes 1 and 2 at 65535, and batches of heads exceed it.
        pid = tl.program_id(0)
        # Helpers such as tl.cdiv and element_offset are avoided: each @jit call costs the interpreter ~1 ms.
        grid_m = (M + BLOCK_M - 1) // BLOCK_M
        grid_n = (N + BLOCK_N - 1) // BLOCK_N
        tiles = grid_m * grid_n
        batch = (pid // tiles).to(tl.int64)
        tile = pid % tiles
        if GROUP_M > 1:  # GROUP_M row-tiles sweep the columns together so their A rows stay in L2
            group = tile // (GROUP_M * grid_n)
            first_m = group * GROUP_M
            group_m = tl.minimum(grid_m - first_m, GROUP_M)
            pid_m = first_m + (tile % (GROUP_M * grid_n)) % group_m
            pid_n = (tile % (GROUP_M * grid_n)) // group_m
        else:  # the interpreter has no cache to help, and pays per op
            pid_m = tile // grid_n
            pid_n = tile % grid_n

        rm = pid_m.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pid_n.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
        # Unflatten the batch index over the batch shape once for all four operands (as element_offset).
        a_off = batch * 0
        b_off = batch * 0
        c_off = batch * 0
        p_off = batch * 0
        rem = batch
        for i in tl.static_range(BATCH_NDIM):
            # an index assigned to a name inside the loop stops being constexpr when compiled: inline it
            idx = rem % batch_shape[BATCH_NDIM - 1 - i]
            a_off += idx * a_bstrides[BATCH_NDIM - 1 - i]
            b_off += idx * b_bstrides[BATCH_NDIM - 1 - i]
            c_off += idx * c_bstrides[BATCH_NDIM - 1 - i]
            p_off += idx * p_bstrides[BATCH_NDIM - 1 - i]
            rem = rem // batch_shape[BATCH_NDIM - 1 - i]
        a_ptrs = a_ptr + a_off + rm[:, None] * stride_am
        b_ptrs = b_ptr + b_off + rn[None, :] * stride_bn
        c_ptrs = c_ptr + c_off + rm[:, None] * stride_cm + rn[None, :] * stride_cn
        if STORE_PREACT:
            p_ptrs = p_ptr + p_off + rm[:, None] * stride_pm + rn[None, :] * stride_pn
    rk = tl.arange(0, BLOCK_K)
    a_ptrs += rk[None, :] * stride_ak
    b_ptrs += rk[:, None] * stride_bk
    # EVEN_*: the dim is a multiple of its block, so no lane of it is out of bounds and its mask
    # is skipped (fewer interpreted ops; the usual EVEN_K trick compiled)
    if EVEN_M:
        mask_m = None
    else:
        mask_m = rm < M
    if EVEN_N:
        mask_n = None
    else:
        mask_n = rn < N
    if ROWSUM:  # also sum A over K: the bias gradient db = dZ^T 1 beside dW = dZ^T X
        rowsum = tl.zeros((BLOCK_M,), dtype=ACC)

    if ONE_K:  # K fits one block: no loop, no pointer advance
        if EVEN_K:
            mask_k = None
        else:
            mask_k = rk < K
        a = _load_tile(a_ptrs, mask_m, mask_k)
        b = _load_tile(b_ptrs, mask_k, mask_n)
        acc = tl.dot(a, b, tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC), input_precision=PRECISION, out_dtype=ACC)
        if ROWSUM:
            rowsum += tl.sum(a.to(ACC), 1)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
        for k in range(0, K, BLOCK_K):
            if EVEN_K:
                mask_k = None
            else:
                mask_k = rk < K - k
            a = _load_tile(a_ptrs, mask_m, mask_k)
            b = _load_tile(b_ptrs, mask_k, mask_n)
            acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
            if ROWSUM:
                rowsum += tl.sum(a.to(ACC), 1)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk

    if HAS_BIAS:
        if EVEN_N:
            bias = tl.load(bias_ptr + rn * stride_bias)
        else:
            bias = tl.load(bias_ptr + rn * stride_bias, mask=mask_n, other=0.0)
        if bias.dtype != ACC:
            bias = bias.to(ACC)
        acc += bias[None, :]
    if ROWSUM:
        rs = rowsum.to(rs_ptr.dtype.element_ty)
        if ONE_TILE:  # programs of one row of tiles all sum the same rows: the first one stores
            _store_rows(rs_ptr + rm * stride_rs, rs, mask_m)
        else:
            # compared as a block: the interpreter mistypes a scalar comparison combined with a block
            _store_rows(rs_ptr + rm * stride_rs, rs, (rm < M) & ((rm * 0 + pid_n) == 0))
    if STORE_PREACT:
        _store_tile(p_ptrs, acc, mask_m, mask_n)
    if ACT is not None:
        acc = ACT(acc, 0.0)
    _store_tile(c_ptrs, acc, mask_m, mask_n)


@triton.jit
def _load_tile(ptrs, mask_rows, mask_cols):
    """A 2-d tile, 0 where either mask (None: every lane in bounds) is off."""
    if mask_rows is None:
        if mask_cols is None:
            return tl.load(ptrs)
        else:
            return tl.load(ptrs, mask=mask_cols[None, :], other=0.0)
    else:
        if mask_cols is None:
            return tl.load(ptrs, mask=mask_rows[:, None], other=0.0)
        else:
            return tl.load(ptrs, mask=mask_rows[:, None] & mask_cols[None, :], other=0.0)


@triton.jit
def _store_tile(ptrs, value, mask_rows, mask_cols):
    if value.dtype != ptrs.dtype.element_ty:
        value = value.to(ptrs.dtype.element_ty)
    if mask_rows is None:
        if mask_cols is None:
            tl.store(ptrs, value)
        else:
            tl.store(ptrs, value, mask=mask_cols[None, :])
    else:
        if mask_cols is None:
            tl.store(ptrs, value, mask=mask_rows[:, None])
        else:
            tl.store(ptrs, value, mask=mask_rows[:, None] & mask_cols[None, :])


@triton.jit
def _store_rows(ptrs, value, mask):
    if mask is None:
        tl.store(ptrs, value)
    else:
        tl.store(ptrs, value, mask=mask)


def _pow2(n: int, lo: int, hi: int) -> int:
    return min(max(next_pow2(n), lo), hi)


# Tensor-core configurations tried once per problem key on CUDA for large products (Hopper's
# wgmma wants 8 warps and 128-wide tiles; which of these wins depends on the GPU and the shape).
# All are checked to compile for sm_90 with pipelined loads within 227 KB of shared memory.
_TENSOR_CORE_CANDIDATES = {
    2: [(128, 256, 64, 8, 3), (128, 128, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4)],  # fp16/bf16
    4: [(128, 256, 32, 8, 3), (128, 128, 32, 8, 3), (128, 128, 32, 4, 4)],  # fp32 as tf32
}
# Tensor-core tiles (BLOCK_M, BLOCK_N over 8 warps) of the activations whose epilogue spilled beside
# 64-128 accumulators a thread (128 x 128 and 128 x 256 tiles) on sm_90: gelu_tanh 1.8-2.5 KB, tanh
# (computed in fp64) 3.7-6.2 KB. 32 accumulators a thread keep gelu_tanh in registers, 16 tanh. The
# other activations kept at most ~0.3 KB, as a bias alone does at a masked edge (docs/gpu.md).
_HEAVY_EPILOGUE_TILES = {"gelu_tanh": (128, 64), "tanh": (64, 64)}
TUNE_MIN_FLOPS = 2 * 2048 ** 3  # below this a launch is too short for the choice to matter
_tuned: dict = {}  # problem key -> the fastest candidate measured


def _tuned_config(key, candidates, measure, capturing: bool):
    """The candidate with the least ``measure(config)`` time, measured once per ``key``. During a
    graph capture nothing is measured (the timing runs would be captured), nor on a CPU configured
    as CUDA (kernels/runtime/target.py): the first candidate."""
    best = _tuned.get(key)
    if best is None:
        if capturing:
            return candidates[0]
        best = _tuned[key] = min(candidates, key=measure)
    return best


def _epilogue_candidates(config):
    """Tensor-core tiles tried for a product with a heavy epilogue: ``config`` (``_config``'s) and
    its transpose, which holds as many accumulators a thread (the tuned candidates hold 64-128)."""
    bm, bn, *rest = config
    return [config] if bm == bn else [config, (bn, bm, *rest)]


def _config(dtype, M, N, K, device, allow_tf32, activation=None):
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages); tl.dot needs every block dim >= 16."""
    if target(device) == "cpu":
        # The interpreter pays per program instance and per tl op, not per flop: few, big tiles
        # (numpy's BLAS does the flops; past 256 x 256 x 512 a tile's element-wise work shows)
        return _pow2(M, 16, 256), _pow2(N, 16, 256), _pow2(K, 16, 512), 4, 1
    if dtype in (torch.float16, torch.bfloat16) or (dtype == torch.float32 and allow_tf32):
        bm, bn, bk, warps, stages = 128, 128, 64 if dtype != torch.float32 else 32, 8, 3
        bm, bn = _HEAVY_EPILOGUE_TILES.get(activation, (bm, bn))
    elif dtype == torch.float32:  # IEEE fp32 runs on FMA units: smaller tiles, more programs
        bm, bn, bk, warps, stages = 64, 64, 32, 4, 3
    else:  # fp64: 8-byte elements, keep the staged tiles within shared memory
        bm, bn, bk, warps, stages = 64, 64, 16, 4, 2
    if activation is not None and dtype in (torch.float32, torch.float64) and not allow_tf32:
        # the epilogue keeps its temporaries for each accumulator a thread holds: at 32 a thread,
        # tanh spilled 1 KB in fp32 and gelu_tanh 1.5 KB in fp64; at 16 fp32 still spilled 24-48 B
        # where the tiles are masked (1000^3: tanh on sm_90 and sm_80, relu/gelu on sm_80); 8 fit
        bm, warps = 32, 8
    # Small problems: shrink the tile rather than mask most of it away.
    return _pow2(M, 16, bm), _pow2(N, 16, bn), _pow2(K, 16, bk), warps, stages


def matmul(a, b, *, bias=None, activation=None, allow_tf32=False, out_dtype=None, out=None,
           return_preact=False, rowsum=False):
    """``act(a @ b + bias)`` for ``a`` (*batch, M, K) and ``b`` (*batch, K, N), any strides.

    The batch shapes must be equal (broadcast one by ``expand``-ing it: stride 0 is free).
    Returns a contiguous (*batch, M, N) tensor of ``out_dtype`` (default ``a.dtype``), or writes
    into ``out`` (any strides) and returns it. With ``return_preact`` returns ``(out, preact)``,
    ``preact = a @ b + bias`` before the activation, contiguous and of the output's dtype. With
    ``rowsum`` (2-d only) returns ``(out, s)``, ``s[i] = sum_k a[i, k]`` (fp32/fp64-accumulated,
    of the output's dtype) from the same launch: a linear layer's dW = dZ^T X and db = dZ^T 1.
    """
    if a.dim() < 2 or b.dim() != a.dim():
        raise ValueError(f"matmul needs (*batch, M, K) @ (*batch, K, N), got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    *batch, M, K = a.shape
    batch, N = tuple(batch), b.shape[-1]
    if tuple(b.shape[:-2]) != batch or b.shape[-2] != K:
        raise ValueError(f"matmul shapes {tuple(a.shape)} and {tuple(b.shape)} do not match")
    if a.dtype != b.dtype or a.dtype not in _FLOATS:
        raise TypeError(f"matmul needs two operands of one float dtype, got {a.dtype}, {b.dtype}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; expected one of {list(ACTIVATIONS)}")
    if bias is not None and tuple(bias.shape) != (N,):
        raise ValueError(f"bias must have shape ({N},), got {tuple(bias.shape)}")
    if rowsum and (batch or return_preact):
        raise ValueError("rowsum is for a 2-d product without return_preact")
    shape = batch + (M, N)
    out_dtype = out_dtype or a.dtype
    if out is None:
        out = torch.empty(shape, dtype=out_dtype, device=a.device)
    elif tuple(out.shape) != shape:
        raise ValueError(f"out must have shape {shape}, got {tuple(out.shape)}")
    preact = torch.empty(shape, dtype=out.dtype, device=a.device) if return_preact else out
    sums = None
    if rowsum:
        if N == 0:  # no program runs, but the rows of a still have sums
            sums = reduce(a, (1,), "sum", out_dtype=out.dtype)
        else:
            sums = torch.empty((M,), dtype=out.dtype, device=a.device)
    result = (out, preact) if return_preact else (out, sums) if rowsum else out
    nbatch = math.prod(batch)
    if M == 0 or N == 0 or nbatch == 0:
        return result

    nb = len(batch)
    cuda = target(a.device) == "cuda"  # configured as on a GPU (kernels/runtime/target.py)
    on_gpu = a.device.type == "cuda"
    tf32 = allow_tf32 and a.dtype == torch.float32

    def run(config, run_launch=launch):
        # (the batch layout here: a CPU site seen before launches without building arguments)
        bshape, bstrides = collapse(batch, [t.stride()[:nb] for t in (a, b, out, preact)])
        bm, bn, bk, warps, stages = config[:5]
        a_, b_ = _k_major(a, b) if config[5:] == (True,) else (a, b)
        grid = (nbatch * cdiv(M, bm) * cdiv(N, bn),)
        run_launch(matmul_kernel, grid, a_, b_, out, preact, out if bias is None else bias,
                   out if sums is None else sums, M, N, K,
                   bshape, *bstrides, a_.stride(-2), a_.stride(-1), b_.stride(-2), b_.stride(-1),
                   out.stride(-2), out.stride(-1), preact.stride(-2), preact.stride(-1),
                   0 if bias is None else bias.stride(0), 0 if sums is None else sums.stride(0),
                   BATCH_NDIM=len(bshape) if nbatch > 1 else 0, HAS_BIAS=bias is not None,
                   ACT=ACTIVATIONS[activation], STORE_PREACT=return_preact,
                   ACC=compute_dtype(accumulate_dtype(a.dtype)),
                   PRECISION="tf32" if tf32 else "ieee",
                   BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                   GROUP_M=8 if cuda else 1, ONE_TILE=grid == (1,), ONE_K=K <= bk,
                   EVEN_M=M % bm == 0, EVEN_N=N % bn == 0, EVEN_K=K > 0 and K % bk == 0, ROWSUM=rowsum,
                   num_warps=warps, num_stages=stages)

    if not cuda:  # one launch, decided by what the site names
        site = _site(a, b, out, preact, bias, sums, activation, return_preact, rowsum, allow_tf32)

        def arguments():
            got = []
            run(_config(a.dtype, M, N, K, a.device, allow_tf32, activation),
                lambda kernel, grid, *args, **meta: got.append((grid, args, meta)))
            return got[0]
        launch_site(matmul_kernel, site, [a, b, out, preact, out if bias is None else bias,
                                          out if sums is None else sums], arguments)
        return result
    config = _config(a.dtype, M, N, K, a.device, allow_tf32, activation)
    candidates = _TENSOR_CORE_CANDIDATES.get(a.element_size() if a.dtype != torch.float32 or tf32 else 0)
    if candidates and activation in _HEAVY_EPILOGUE_TILES:
        candidates = _epilogue_candidates(config)
    if tf32 and not batch and (a.stride(-1) != 1 or b.stride(-2) != 1):
        # Hopper's wgmma reads tf32 operands K-major only; Triton falls back to the older, slower
        # mma for any other layout. Copying an operand K-major first is tried as a candidate too.
        candidates = candidates + [(*c, True) for c in candidates]
    if cuda and candidates and 2 * nbatch * M * N * K >= TUNE_MIN_FLOPS:
        # Timing runs write the same output (every store overwrites), straight through Triton:
        # they are not the caller's launches.
        key = (a.device, a.dtype, tf32, bias is not None, activation, return_preact, rowsum, nbatch, M, N, K,
               a.stride(-1) == 1, b.stride(-1) == 1)
        config = _tuned_config(key, candidates, lambda c: _time_ms(lambda: run(c, _direct_launch)),
                               is_capturing() or not on_gpu)
    run(config)
    return result


def _site(a, b, out, preact, bias, sums, activation, return_preact, rowsum, allow_tf32):
    """A CPU launch's ``launch_site`` key: what its arguments derive from, but the addresses."""
    return (a.dtype, a.shape, a.stride(), b.shape, b.stride(), out.dtype, out.stride(), preact.stride(),
            None if bias is None else (bias.dtype, bias.stride()), None if sums is None else sums.stride(), activation,
            return_preact, rowsum, allow_tf32)


def planned(a, b, bias=None, activation=None):
    """``matmul(a, b, bias=bias, activation=activation)`` as a function of operands with these
    dtypes, shapes and strides (equal batch shapes, one float dtype, distinct tensors; the caller's
    call signature): ``run(a, b, bias) -> out``, whose launch replays the site's trace directly
    (``launch.site_replayer``) and otherwise launches as ``matmul`` does. None while the CPU
    executor has no plan for the site yet, off the CPU, or when the product is empty."""
    *batch, M, K = a.shape
    N = b.shape[-1]
    shape, dtype, device = tuple(batch) + (M, N), a.dtype, a.device
    if not a.is_cpu or target(device) != "cpu" or math.prod(shape) == 0 or K == 0:
        return None
    out = torch.empty(shape, dtype=dtype, device=device)
    replay = site_replayer(matmul_kernel, _site(a, b, out, out, bias, None, activation, False, False, False),
                           [a, b, out, out, out if bias is None else bias, out])
    if replay is None:
        return None

    def run(a, b, bias=None):
        out = torch.empty(shape, dtype=dtype, device=device)
        if not replay([a, b, out, out, out if bias is None else bias, out]):
            matmul(a, b, bias=bias, activation=activation, out=out)
        return out
    return run


def _k_major(a: torch.Tensor, b: torch.Tensor):
    """``a`` (M, K) and ``b`` (K, N) with K the contiguous dim of each: copies where it is not."""
    if a.stride(-1) != 1:
        a = a.contiguous()
    if b.stride(-2) != 1:
        b = b.transpose(-1, -2).contiguous().transpose(-1, -2)
    return a, b


def _direct_launch(kernel, grid, *args, **meta):
    with torch.cuda.device(args[0].device):
        kernel[grid](*args, **meta)


def _time_ms(fn) -> float:
    return triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median")
