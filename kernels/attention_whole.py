"""Scaled dot-product attention with every head's whole (L, S) problem in one program: batched
3-d tiles (batch x head, rows, keys), for the interpreter, where a program pays per op whatever
its tile size (``kernels/attention.py`` has the math and the notation).

The packed kernels of ``attention.py`` flatten the heads into one row index and mask the pairs of
different heads out, so a tile of 4 heads computes 4x the logits it keeps, and they walk the keys
block by block. Here a (B Hq, L, S) tile holds exactly the logits; the forward is one softmax
(no online rescaling: the whole row is in the tile) and the backward one launch that forms dq, dk
and dv together (P and dS are in the tile for both). Used on the CPU when the tiles fit
(``fits``) and every query head has its own key head.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .factories import as_i64
from .helpers.layout import next_pow2
from .helpers.scalars import as_f64
from .random.philox import philox_key_and_base
from .runtime.launch import launch, launch_site

__all__ = ["fits", "masked", "dense_like", "whole_forward", "whole_backward"]

_TILE = 1 << 16  # elements of the largest 3-d tile one program holds


def _blocks(NBH, L, S, E, EV):
    return next_pow2(NBH), max(16, next_pow2(L)), max(16, next_pow2(S)), max(16, next_pow2(E)), \
        max(16, next_pow2(EV))


def fits(NBH, HQ, HK, L, S, E, EV) -> bool:
    """Whether the problem (B Hq = NBH heads) runs as one program: one key head per query head
    and every tile within ``_TILE`` elements."""
    bh, bl, bs, be, bev = _blocks(NBH, L, S, E, EV)
    return HQ == HK and bh * max(bl, bs) * max(bl, bs, be, bev) <= _TILE


def dense_like(empty: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A tensor of ``empty``'s shape and dtype, dense, whose dims lie in memory in the order of
    ``like``'s strides (``empty`` itself when that order is row-major)."""
    order = sorted(range(like.dim()), key=lambda d: -like.stride(d))  # stable: ties keep their order
    if order == list(range(like.dim())):
        return empty
    inverse = [order.index(d) for d in range(like.dim())]
    return torch.empty([empty.shape[d] for d in order], dtype=empty.dtype, device=empty.device).permute(inverse)


@triton.jit
def _at3(ptr, bh, HQ, rows, n, s0, s1, s2, s3):
    """Addresses of elements (bh, rows, n) of a (B, H, rows, n) tensor of any strides (bh = b H + h)."""
    return ptr + (bh // HQ) * s0 + (bh % HQ) * s1 + rows * s2 + n * s3


@triton.jit
def _load3(ptr, bh, HQ, rows, n, s0, s1, s2, s3, mask, ACC: tl.constexpr):
    return tl.load(_at3(ptr, bh, HQ, rows, n, s0, s1, s2, s3), mask=mask, other=0).to(ACC)


@triton.jit
def _logits(q, kt, bh, i, j, NBH, L, S, HQ, mask_ptr, sm0, sm1, sm2, sm3, scale, MASK_KIND: tl.constexpr,
            CAUSAL: tl.constexpr, ACC: tl.constexpr):
    """The (heads, rows, keys) logits, -inf where masked or out of range."""
    s = tl.dot(q, kt, input_precision="ieee", out_dtype=ACC) * scale
    valid = (bh < NBH) & (i < L) & (j < S)
    if CAUSAL:
        valid = valid & (j <= i)
    return masked(s, valid, mask_ptr + (bh // HQ) * sm0 + (bh % HQ) * sm1 + i * sm2 + j * sm3, MASK_KIND, ACC)


@triton.jit
def masked(s, valid, mp, MASK_KIND: tl.constexpr, ACC: tl.constexpr):
    """The logits s, -inf where not ``valid`` or where the mask at ``mp`` (MASK_KIND 1: bool) is
    False; plus the mask's values (MASK_KIND 2: additive)."""
    if MASK_KIND == 1:
        valid = valid & (tl.load(mp, mask=valid, other=0) != 0)
    elif MASK_KIND == 2:
        s = s + tl.load(mp, mask=valid, other=0).to(ACC)
    return tl.where(valid, s, float("-inf"))


@triton.jit
def _keep(seed, offset, state, bh, i, j, L, S, threshold, keep_bits, FROM_STATE: tl.constexpr, ACC: tl.constexpr):
    """Z = keep / (1 - p) of the pairs: counter offset + (bh L + i) S + j, as attention.py draws it."""
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    x0, _, _, _ = tl.randint4x(key, base + (bh * L + i) * S + j)
    return tl.where(x0.to(tl.int64) < as_i64(threshold), as_f64(keep_bits).to(ACC), 0.0).to(ACC)


@triton.jit
def _axes(BH: tl.constexpr, BL: tl.constexpr, BS: tl.constexpr):
    """(heads, rows, keys) index tensors, shaped to broadcast to (BH, BL, BS)."""
    bh = tl.arange(0, BH).to(tl.int64)[:, None, None]
    i = tl.arange(0, BL).to(tl.int64)[None, :, None]
    j = tl.arange(0, BS).to(tl.int64)[None, None, :]
    return bh, i, j


@triton.jit
def attn_whole_fwd_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, seed, offset, state, threshold, scale_bits,
                          keep_bits, NBH, L, S, E, EV, HQ, sq0, sq1, sq2, sq3, sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3,
                          sm0, sm1, sm2, sm3, MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                          FROM_STATE: tl.constexpr, ACC: tl.constexpr, BH: tl.constexpr, BL: tl.constexpr,
                          BS: tl.constexpr, BE: tl.constexpr, BEV: tl.constexpr):
    bh, i, j = _axes(BH, BL, BS)
    e = tl.arange(0, BE)
    ev = tl.arange(0, BEV)[None, None, :]
    heads = bh < NBH
    q = _load3(q_ptr, bh, HQ, i, e[None, None, :], sq0, sq1, sq2, sq3, heads & (i < L) & (e[None, None, :] < E), ACC)
    kt = _load3(k_ptr, bh, HQ, j, e[None, :, None], sk0, sk1, sk2, sk3, heads & (j < S) & (e[None, :, None] < E), ACC)
    s = _logits(q, kt, bh, i, j, NBH, L, S, HQ, mask_ptr, sm0, sm1, sm2, sm3, as_f64(scale_bits).to(ACC), MASK_KIND,
                CAUSAL, ACC)
    m = tl.max(s, 2)
    m_safe = tl.where(m == float("-inf"), 0.0, m)
    p = tl.exp(s - m_safe[:, :, None])
    lsum = tl.sum(p, 2)
    if DROPOUT:
        p = p * _keep(seed, offset, state, bh, i, j, L, S, threshold, keep_bits, FROM_STATE, ACC)
    ks = tl.arange(0, BS).to(tl.int64)[None, :, None]
    v = _load3(v_ptr, bh, HQ, ks, ev, sv0, sv1, sv2, sv3, heads & (ks < S) & (ev < EV), ACC)
    empty = lsum == 0
    out = tl.dot(p, v, input_precision="ieee", out_dtype=ACC) / tl.where(empty, 1.0, lsum)[:, :, None]
    tl.store(o_ptr + (bh * L + i) * EV + ev, out.to(o_ptr.dtype.element_ty), mask=heads & (i < L) & (ev < EV))
    r = tl.arange(0, BH).to(tl.int64)[:, None] * L + tl.arange(0, BL)[None, :]
    rmask = (tl.arange(0, BH)[:, None] < NBH) & (tl.arange(0, BL)[None, :] < L)
    tl.store(lse_ptr + r, tl.where(empty, 0.0, m_safe + tl.log(tl.where(empty, 1.0, lsum))), mask=rmask)


@triton.jit
def attn_whole_bwd_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, do_ptr, dq_ptr, dk_ptr, dv_ptr, seed,
                          offset, state, threshold, scale_bits, keep_bits, NBH, L, S, E, EV, HQ,
                          sq0, sq1, sq2, sq3, sk0, sk1, sk2, sk3, sv0, sv1, sv2, sv3, sm0, sm1, sm2, sm3,
                          sd0, sd1, sd2, sd3, sdq0, sdq1, sdq2, sdq3, sdk0, sdk1, sdk2, sdk3, sdv0, sdv1, sdv2, sdv3,
                          MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, DROPOUT: tl.constexpr,
                          FROM_STATE: tl.constexpr, NEED_DQ: tl.constexpr, NEED_DKV: tl.constexpr,
                          ACC: tl.constexpr, BH: tl.constexpr, BL: tl.constexpr, BS: tl.constexpr,
                          BE: tl.constexpr, BEV: tl.constexpr):
    bh, i, j = _axes(BH, BL, BS)
    e = tl.arange(0, BE)
    ev = tl.arange(0, BEV)
    heads = bh < NBH
    rows = heads & (i < L)
    scale = as_f64(scale_bits).to(ACC)
    q = _load3(q_ptr, bh, HQ, i, e[None, None, :], sq0, sq1, sq2, sq3, rows & (e[None, None, :] < E), ACC)
    kt = _load3(k_ptr, bh, HQ, j, e[None, :, None], sk0, sk1, sk2, sk3, heads & (j < S) & (e[None, :, None] < E), ACC)
    s = _logits(q, kt, bh, i, j, NBH, L, S, HQ, mask_ptr, sm0, sm1, sm2, sm3, scale, MASK_KIND, CAUSAL, ACC)
    r = bh * L + i  # (BH, BL, 1)
    p = tl.exp(s - tl.load(lse_ptr + r, mask=rows, other=0))
    do = _load3(do_ptr, bh, HQ, i, ev[None, None, :], sd0, sd1, sd2, sd3, rows & (ev[None, None, :] < EV), ACC)
    o = tl.load(o_ptr + r * EV + ev[None, None, :], mask=rows & (ev[None, None, :] < EV), other=0).to(ACC)
    delta = tl.sum(do * o, 2)
    vt = _load3(v_ptr, bh, HQ, j, ev[None, :, None], sv0, sv1, sv2, sv3, heads & (j < S) & (ev[None, :, None] < EV),
                ACC)
    dp = tl.dot(do, vt, input_precision="ieee", out_dtype=ACC)
    pz = p
    if DROPOUT:
        z = _keep(seed, offset, state, bh, i, j, L, S, threshold, keep_bits, FROM_STATE, ACC)
        pz = p * z
        dp = dp * z
    ds = p * (dp - delta[:, :, None])
    if NEED_DQ:
        dq = tl.dot(ds, tl.permute(kt, (0, 2, 1)), input_precision="ieee", out_dtype=ACC) * scale
        tl.store(_at3(dq_ptr, bh, HQ, i, e[None, None, :], sdq0, sdq1, sdq2, sdq3), dq.to(dq_ptr.dtype.element_ty),
                 mask=rows & (e[None, None, :] < E))
    if NEED_DKV:
        ks = tl.arange(0, BS).to(tl.int64)[None, :, None]  # (1, BS, 1): key rows of dk and dv
        cmask = heads & (ks < S)
        dk = tl.dot(tl.permute(ds, (0, 2, 1)), q, input_precision="ieee", out_dtype=ACC) * scale
        tl.store(_at3(dk_ptr, bh, HQ, ks, e[None, None, :], sdk0, sdk1, sdk2, sdk3), dk.to(dk_ptr.dtype.element_ty),
                 mask=cmask & (e[None, None, :] < E))
        dv = tl.dot(tl.permute(pz, (0, 2, 1)), do, input_precision="ieee", out_dtype=ACC)
        tl.store(_at3(dv_ptr, bh, HQ, ks, ev[None, None, :], sdv0, sdv1, sdv2, sdv3), dv.to(dv_ptr.dtype.element_ty),
                 mask=cmask & (ev[None, None, :] < EV))


def whole_forward(q, k, v, m, ms, o, lse, dropout, scale_bits, mask_kind, causal, acc):
    """Launch the forward; ``dropout`` = (seed, offset, state, threshold, keep_bits, p > 0, from_state)."""
    B, HQ, L, E = q.shape
    S, EV = k.shape[2], v.shape[3]
    bh, bl, bs, be, bev = _blocks(B * HQ, L, S, E, EV)
    seed, offset, state, threshold, keep, drop, from_state = dropout
    _launch(attn_whole_fwd_kernel, drop, (q, k, v, m, o, lse, seed, offset, state, threshold, scale_bits, keep,
                                          B * HQ, L, S, E, EV, HQ, *q.stride(), *k.stride(), *v.stride(), *ms),
            dict(MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=drop, FROM_STATE=from_state, ACC=acc, BH=bh, BL=bl, BS=bs,
                 BE=be, BEV=bev))


def _launch(kernel, drop, args, meta):
    """The one-program launch. Without dropout (whose seed and offset change every call) through
    ``launch_site``: its site is every argument but the tensors' addresses, so a call seen before
    replays without binding arguments."""
    if drop:
        launch(kernel, (1,), *args, **meta)
        return
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    site = tuple([(a.dtype, a.shape, a.stride()) if isinstance(a, torch.Tensor) else a for a in args]) + \
        tuple(meta.values())
    launch_site(kernel, site, tensors, lambda: ((1,), args, meta))


def whole_backward(q, k, v, m, ms, o, lse, do, dq, dk, dv, dropout, scale_bits, mask_kind, causal, acc):
    """Launch the backward: dq (unless None), dk and dv (unless None), any strides, in one launch."""
    B, HQ, L, E = q.shape
    S, EV = k.shape[2], v.shape[3]
    bh, bl, bs, be, bev = _blocks(B * HQ, L, S, E, EV)
    seed, offset, state, threshold, keep, drop, from_state = dropout
    _launch(attn_whole_bwd_kernel, drop, (
        q, k, v, m, o, lse, do, q if dq is None else dq, q if dk is None else dk, q if dv is None else dv, seed, offset,
        state, threshold, scale_bits, keep, B * HQ, L, S, E, EV, HQ, *q.stride(), *k.stride(), *v.stride(), *ms,
        *do.stride(), *(q if dq is None else dq).stride(), *(k if dk is None else dk).stride(),
        *(v if dv is None else dv).stride()), dict(
        MASK_KIND=mask_kind, CAUSAL=causal, DROPOUT=drop, FROM_STATE=from_state, NEED_DQ=dq is not None,
        NEED_DKV=dk is not None, ACC=acc, BH=bh, BL=bl, BS=bs, BE=be, BEV=bev))
