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
Dropout's counter for (b, h, i, j) is offset + ((b Hq + h) L + i) S + j: element (b, h, i, j) of
``kernels.dropout`` over a (B, Hq, L, S) tensor draws the same keep.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .factories import as_i64
from .launch import launch
from .pointwise import cdiv, next_pow2
from .random import _as_int64_bits, philox_key_and_base
from .scalars import as_f64, f64_bits

__all__ = ["attention_forward", "attention_backward", "MASK_NONE", "MASK_BOOL", "MASK_ADD"]

MASK_NONE, MASK_BOOL, MASK_ADD = 0, 1, 2


@triton.jit
def _scores(q, kt, rows, cols, L, S, mask_ptr, m_b, m_h, sm2, sm3, scale,
            MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, ACC: tl.constexpr):
    """The (BLOCK_M, BLOCK_N) logits, -inf where masked or out of range."""
    s = tl.dot(q, kt, input_precision="ieee", out_dtype=ACC) * scale
    valid = (rows < L)[:, None] & (cols < S)[None, :]
    if CAUSAL:
        valid = valid & (cols[None, :] <= rows[:, None])
    if MASK_KIND != 0:
        mp = mask_ptr + m_b + m_h + rows[:, None] * sm2 + cols[None, :] * sm3
        if MASK_KIND == 1:
            valid = valid & (tl.load(mp, mask=valid, other=0) != 0)
        else:
            s = s + tl.load(mp, mask=valid, other=0).to(ACC)
    return tl.where(valid, s, float("-inf"))


@triton.jit
def _keep_scale(key, base, bh, rows, cols, L, S, threshold, inv_keep, ACC: tl.constexpr):
    ctr = (bh * L + rows)[:, None] * S + cols[None, :]
    x0, _, _, _ = tl.randint4x(key, base + ctr)
    return tl.where(x0.to(tl.int64) < as_i64(threshold), inv_keep, 0.0).to(ACC)


@triton.jit
def attn_fwd_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, seed, offset, state, threshold, scale_bits,
                    keep_bits, L, S, E, EV, HQ, GROUP, sq0, sq1, sq2, sq3, sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3,
                    sm0, sm1, sm2, sm3, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                    FROM_STATE: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    b = bh // HQ
    h = bh % HQ
    hk = h // GROUP
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    e = tl.arange(0, BLOCK_E)
    ev = tl.arange(0, BLOCK_EV)
    scale = as_f64(scale_bits).to(ACC)
    q = tl.load(q_ptr + b * sq0 + h * sq1 + rows[:, None] * sq2 + e[None, :] * sq3,
                mask=(rows < L)[:, None] & (e < E)[None, :], other=0).to(ACC)
    k_base = k_ptr + b * sk0 + hk * sk1
    v_base = v_ptr + b * sv0 + hk * sv1
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    inv_keep = as_f64(keep_bits).to(ACC)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_EV], ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (tl.program_id(0) + 1) * BLOCK_M)
    for n0 in range(0, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        kt = tl.load(k_base + cols[None, :] * sk2 + e[:, None] * sk3,
                     mask=(cols < S)[None, :] & (e < E)[:, None], other=0).to(ACC)
        s = _scores(q, kt, rows, cols, L, S, mask_ptr, b * sm0, h * sm1, sm2, sm3, scale, MASK_KIND, CAUSAL, ACC)
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        if DROPOUT:
            p = p * _keep_scale(key, base, bh, rows, cols, L, S, threshold, inv_keep, ACC)
        vb = tl.load(v_base + cols[:, None] * sv2 + ev[None, :] * sv3,
                     mask=(cols < S)[:, None] & (ev < EV)[None, :], other=0).to(ACC)
        acc = acc * alpha[:, None] + tl.dot(p, vb, input_precision="ieee", out_dtype=ACC)
        m_i = m_new
    empty = l_i == 0
    out = acc / tl.where(empty, 1.0, l_i)[:, None]
    row_mask = rows < L
    tl.store(o_ptr + (bh * L + rows)[:, None] * EV + ev[None, :], out.to(o_ptr.dtype.element_ty),
             mask=row_mask[:, None] & (ev < EV)[None, :])
    m_safe = tl.where(m_i == float("-inf"), 0.0, m_i)
    tl.store(lse_ptr + bh * L + rows, tl.where(empty, 0.0, m_safe + tl.log(tl.where(empty, 1.0, l_i))),
             mask=row_mask)


@triton.jit
def attn_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, do_ptr, dq_ptr, seed, offset, state,
                       threshold, scale_bits, keep_bits, L, S, E, EV, HQ, GROUP, sq0, sq1, sq2, sq3,
                       sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3, sd0, sd1, sd2, sd3,
                       MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                       FROM_STATE: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    b = bh // HQ
    h = bh % HQ
    hk = h // GROUP
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = rows < L
    e = tl.arange(0, BLOCK_E)
    ev = tl.arange(0, BLOCK_EV)
    scale = as_f64(scale_bits).to(ACC)
    inv_keep = as_f64(keep_bits).to(ACC)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    q = tl.load(q_ptr + b * sq0 + h * sq1 + rows[:, None] * sq2 + e[None, :] * sq3,
                mask=row_mask[:, None] & (e < E)[None, :], other=0).to(ACC)
    ev_mask = row_mask[:, None] & (ev < EV)[None, :]
    do = tl.load(do_ptr + b * sd0 + h * sd1 + rows[:, None] * sd2 + ev[None, :] * sd3, mask=ev_mask,
                 other=0).to(ACC)
    o = tl.load(o_ptr + (bh * L + rows)[:, None] * EV + ev[None, :], mask=ev_mask, other=0).to(ACC)
    delta = tl.sum(do * o, 1)
    lse = tl.load(lse_ptr + bh * L + rows, mask=row_mask, other=0)
    k_base = k_ptr + b * sk0 + hk * sk1
    v_base = v_ptr + b * sv0 + hk * sv1
    dq = tl.zeros([BLOCK_M, BLOCK_E], ACC)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (tl.program_id(0) + 1) * BLOCK_M)
    for n0 in range(0, hi, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N).to(tl.int64)
        kt = tl.load(k_base + cols[None, :] * sk2 + e[:, None] * sk3,
                     mask=(cols < S)[None, :] & (e < E)[:, None], other=0).to(ACC)
        s = _scores(q, kt, rows, cols, L, S, mask_ptr, b * sm0, h * sm1, sm2, sm3, scale, MASK_KIND, CAUSAL, ACC)
        p = tl.exp(s - lse[:, None])
        vt = tl.load(v_base + cols[None, :] * sv2 + ev[:, None] * sv3,
                     mask=(cols < S)[None, :] & (ev < EV)[:, None], other=0).to(ACC)
        dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
        if DROPOUT:
            dp = dp * _keep_scale(key, base, bh, rows, cols, L, S, threshold, inv_keep, ACC)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds, tl.trans(kt), input_precision="ieee", out_dtype=ACC)
    tl.store(dq_ptr + (bh * L + rows)[:, None] * E + e[None, :], (dq * scale).to(dq_ptr.dtype.element_ty),
             mask=row_mask[:, None] & (e < E)[None, :])


@triton.jit
def attn_bwd_dkv_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, do_ptr, dk_ptr, dv_ptr, seed, offset,
                        state, threshold, scale_bits, keep_bits, L, S, E, EV, HQ, HK, GROUP, sq0, sq1, sq2, sq3,
                        sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3, sd0, sd1, sd2, sd3,
                        MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                        FROM_STATE: tl.constexpr, ACC: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr):
    bhk = tl.program_id(1).to(tl.int64)
    b = bhk // HK
    hk = bhk % HK
    cols = tl.program_id(0).to(tl.int64) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < S
    e = tl.arange(0, BLOCK_E)
    ev = tl.arange(0, BLOCK_EV)
    scale = as_f64(scale_bits).to(ACC)
    inv_keep = as_f64(keep_bits).to(ACC)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    kt = tl.load(k_ptr + b * sk0 + hk * sk1 + cols[None, :] * sk2 + e[:, None] * sk3,
                 mask=col_mask[None, :] & (e < E)[:, None], other=0).to(ACC)
    vt = tl.load(v_ptr + b * sv0 + hk * sv1 + cols[None, :] * sv2 + ev[:, None] * sv3,
                 mask=col_mask[None, :] & (ev < EV)[:, None], other=0).to(ACC)
    dk = tl.zeros([BLOCK_N, BLOCK_E], ACC)
    dv = tl.zeros([BLOCK_N, BLOCK_EV], ACC)
    lo = 0
    if CAUSAL:
        lo = (tl.program_id(0) * BLOCK_N) // BLOCK_M * BLOCK_M
    for gi in range(0, GROUP):
        h = hk * GROUP + gi
        bh = b * HQ + h
        for m0 in range(lo, L, BLOCK_M):
            rows = m0 + tl.arange(0, BLOCK_M).to(tl.int64)
            row_mask = rows < L
            q = tl.load(q_ptr + b * sq0 + h * sq1 + rows[:, None] * sq2 + e[None, :] * sq3,
                        mask=row_mask[:, None] & (e < E)[None, :], other=0).to(ACC)
            ev_mask = row_mask[:, None] & (ev < EV)[None, :]
            do = tl.load(do_ptr + b * sd0 + h * sd1 + rows[:, None] * sd2 + ev[None, :] * sd3, mask=ev_mask,
                         other=0).to(ACC)
            o = tl.load(o_ptr + (bh * L + rows)[:, None] * EV + ev[None, :], mask=ev_mask, other=0).to(ACC)
            delta = tl.sum(do * o, 1)
            lse = tl.load(lse_ptr + bh * L + rows, mask=row_mask, other=0)
            s = _scores(q, kt, rows, cols, L, S, mask_ptr, b * sm0, h * sm1, sm2, sm3, scale, MASK_KIND, CAUSAL,
                        ACC)
            p = tl.exp(s - lse[:, None])
            dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
            if DROPOUT:
                z = _keep_scale(key, base, bh, rows, cols, L, S, threshold, inv_keep, ACC)
                dv += tl.dot(tl.trans(p * z), do, input_precision="ieee", out_dtype=ACC)
                dp = dp * z
            else:
                dv += tl.dot(tl.trans(p), do, input_precision="ieee", out_dtype=ACC)
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds), q, input_precision="ieee", out_dtype=ACC)
    out_rows = (bhk * S + cols)[:, None]
    tl.store(dk_ptr + out_rows * E + e[None, :], (dk * scale).to(dk_ptr.dtype.element_ty),
             mask=col_mask[:, None] & (e < E)[None, :])
    tl.store(dv_ptr + out_rows * EV + ev[None, :], dv.to(dv_ptr.dtype.element_ty),
             mask=col_mask[:, None] & (ev < EV)[None, :])


def _blocks(L, S, E, EV, dtype, device):
    be, bev = max(16, next_pow2(E)), max(16, next_pow2(EV))
    if device.type == "cpu":  # the interpreter pays per op, not per element: few, large blocks
        return min(max(16, next_pow2(L)), 128), min(max(16, next_pow2(S)), 128), be, bev
    big = 32 if dtype == torch.float64 or max(be, bev) > 64 else 64
    return min(max(16, next_pow2(L)), big), min(max(16, next_pow2(S)), big), be, bev


def _acc(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32


def _mask_args(mask, q):
    if mask is None:
        return q, (0, 0, 0, 0)
    m = mask.view(torch.uint8) if mask.dtype == torch.bool else mask
    return m, tuple(m.stride())


def _dropout_args(p, seed, offset, state):
    threshold = min(max(math.ceil((1.0 - p) * 4294967296.0), 0), 1 << 32)
    return (_as_int64_bits(seed), _as_int64_bits(offset), state, threshold,
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
    bm, bn, be, bev = _blocks(L, S, E, EV, q.dtype, q.device)
    m, ms = _mask_args(mask, q)
    seed, offset, st, threshold, keep = _dropout_args(p, seed, offset, state)
    launch(attn_fwd_kernel, (cdiv(L, bm), B * HQ), q, k, v, m, o, lse, seed, offset, o if st is None else st,
           threshold, f64_bits(scale), keep, L, S, E, EV, HQ, HQ // HK, *q.stride(), *k.stride(), *v.stride(), *ms,
           MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=p > 0, FROM_STATE=st is not None, ACC=_acc(q.dtype),
           BLOCK_M=bm, BLOCK_N=bn, BLOCK_E=be, BLOCK_EV=bev)
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
    bm, bn, be, bev = _blocks(L, S, E, EV, q.dtype, q.device)
    m, ms = _mask_args(mask, q)
    seed, offset, st, threshold, keep = _dropout_args(p, seed, offset, state)
    meta = dict(MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=p > 0, FROM_STATE=st is not None, ACC=_acc(q.dtype),
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_E=be, BLOCK_EV=bev)
    st = o if st is None else st
    strides = (*q.stride(), *k.stride(), *v.stride(), *ms, *do.stride())
    if need_dq:
        launch(attn_bwd_dq_kernel, (cdiv(L, bm), B * HQ), q, k, v, m, o, lse, do, dq, seed, offset, st, threshold,
               f64_bits(scale), keep, L, S, E, EV, HQ, HQ // HK, *strides, **meta)
    if need_dkv:
        launch(attn_bwd_dkv_kernel, (cdiv(S, bn), B * HK), q, k, v, m, o, lse, do, dk, dv, seed, offset, st,
               threshold, f64_bits(scale), keep, L, S, E, EV, HQ, HK, HQ // HK, *strides, **meta)
    return dq, dk, dv
