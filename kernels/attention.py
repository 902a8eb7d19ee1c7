"""Fused scaled dot-product attention: online softmax forward, recomputing backward.

For q (B, Hq, L, E), k (B, Hk, S, E), v (B, Hk, S, Ev) (query head h reads key/value head
h // (Hq / Hk): grouped-query attention), scale c, an optional mask and dropout p:

    s_ij = c q_i . k_j  (+ mask_ij if additive;  -inf where a boolean mask is False, j > i if causal)
    P_ij = exp(s_ij - lse_i),  lse_i = log sum_j exp(s_ij)          (a fully masked row gives P = 0)
    o_i  = sum_j P_ij Z_ij v_j,   Z_ij = keep_ij / (1 - p)             (keep: Philox, regenerated)

Forward (one launch): each program owns BLOCK_M query rows and walks the keys BLOCK_N at a time
keeping the running max m, the running sum l and the unnormalised output (rescaled by exp(m_old -
m_new) when the max grows), so no (L, S) matrix exists; it stores o and lse (B, Hq, L) only.

Backward (two launches, no atomics): with D_i = dO_i . o_i (= sum_j P_ij dP_ij),
    dP_ij = Z_ij dO_i . v_j,   dS_ij = P_ij (dP_ij - D_i)
    dq_i = c sum_j dS_ij k_j                 one program per query block, walking the keys
    dk_j = c sum_i dS_ij q_i,  dv_j = sum_i P_ij Z_ij dO_i
                                             one program per key block and key/value head, walking
                                             the query blocks of every query head of its group
P is recomputed from s and the saved lse. Products through ``tl.dot`` in fp32 (fp64 for fp64).

Compiled, a program owns one head's block of rows (or keys). Interpreted (``PACKED``), where a
program costs per op whatever its tile size, rows of all heads are flattened into one index
(b, h, i) and keys into (b, hk, j), and a program takes a block of many heads' rows against the
keys of just those heads, pairs of different heads masked out: a few large tiles instead of
B * H programs of small ones.
Interpreted problems small enough for one program of (B Hq, L, S) tiles run ``attention_whole.py``
instead. Dropout's counter for (b, h, i, j) is offset + ((b Hq + h) L + i) S + j: element (b, h, i, j) of
``kernels.dropout`` over a (B, Hq, L, S) tensor draws the same keep.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .attention_whole import dense_like, fits, masked, whole_backward, whole_forward
from .factories import as_i64
from .runtime.launch import launch
from .helpers.layout import cdiv, next_pow2
from .random.philox import as_int64_bits, philox_key_and_base
from .helpers.scalars import as_f64, f64_bits
from .runtime.target import target

__all__ = ["attention_forward", "attention_backward", "MASK_NONE", "MASK_BOOL", "MASK_ADD"]

MASK_NONE, MASK_BOOL, MASK_ADD = 0, 1, 2


@triton.jit
def _query_rows(pid, bh, L, NR, BLOCK_M: tl.constexpr, PACKED: tl.constexpr):
    """(flat row index bh*L + i, i, row mask) of a program's query rows."""
    if PACKED:
        r = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        return r, r % L, r < NR
    else:
        i = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
        return bh * L + i, i, i < L


@triton.jit
def _key_cols(c, bhk, S, c_hi, PACKED: tl.constexpr):
    """(flat key index bhk*S + j, j, key mask) of the key offsets ``c``."""
    if PACKED:
        return c, c % S, c < c_hi
    else:
        return bhk * S + c, c, c < S


@triton.jit
def _logits(q, kt, r, i, rmask, kc, j, cmask, L, S, HQ, HK, GROUP, mask_ptr, sm0, sm1, sm2, sm3, scale,
            MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, PACKED: tl.constexpr, ACC: tl.constexpr):
    """The (rows, keys) logits, -inf where masked, out of range or (packed) of different heads."""
    s = tl.dot(q, kt, input_precision="ieee", out_dtype=ACC) * scale
    valid = rmask[:, None] & cmask[None, :]
    bh = r // L
    if PACKED:
        bhk = kc // S
        same = ((bh // HQ)[:, None] == (bhk // HK)[None, :]) & (((bh % HQ) // GROUP)[:, None] == (bhk % HK)[None, :])
        valid = valid & same
    if CAUSAL:
        valid = valid & (j[None, :] <= i[:, None])
    return masked(s, valid, mask_ptr + ((bh // HQ) * sm0 + (bh % HQ) * sm1 + i * sm2)[:, None] + j[None, :] * sm3,
                  MASK_KIND, ACC)


@triton.jit
def _keep_scale(key, base, r, j, S, threshold, inv_keep, ACC: tl.constexpr):
    """Z = keep / (1 - p) for the pairs (row r = bh*L + i, key j): counter offset + r*S + j."""
    x0, _, _, _ = tl.randint4x(key, base + r[:, None] * S + j[None, :])
    return tl.where(x0.to(tl.int64) < as_i64(threshold), inv_keep, 0.0).to(ACC)


@triton.jit
def _load_rows(ptr, r, i, rmask, L, HQ, s0, s1, s2, s3, n, N, ACC: tl.constexpr):
    bh = r // L
    return tl.load(ptr + ((bh // HQ) * s0 + (bh % HQ) * s1 + i * s2)[:, None] + n[None, :] * s3,
                   mask=rmask[:, None] & (n < N)[None, :], other=0).to(ACC)


@triton.jit
def _load_keys_t(ptr, kc, j, cmask, S, HK, s0, s1, s2, s3, n, N, ACC: tl.constexpr):
    """Keys (or values) transposed: (n, keys)."""
    bhk = kc // S
    return tl.load(ptr + ((bhk // HK) * s0 + (bhk % HK) * s1 + j * s2)[None, :] + n[:, None] * s3,
                   mask=cmask[None, :] & (n < N)[:, None], other=0).to(ACC)


@triton.jit
def _key_range(pid, L, S, HQ, HK, GROUP, NR, CAUSAL: tl.constexpr, PACKED: tl.constexpr, BLOCK_M: tl.constexpr):
    """[lo, hi) of the key offsets a query block meets: packed, the keys of its rows' heads."""
    if PACKED:
        first = (pid.to(tl.int64) * BLOCK_M) // L
        last = tl.minimum(pid.to(tl.int64) * BLOCK_M + BLOCK_M, NR) - 1
        last = last // L
        lo = ((first // HQ) * HK + (first % HQ) // GROUP) * S
        hi = ((last // HQ) * HK + (last % HQ) // GROUP + 1) * S
        return lo, hi
    else:
        hi = S
        if CAUSAL:
            hi = tl.minimum(S, (pid + 1) * BLOCK_M)
        return 0, hi


@triton.jit
def _tile_and_head(PACKED: tl.constexpr):
    """(the program's tile of rows or columns, its (batch, head)). Packed, axis 0 walks every tile.
    Otherwise axis 0 is the (batch, head) -- CUDA allows 2^31 - 1 programs there and only 65,535 on
    axis 1, which batch x heads can pass -- and axis 1 the tile."""
    if PACKED:
        tile = tl.program_id(0).to(tl.int64)
        head = tl.program_id(1).to(tl.int64)
    else:
        tile = tl.program_id(1).to(tl.int64)
        head = tl.program_id(0).to(tl.int64)
    return tile, head


@triton.jit
def _query_block(q_ptr, seed, offset, state, scale_bits, keep_bits, L, S, E, HQ, HK, GROUP, NR, sq0, sq1, sq2, sq3,
                 CAUSAL: tl.constexpr, FROM_STATE: tl.constexpr, PACKED: tl.constexpr, ACC: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    """What a query-block program starts from: the key head its rows read, the rows, the feature
    ranges, the scale and dropout constants, the Philox key and base, the queries and the range
    [lo, hi) of key offsets they meet."""
    pid, bh = _tile_and_head(PACKED)
    bhk = (bh // HQ) * HK + (bh % HQ) // GROUP
    r, i, rmask = _query_rows(pid, bh, L, NR, BLOCK_M, PACKED)
    e = tl.arange(0, BLOCK_E)
    ev = tl.arange(0, BLOCK_EV)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    q = _load_rows(q_ptr, r, i, rmask, L, HQ, sq0, sq1, sq2, sq3, e, E, ACC)
    lo, hi = _key_range(pid, L, S, HQ, HK, GROUP, NR, CAUSAL, PACKED, BLOCK_M)
    return (bhk, r, i, rmask, e, ev, as_f64(scale_bits).to(ACC), as_f64(keep_bits).to(ACC), key, base, q, lo, hi)


@triton.jit
def _grad_rows(do_ptr, o_ptr, lse_ptr, r, i, rmask, L, HQ, sd0, sd1, sd2, sd3, ev, EV, ACC: tl.constexpr):
    """(dO, delta = rowsum(dO * O), logsumexp) of the rows r."""
    do = _load_rows(do_ptr, r, i, rmask, L, HQ, sd0, sd1, sd2, sd3, ev, EV, ACC)
    o = tl.load(o_ptr + r[:, None] * EV + ev[None, :], mask=rmask[:, None] & (ev < EV)[None, :], other=0).to(ACC)
    return do, tl.sum(do * o, 1), tl.load(lse_ptr + r, mask=rmask, other=0)


@triton.jit
def _keys_and_logits(n0, bhk, hi, k_ptr, sk0, sk1, sk2, sk3, q, r, i, rmask, L, S, E, HQ, HK, GROUP, mask_ptr,
                     sm0, sm1, sm2, sm3, scale, e, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr,
                     PACKED: tl.constexpr, ACC: tl.constexpr, BLOCK_N: tl.constexpr):
    """The key block from offset n0: its columns, the keys transposed and the masked, scaled logits."""
    kc, j, cmask = _key_cols(n0 + tl.arange(0, BLOCK_N).to(tl.int64), bhk, S, hi, PACKED)
    kt = _load_keys_t(k_ptr, kc, j, cmask, S, HK, sk0, sk1, sk2, sk3, e, E, ACC)
    s = _logits(q, kt, r, i, rmask, kc, j, cmask, L, S, HQ, HK, GROUP, mask_ptr, sm0, sm1, sm2, sm3, scale,
                MASK_KIND, CAUSAL, PACKED, ACC)
    return kc, j, cmask, kt, s


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, seed, offset, state, threshold, scale_bits,
                    keep_bits, L, S, E, EV, HQ, HK, GROUP, NR, sq0, sq1, sq2, sq3, sk0, sk1, sk2, sk3,
                    sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr,
                    DROPOUT: tl.constexpr, FROM_STATE: tl.constexpr, PACKED: tl.constexpr, ACC: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    bhk, r, i, rmask, e, ev, scale, inv_keep, key, base, q, lo, hi = _query_block(
        q_ptr, seed, offset, state, scale_bits, keep_bits, L, S, E, HQ, HK, GROUP, NR, sq0, sq1, sq2, sq3, CAUSAL,
        FROM_STATE, PACKED, ACC, BLOCK_M, BLOCK_E, BLOCK_EV)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_EV], ACC)
    for n0 in range(lo, hi, BLOCK_N):
        kc, j, cmask, kt, s = _keys_and_logits(n0, bhk, hi, k_ptr, sk0, sk1, sk2, sk3, q, r, i, rmask, L, S, E, HQ,
                                               HK, GROUP, mask_ptr, sm0, sm1, sm2, sm3, scale, e, MASK_KIND,
                                               CAUSAL, PACKED, ACC, BLOCK_N)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            p = p * _keep_scale(key, base, r, j, S, threshold, inv_keep, ACC)
        vt = _load_keys_t(v_ptr, kc, j, cmask, S, HK, sv0, sv1, sv2, sv3, ev, EV, ACC)
        acc = acc * alpha[:, None] + tl.dot(p, tl.trans(vt), input_precision="ieee", out_dtype=ACC)
        m_i = m_new
    empty = l_i == 0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    tl.store(o_ptr + r[:, None] * EV + ev[None, :], out.to(o_ptr.dtype.element_ty),
             mask=rmask[:, None] & (ev < EV)[None, :])
    m_safe = tl.where(m_i == float("-inf"), 0.0, m_i)
    tl.store(lse_ptr + r, tl.where(empty, 0.0, m_safe + tl.log(tl.where(empty, 1.0, l_i))), mask=rmask)


@triton.jit
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, do_ptr, dq_ptr, seed, offset, state,
                       threshold, scale_bits, keep_bits, L, S, E, EV, HQ, HK, GROUP, NR, sq0, sq1, sq2, sq3,
                       sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3, sd0, sd1, sd2, sd3,
                       MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                       FROM_STATE: tl.constexpr, PACKED: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    bhk, r, i, rmask, e, ev, scale, inv_keep, key, base, q, lo, hi = _query_block(
        q_ptr, seed, offset, state, scale_bits, keep_bits, L, S, E, HQ, HK, GROUP, NR, sq0, sq1, sq2, sq3, CAUSAL,
        FROM_STATE, PACKED, ACC, BLOCK_M, BLOCK_E, BLOCK_EV)
    do, delta, lse = _grad_rows(do_ptr, o_ptr, lse_ptr, r, i, rmask, L, HQ, sd0, sd1, sd2, sd3, ev, EV, ACC)
    dq = tl.zeros([BLOCK_M, BLOCK_E], ACC)
    for n0 in range(lo, hi, BLOCK_N):
        kc, j, cmask, kt, s = _keys_and_logits(n0, bhk, hi, k_ptr, sk0, sk1, sk2, sk3, q, r, i, rmask, L, S, E, HQ,
                                               HK, GROUP, mask_ptr, sm0, sm1, sm2, sm3, scale, e, MASK_KIND,
                                               CAUSAL, PACKED, ACC, BLOCK_N)
        p = tl.exp(s - lse[:, None])
        vt = _load_keys_t(v_ptr, kc, j, cmask, S, HK, sv0, sv1, sv2, sv3, ev, EV, ACC)
        dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
        if DROPOUT:
            dp = dp * _keep_scale(key, base, r, j, S, threshold, inv_keep, ACC)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds, tl.trans(kt), input_precision="ieee", out_dtype=ACC)
    tl.store(dq_ptr + r[:, None] * E + e[None, :], (dq * scale).to(dq_ptr.dtype.element_ty),
             mask=rmask[:, None] & (e < E)[None, :])


@triton.jit
def _dkv_step(q_ptr, do_ptr, o_ptr, lse_ptr, mask_ptr, kt, vt, dk, dv, r, i, rmask, kc, j, cmask, key, base,
              threshold, inv_keep, scale, L, S, E, EV, HQ, HK, GROUP, sq0, sq1, sq2, sq3, sd0, sd1, sd2, sd3,
              sm0, sm1, sm2, sm3, e, ev, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
              PACKED: tl.constexpr, ACC: tl.constexpr):
    """One query block's share of dk and dv for a block of keys."""
    q = _load_rows(q_ptr, r, i, rmask, L, HQ, sq0, sq1, sq2, sq3, e, E, ACC)
    do, delta, lse = _grad_rows(do_ptr, o_ptr, lse_ptr, r, i, rmask, L, HQ, sd0, sd1, sd2, sd3, ev, EV, ACC)
    s = _logits(q, kt, r, i, rmask, kc, j, cmask, L, S, HQ, HK, GROUP, mask_ptr, sm0, sm1, sm2, sm3, scale,
                MASK_KIND, CAUSAL, PACKED, ACC)
    p = tl.exp(s - lse[:, None])
    dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
    if DROPOUT:
        z = _keep_scale(key, base, r, j, S, threshold, inv_keep, ACC)
        dv += tl.dot(tl.trans(p * z), do, input_precision="ieee", out_dtype=ACC)
        dp = dp * z
    else:
        dv += tl.dot(tl.trans(p), do, input_precision="ieee", out_dtype=ACC)
    ds = p * (dp - delta[:, None])
    dk += tl.dot(tl.trans(ds), q, input_precision="ieee", out_dtype=ACC)
    return dk, dv


@triton.jit
def attn_bwd_dkv_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, do_ptr, dk_ptr, dv_ptr, seed, offset,
                        state, threshold, scale_bits, keep_bits, L, S, E, EV, HQ, HK, GROUP, NC,
                        sq0, sq1, sq2, sq3, sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3,
                        sd0, sd1, sd2, sd3, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                        FROM_STATE: tl.constexpr, PACKED: tl.constexpr, ACC: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr,
                        BLOCK_EV: tl.constexpr):
    pid, bhk = _tile_and_head(PACKED)
    c = pid.to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    kc, j, cmask = _key_cols(c, bhk, S, NC, PACKED)
    e = tl.arange(0, BLOCK_E)
    ev = tl.arange(0, BLOCK_EV)
    scale = as_f64(scale_bits).to(ACC)
    inv_keep = as_f64(keep_bits).to(ACC)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    kt = _load_keys_t(k_ptr, kc, j, cmask, S, HK, sk0, sk1, sk2, sk3, e, E, ACC)
    vt = _load_keys_t(v_ptr, kc, j, cmask, S, HK, sv0, sv1, sv2, sv3, ev, EV, ACC)
    dk = tl.zeros([BLOCK_N, BLOCK_E], ACC)
    dv = tl.zeros([BLOCK_N, BLOCK_EV], ACC)
    if PACKED:  # the rows of every query head reading this block's key heads
        first = (pid.to(tl.int64) * BLOCK_N) // S
        last = (tl.minimum(pid.to(tl.int64) * BLOCK_N + BLOCK_N, NC) - 1) // S
        lo = ((first // HK) * HQ + (first % HK) * GROUP) * L
        hi = ((last // HK) * HQ + (last % HK) * GROUP + GROUP) * L
        for m0 in range(lo, hi, BLOCK_M):
            r = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
            dk, dv = _dkv_step(q_ptr, do_ptr, o_ptr, lse_ptr, mask_ptr, kt, vt, dk, dv, r, r % L, r < hi, kc, j,
                               cmask, key, base, threshold, inv_keep, scale, L, S, E, EV, HQ, HK, GROUP,
                               sq0, sq1, sq2, sq3, sd0, sd1, sd2, sd3, sm0, sm1, sm2, sm3, e, ev, MASK_KIND, CAUSAL,
                               DROPOUT, PACKED, ACC)
    else:
        lo = 0
        if CAUSAL:
            lo = (pid * BLOCK_N) // BLOCK_M * BLOCK_M
        b = bhk // HK
        hk = bhk % HK
        for gi in range(0, GROUP):
            bh = b * HQ + hk * GROUP + gi
            for m0 in range(lo, L, BLOCK_M):
                i = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
                dk, dv = _dkv_step(q_ptr, do_ptr, o_ptr, lse_ptr, mask_ptr, kt, vt, dk, dv, bh * L + i, i, i < L,
                                   kc, j, cmask, key, base, threshold, inv_keep, scale, L, S, E, EV, HQ, HK,
                                   GROUP, sq0, sq1, sq2, sq3, sd0, sd1, sd2, sd3, sm0, sm1, sm2, sm3, e, ev,
                                   MASK_KIND, CAUSAL, DROPOUT, PACKED, ACC)
    tl.store(dk_ptr + kc[:, None] * E + e[None, :], (dk * scale).to(dk_ptr.dtype.element_ty),
             mask=cmask[:, None] & (e < E)[None, :])
    tl.store(dv_ptr + kc[:, None] * EV + ev[None, :], dv.to(dv_ptr.dtype.element_ty),
             mask=cmask[:, None] & (ev < EV)[None, :])


_PACKED_TILE = 1 << 14  # interpreted: the largest (rows x keys) logits tile of one program


def _layout(B, HQ, HK, L, S, E, EV, dtype, device):
    """(packed, BLOCK_M, BLOCK_N, BLOCK_E, BLOCK_EV, num_warps)."""
    be, bev = max(16, next_pow2(E)), max(16, next_pow2(EV))
    if target(device) == "cpu":
        # interpreted, an op costs ~0.1 ms plus its elements: tiles of ~16K logits spanning about
        # two key heads and four times as many query rows (measured best on small heads; the
        # cross-head pairs they compute and mask are cheaper than more, smaller programs)
        bn = max(16, min(next_pow2(2 * (HQ // HK) * S), 64, next_pow2(B * HK * S)))
        bm = max(16, min(next_pow2(B * HQ * L), _PACKED_TILE // bn, 4 * bn))
        return True, bm, bn, be, bev, 4
    # Compiled, the products are fp32 (fp64) FMAs with every tile in registers: at 64 x 64 tiles
    # and 4 warps the backward's dk/dv program spilled 7.8 KB a thread on sm_90 (head dim 64).
    # Over 8 warps, 32 x 32 tiles of fp16/bf16 and 16 x 16 ones of fp32/fp64 or past head dim 64
    # compile without spilling on sm_90 (tests/kernels/test_gpu_shapes.py; docs/gpu.md's probe).
    big = 32 if dtype in (torch.float16, torch.bfloat16) and max(be, bev) <= 64 else 16
    return False, min(max(16, next_pow2(L)), big), min(max(16, next_pow2(S)), big), be, bev, 8


def _acc(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def _mask_args(mask, q):
    if mask is None:
        return q, (0, 0, 0, 0)
    m = mask.view(torch.uint8) if mask.dtype == torch.bool else mask
    return m, tuple(m.stride())


def _dropout_args(p, seed, offset, state):
    threshold = min(max(math.ceil((1.0 - p) * 4294967296.0), 0), 1 << 32)
    return (as_int64_bits(seed), as_int64_bits(offset), state, threshold,
            f64_bits(1.0 / (1.0 - p)) if p < 1 else f64_bits(0.0))


def attention_forward(q, k, v, mask, mask_kind, causal, scale, p=0.0, seed=0, offset=0, state=None):
    """(o (B, Hq, L, Ev) contiguous, lse (B, Hq, L) fp32/fp64). q, k, v any strides; ``mask``
    already expanded to (B, Hq, L, S) (stride 0 on broadcast dims) or None."""
    B, HQ, L, E = q.shape
    HK, S, EV = k.shape[1], k.shape[2], v.shape[3]
    o = torch.empty((B, HQ, L, EV), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, HQ, L), dtype=torch.float64 if q.dtype == torch.float64 else torch.float32,
                      device=q.device)
    if o.numel() == 0:
        return o, lse.fill_(0)
    if S == 0:  # no keys: every row is empty
        return o.fill_(0), lse.fill_(0)
    m, ms = _mask_args(mask, q)
    seed, offset, st, threshold, keep = _dropout_args(p, seed, offset, state)
    if target(q.device) == "cpu" and fits(B * HQ, HQ, HK, L, S, E, EV):
        whole_forward(q, k, v, m, ms, o, lse, (seed, offset, o if st is None else st, threshold, keep, p > 0,
                                               st is not None), f64_bits(scale), mask_kind, causal, _acc(q.dtype))
        return o, lse
    packed, bm, bn, be, bev, warps = _layout(B, HQ, HK, L, S, E, EV, q.dtype, q.device)
    NR = B * HQ * L
    grid = (cdiv(NR, bm), 1) if packed else (B * HQ, cdiv(L, bm))
    launch(attn_fwd_kernel, grid, q, k, v, m, o, lse, seed, offset, o if st is None else st,
           threshold, f64_bits(scale), keep, L, S, E, EV, HQ, HK, HQ // HK, NR, *q.stride(), *k.stride(),
           *v.stride(), *ms, MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=p > 0, FROM_STATE=st is not None,
           PACKED=packed, ACC=_acc(q.dtype), BLOCK_M=bm, BLOCK_N=bn, BLOCK_E=be, BLOCK_EV=bev, num_warps=warps)
    return o, lse


def attention_backward(q, k, v, o, lse, do, mask, mask_kind, causal, scale, p=0.0, seed=0, offset=0, state=None,
                       need_dq=True, need_dkv=True):
    """(dq, dk, dv), contiguous of q's, k's and v's shapes (None where not needed)."""
    B, HQ, L, E = q.shape
    HK, S, EV = k.shape[1], k.shape[2], v.shape[3]
    like = dict(dtype=q.dtype, device=q.device)
    dq = torch.empty((B, HQ, L, E), **like) if need_dq else None
    dk = torch.empty((B, HK, S, E), **like) if need_dkv else None
    dv = torch.empty((B, HK, S, EV), **like) if need_dkv else None
    if B * HQ * L == 0 or S == 0:
        for t in (dq, dk, dv):
            if t is not None:
                t.fill_(0)
        return dq, dk, dv
    m, ms = _mask_args(mask, q)
    seed, offset, st, threshold, keep = _dropout_args(p, seed, offset, state)
    if target(q.device) == "cpu" and fits(B * HQ, HQ, HK, L, S, E, EV):
        # each gradient in its input's memory order: heads split from a (L, N, E) projection get
        # gradients whose merge back to (L, N, E) is a view, not a copy
        dq, dk, dv = (None if t is None else dense_like(t, u) for t, u in ((dq, q), (dk, k), (dv, v)))
        whole_backward(q, k, v, m, ms, o, lse, do, dq, dk, dv, (seed, offset, o if st is None else st, threshold,
                                                                keep, p > 0, st is not None),
                       f64_bits(scale), mask_kind, causal, _acc(q.dtype))
        return dq, dk, dv
    packed, bm, bn, be, bev, warps = _layout(B, HQ, HK, L, S, E, EV, q.dtype, q.device)
    meta = dict(MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=p > 0, FROM_STATE=st is not None, PACKED=packed,
                ACC=_acc(q.dtype), BLOCK_M=bm, BLOCK_N=bn, BLOCK_E=be, BLOCK_EV=bev, num_warps=warps)
    st = o if st is None else st
    strides = (*q.stride(), *k.stride(), *v.stride(), *ms, *do.stride())
    NR, NC = B * HQ * L, B * HK * S
    if need_dq:
        grid = (cdiv(NR, bm), 1) if packed else (B * HQ, cdiv(L, bm))
        launch(attn_bwd_dq_kernel, grid, q, k, v, m, o, lse, do, dq, seed, offset, st, threshold,
               f64_bits(scale), keep, L, S, E, EV, HQ, HK, HQ // HK, NR, *strides, **meta)
    if need_dkv:
        grid = (cdiv(NC, bn), 1) if packed else (B * HK, cdiv(S, bn))
        launch(attn_bwd_dkv_kernel, grid, q, k, v, m, o, lse, do, dk, dv, seed, offset, st,
               threshold, f64_bits(scale), keep, L, S, E, EV, HQ, HK, HQ // HK, NC, *strides, **meta)
    return dq, dk, dv
