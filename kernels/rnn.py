"""One time step of an RNN / LSTM / GRU layer: the gates' pointwise math and the state update in
one launch forward, one launch backward.

The layer's input projection xg = x W_ih^T + b_ih is one matmul over all time steps (the caller's).
Each step's launch computes the recurrent projection hg = h_{t-1} W_hh^T + b_hh itself: program
(rows, units) takes the G gate columns of its units, k*H + j, as G dot products over h_{t-1}, so
the step is one launch (``FUSE_MM``; an LSTM with a projection passes hg from a separate matmul
instead). Gate order is PyTorch's: LSTM (i, f, g, o), GRU (r, z, n).

    RNN   h = act(xg + hg)                        act = tanh or relu
    LSTM  i, f, o = sigmoid(.), g = tanh(.)       c = f c_{t-1} + i g,   h = o tanh(c)
    GRU   r, z = sigmoid(xg_rz + hg_rz)           n = tanh(xg_n + r hg_n),   h = (1 - z) n + z h_{t-1}

Backward, with dh = dL/dh_t (upstream output + what step t+1 sent back) and dc the cell's carry:

    RNN   dpre = dh (1 - h^2)  (tanh)  or  dh [h > 0]  (relu);       dxg = dhg = dpre
    LSTM  tc = tanh(c) (saved);  dc += dh o (1 - tc^2);  d(pre i, f, g, o) = (dc g i(1-i), dc c_{t-1} f(1-f),
          dc i (1-g^2), dh tc o(1-o));  dc_{t-1} = dc f;                  dxg = dhg
    GRU   dz = dh (h_{t-1} - n);  dn = dh (1 - z) (1 - n^2);  dr = dn hg_n r(1-r);
          dxg = (dr, dz z(1-z), dn),  dhg = (dr, dz z(1-z), dn r);  direct dh_{t-1} = dh z

and dh_{t-1} = dhg W_hh + direct: the next (earlier) step's launch forms dhg_{t} W_hh for its own
units as a dot product over the G H gate columns, and adds ``direct``, kept elementwise. Variable-length batches (packed sequences): row b is active at time t iff
t < length[b]; an inactive row carries its state unchanged (h_t = h_{t-1}, c_t = c_{t-1}), outputs
0, and in the backward passes dh and dc through untouched. fp32 math (fp64 for fp64).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .runtime.launch import launch, launch_site
from .elementwise.elementary import tanh
from .helpers.dtypes import compute_dtype
from .helpers.layout import cdiv, next_pow2
from .runtime.target import target

__all__ = ["MODES", "gate_count", "saved_gates", "step_forward", "step_backward", "add_into"]

MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}
_GATES = {0: 1, 1: 1, 2: 4, 3: 3}
# per-step activations kept for the backward: LSTM i, f, g, o, tanh(c) (its backward then computes
# no tanh, ~20 interpreted ops); GRU r, z, n, hg_n
_SAVED = {0: 0, 1: 0, 2: 5, 3: 4}


def gate_count(mode: int) -> int:
    return _GATES[mode]


def saved_gates(mode: int) -> int:
    return _SAVED[mode]


@triton.jit
def _sig(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x, COMPUTE: tl.constexpr):
    """tanh in COMPUTE. fp32: (1 - e) / (1 + e), e = exp(-2|x|), in fp64 and rounded once (13
    interpreted ops against the expm1 form's 22; where fp64 cancels, |x| < 2^-12, tanh x rounds to x)."""
    if COMPUTE == tl.float32:
        a = tl.abs(x)
        e = tl.exp(-2.0 * a.to(tl.float64))
        r = ((1.0 - e) / (1.0 + e)).to(tl.float32)
        return tl.where(a < 0.000244140625, x, tl.where(x < 0, -r, r))
    else:
        return tanh(x)


@triton.jit
def _rows_times_w(a_ptr, rb, B, K, w_ptr, wn, swn, swk, n_mask, COMPUTE: tl.constexpr, BLOCK_B: tl.constexpr,
                  BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """(A W)[rb, :] for A (B, K) contiguous and W's column wn[c], row k at w_ptr + wn[c]*swn + k*swk:
    a step's fused matmul, in fp32 (fp64 for fp64)."""
    acc = tl.zeros([BLOCK_B, BLOCK_H], COMPUTE)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rb[:, None] * K + kk[None, :], mask=(rb < B)[:, None] & (kk < K)[None, :],
                    other=0).to(COMPUTE)
        w = tl.load(w_ptr + wn[None, :] * swn + kk[:, None] * swk, mask=n_mask[None, :] & (kk < K)[:, None],
                    other=0).to(COMPUTE)
        acc = tl.dot(a, w, acc, input_precision="ieee", out_dtype=COMPUTE)
    return acc


@triton.jit
def _recurrent(hg_ptr, hp_ptr, w_ptr, bias_ptr, k, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
               FUSE_MM: tl.constexpr, HAS_BIAS: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_B: tl.constexpr,
               BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Gate k's recurrent input for (rows rb, units rh): (h_{t-1} W_hh^T + b_hh)[:, k H + rh]."""
    if FUSE_MM:
        acc = _rows_times_w(hp_ptr, rb, B, H, w_ptr, k * H + rh, sw0, sw1, rh < H, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K)
        if HAS_BIAS:
            acc += tl.load(bias_ptr + k * H + rh, mask=rh < H, other=0).to(COMPUTE)[None, :]
        return acc
    else:
        return tl.load(hg_ptr + b * GH + k * H + j, mask=mask, other=0).to(COMPUTE)


@triton.jit
def _carry(mm_ptr, dn_ptr, w_ptr, rb, rh, lin, mask, B, H, GH, sw0, sw1, FUSE_MM: tl.constexpr,
           COMPUTE: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """What step t+1 sends back to h_t: (dhg_{t+1} W_hh)[rb, rh], formed here, or read from mm."""
    if FUSE_MM:
        return _rows_times_w(dn_ptr, rb, B, GH, w_ptr, rh, sw1, sw0, rh < H, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K)
    else:
        return tl.load(mm_ptr + lin, mask=mask, other=0).to(COMPUTE)


@triton.jit
def _gate_input(xrow, k, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                FUSE_MM: tl.constexpr, HAS_BIAS: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_B: tl.constexpr,
                BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Gate k's pre-activation: its input projection (read from xrow) plus its recurrent input."""
    return tl.load(xrow + k * H, mask=mask, other=0).to(COMPUTE) + _recurrent(
        hg_ptr, hp_ptr, w_ptr, bias_ptr, k, rb, rh, b, j, mask, B, H, GH, sw0, sw1, FUSE_MM, HAS_BIAS, COMPUTE,
        BLOCK_B, BLOCK_H, BLOCK_K)


@triton.jit
def _load_gates(row, H, mask, COMPUTE: tl.constexpr):
    """The four H-wide gate slices saved in a row."""
    return (tl.load(row, mask=mask, other=0).to(COMPUTE), tl.load(row + H, mask=mask, other=0).to(COMPUTE),
            tl.load(row + 2 * H, mask=mask, other=0).to(COMPUTE),
            tl.load(row + 3 * H, mask=mask, other=0).to(COMPUTE))


@triton.jit
def _store_gates(row, H, g0, g1, g2, g3, mask):
    """Gate slices g0, g1, g2 (and g3 unless None) of a row, H wide each, in the row's dtype."""
    ety = row.dtype.element_ty
    tl.store(row, g0.to(ety), mask=mask)
    tl.store(row + H, g1.to(ety), mask=mask)
    tl.store(row + 2 * H, g2.to(ety), mask=mask)
    if g3 is not None:
        tl.store(row + 3 * H, g3.to(ety), mask=mask)


@triton.jit
def _step_tile(B, H, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    """This program's (batch, hidden) tile of a step: row and column indices (1-d, then as a column
    and a row), their mask and the element index in a contiguous (B, H) tensor."""
    rb = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    rh = tl.program_id(1).to(tl.int64) * BLOCK_H + tl.arange(0, BLOCK_H)
    b = rb[:, None]
    j = rh[None, :]
    return rb, rh, b, j, (b < B) & (j < H), b * H + j


@triton.jit
def rnn_step_fwd_kernel(xg_ptr, hg_ptr, w_ptr, bias_ptr, hp_ptr, cp_ptr, hn_ptr, cn_ptr, out_ptr, save_ptr,
                        len_ptr, t, B, H, sxb, sob, sw0, sw1, MODE: tl.constexpr, HAS_LEN: tl.constexpr,
                        FUSE_MM: tl.constexpr, HAS_BIAS: tl.constexpr, COMPUTE: tl.constexpr,
                        BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    rb, rh, b, j, mask, lin = _step_tile(B, H, BLOCK_B, BLOCK_H)
    G: tl.constexpr = 4 if MODE == 2 else (3 if MODE == 3 else 1)
    GH = G * H
    xrow = xg_ptr + b * sxb + j
    hp = tl.load(hp_ptr + lin, mask=mask, other=0).to(COMPUTE)
    if MODE == 2:
        gi = _sig(_gate_input(xrow, 0, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                              FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K))
        gf = _sig(_gate_input(xrow, 1, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                              FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K))
        gg = _tanh(_gate_input(xrow, 2, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                               FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K), COMPUTE)
        go = _sig(_gate_input(xrow, 3, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                              FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K))
        cp = tl.load(cp_ptr + lin, mask=mask, other=0).to(COMPUTE)
        c = gf * cp + gi * gg
        tc = _tanh(c, COMPUTE)
        h = go * tc
        row = save_ptr + b * (5 * H) + j
        _store_gates(row, H, gi, gf, gg, go, mask)
        tl.store(row + 4 * H, tc.to(save_ptr.dtype.element_ty), mask=mask)
    elif MODE == 3:
        r = _sig(_gate_input(xrow, 0, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                             FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K))
        z = _sig(_gate_input(xrow, 1, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1,
                             FUSE_MM, HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K))
        hgn = _recurrent(hg_ptr, hp_ptr, w_ptr, bias_ptr, 2, rb, rh, b, j, mask, B, H, GH, sw0, sw1, FUSE_MM,
                         HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K)
        n = _tanh(tl.load(xrow + 2 * H, mask=mask, other=0).to(COMPUTE) + r * hgn, COMPUTE)
        h = (1.0 - z) * n + z * hp
        _store_gates(save_ptr + b * (4 * H) + j, H, r, z, n, hgn, mask)
    else:
        pre = _gate_input(xrow, 0, hg_ptr, hp_ptr, w_ptr, bias_ptr, rb, rh, b, j, mask, B, H, GH, sw0, sw1, FUSE_MM,
                          HAS_BIAS, COMPUTE, BLOCK_B, BLOCK_H, BLOCK_K)
        if MODE == 0:
            h = _tanh(pre, COMPUTE)
        else:
            h = tl.where(pre > 0, pre, 0.0 * pre)
    out = h
    if HAS_LEN:
        active = t < tl.load(len_ptr + b, mask=b < B, other=0)
        h = tl.where(active, h, hp)
        out = tl.where(active, out, 0.0)
        if MODE == 2:
            c = tl.where(active, c, cp)
    tl.store(hn_ptr + lin, h.to(hn_ptr.dtype.element_ty), mask=mask)
    tl.store(out_ptr + b * sob + j, out.to(out_ptr.dtype.element_ty), mask=mask)
    if MODE == 2:
        tl.store(cn_ptr + lin, c.to(cn_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rnn_step_bwd_kernel(gout_ptr, mm_ptr, dn_ptr, w_ptr, direct_ptr, dc_ptr, save_ptr, hp_ptr, hn_ptr, cp_ptr,
                        cn_ptr, dxg_ptr, dhg_ptr, len_ptr, t, B, H, sgb, sdb, sw0, sw1,
                        MODE: tl.constexpr, HAS_LEN: tl.constexpr, FUSE_MM: tl.constexpr, COMPUTE: tl.constexpr,
                        BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """dh = gout_t + dhg_{t+1} W_hh + direct (FUSE_MM: formed from ``dn`` = dhg_{t+1}; else read
    from ``mm``). Writes dxg_t (row stride sdb), dhg_t (GRU only; the other modes' dhg is dxg),
    the new ``direct`` and (LSTM) the new dc carry, in place: each lane reads its own element
    before writing it."""
    rb, rh, b, j, mask, lin = _step_tile(B, H, BLOCK_B, BLOCK_H)
    G: tl.constexpr = 4 if MODE == 2 else (3 if MODE == 3 else 1)
    dh = (tl.load(gout_ptr + b * sgb + j, mask=mask, other=0).to(COMPUTE)
          + _carry(mm_ptr, dn_ptr, w_ptr, rb, rh, lin, mask, B, H, G * H, sw0, sw1, FUSE_MM, COMPUTE, BLOCK_B,
                   BLOCK_H, BLOCK_K)
          + tl.load(direct_ptr + lin, mask=mask, other=0).to(COMPUTE))
    if HAS_LEN:
        active = t < tl.load(len_ptr + b, mask=b < B, other=0)
    else:
        active = lin >= 0
    drow = dxg_ptr + b * sdb + j
    ety = dxg_ptr.dtype.element_ty
    if MODE == 2:
        row = save_ptr + b * (5 * H) + j
        gi, gf, gg, go = _load_gates(row, H, mask, COMPUTE)
        cp = tl.load(cp_ptr + lin, mask=mask, other=0).to(COMPUTE)
        tc = tl.load(row + 4 * H, mask=mask, other=0).to(COMPUTE)  # tanh(c) of an active row
        dc_in = tl.load(dc_ptr + lin, mask=mask, other=0).to(COMPUTE)
        dc = dc_in + dh * go * (1.0 - tc * tc)
        di = tl.where(active, dc * gg * gi * (1.0 - gi), 0.0)
        df = tl.where(active, dc * cp * gf * (1.0 - gf), 0.0)
        dg = tl.where(active, dc * gi * (1.0 - gg * gg), 0.0)
        do = tl.where(active, dh * tc * go * (1.0 - go), 0.0)
        _store_gates(drow, H, di, df, dg, do, mask)
        tl.store(dc_ptr + lin, tl.where(active, dc * gf, dc_in).to(dc_ptr.dtype.element_ty), mask=mask)
        direct = tl.where(active, 0.0, dh)
    elif MODE == 3:
        r, z, n, hgn = _load_gates(save_ptr + b * (4 * H) + j, H, mask, COMPUTE)
        hp = tl.load(hp_ptr + lin, mask=mask, other=0).to(COMPUTE)
        dn = tl.where(active, dh * (1.0 - z) * (1.0 - n * n), 0.0)
        dz = tl.where(active, dh * (hp - n) * z * (1.0 - z), 0.0)
        dr = dn * hgn * r * (1.0 - r)
        _store_gates(drow, H, dr, dz, dn, None, mask)
        _store_gates(dhg_ptr + b * (3 * H) + j, H, dr, dz, dn * r, None, mask)
        direct = tl.where(active, dh * z, dh)
    else:
        h = tl.load(hn_ptr + lin, mask=mask, other=0).to(COMPUTE)
        if MODE == 0:
            dpre = dh * (1.0 - h * h)
        else:
            dpre = tl.where(h > 0, dh, 0.0)
        tl.store(drow, tl.where(active, dpre, 0.0).to(ety), mask=mask)
        direct = tl.where(active, 0.0, dh)
    tl.store(direct_ptr + lin, direct.to(direct_ptr.dtype.element_ty), mask=mask)


@triton.jit
def add_into_kernel(a_ptr, b_ptr, numel, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    a = tl.load(a_ptr + lin, mask=mask, other=0)
    tl.store(a_ptr + lin, a + tl.load(b_ptr + lin, mask=mask, other=0), mask=mask)


def _block(n: int, device) -> int:
    return min(next_pow2(max(n, 1)), 1 << 16) if target(device) == "cpu" else 1024


def _tiles(B, H, K, device):
    """(BLOCK_B, BLOCK_H, BLOCK_K): interpreted, the whole (batch, hidden) state in one program
    where it fits; compiled, register-sized tiles. Blocks >= 16 for tl.dot."""
    if target(device) == "cpu":
        return max(16, next_pow2(B)), max(16, min(next_pow2(H), 256)), max(16, min(next_pow2(K), 128))
    return max(16, min(next_pow2(B), 32)), 32, 32


def _compute(dtype):
    return compute_dtype(torch.float64 if dtype == torch.float64 else torch.float32)


def step_forward(mode, t, xg_t, hg, h_prev, c_prev, h_next, c_next, out_t, save_t, lengths, w_hh=None, b_hh=None):
    """One step's gates and state update. ``xg_t`` (B, G*H) and ``out_t`` (B, H) may have any row
    stride (unit column stride); the states and ``save_t`` are contiguous. With ``w_hh`` (G*H, H)
    the launch forms hg = h_prev W_hh^T + b_hh itself (``hg`` unused); else ``hg`` (B, G*H)
    contiguous is given. ``c_*`` and ``save_t`` are unused (pass any tensor) where the mode has
    none; ``lengths`` int64 (B,) or None."""
    B, H = h_prev.shape
    if B * H == 0:
        return
    fuse = w_hh is not None
    w = w_hh if fuse else h_prev
    t = t if lengths is not None else 0  # (read only with lengths: other steps are one site)
    tensors = [xg_t, h_prev if hg is None else hg, w, h_prev if b_hh is None else b_hh, h_prev, c_prev, h_next,
               c_next, out_t, save_t, h_prev if lengths is None else lengths]
    site = ("fwd", mode, t, B, H, h_prev.dtype, xg_t.stride(0), out_t.stride(0), w.stride(), fuse, b_hh is not None,
            lengths is not None)

    def build():
        bb, bh, bk = _tiles(B, H, H, h_prev.device)
        return (cdiv(B, bb), cdiv(H, bh)), (*tensors, t, B, H, xg_t.stride(0), out_t.stride(0), w.stride(0),
                                            w.stride(1)), dict(
            MODE=mode, HAS_LEN=lengths is not None, FUSE_MM=fuse, HAS_BIAS=b_hh is not None,
            COMPUTE=_compute(h_prev.dtype), BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bk)
    launch_site(rnn_step_fwd_kernel, site, tensors, build)


def step_backward(mode, t, gout_t, mm, direct, dc, save_t, h_prev, h_next, c_prev, c_next, dxg_t, dhg_t,
                  lengths, dhg_next=None, w_hh=None):
    """The backward of ``step_forward`` (see the module docstring); ``direct`` and ``dc`` (B, H) are
    updated in place, ``dxg_t`` (any row stride) and ``dhg_t`` (GRU, contiguous) written. With
    ``w_hh`` the launch forms dhg_next W_hh itself (``dhg_next`` (B, G*H) contiguous, ``mm``
    unused); else ``mm`` (B, H) holds it."""
    B, H = h_prev.shape
    if B * H == 0:
        return
    fuse = w_hh is not None
    w = w_hh if fuse else h_prev
    t = t if lengths is not None else 0  # (read only with lengths: other steps are one site)
    tensors = [gout_t, h_prev if mm is None else mm, h_prev if dhg_next is None else dhg_next, w, direct, dc, save_t,
               h_prev, h_next, c_prev, c_next, dxg_t, dhg_t, h_prev if lengths is None else lengths]
    site = ("bwd", mode, t, B, H, h_prev.dtype, gout_t.stride(0), dxg_t.stride(0), w.shape, w.stride(), fuse,
            lengths is not None)

    def build():
        bb, bh, bk = _tiles(B, H, w.shape[0] if fuse else H, h_prev.device)
        return (cdiv(B, bb), cdiv(H, bh)), (*tensors, t, B, H, gout_t.stride(0), dxg_t.stride(0), w.stride(0),
                                            w.stride(1)), dict(
            MODE=mode, HAS_LEN=lengths is not None, FUSE_MM=fuse, COMPUTE=_compute(h_prev.dtype),
            BLOCK_B=bb, BLOCK_H=bh, BLOCK_K=bk)
    launch_site(rnn_step_bwd_kernel, site, tensors, build)


def add_into(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a += b for two contiguous tensors of one shape and dtype."""
    n = a.numel()
    if n:
        block = _block(n, a.device)
        launch(add_into_kernel, (cdiv(n, block),), a, b, n, BLOCK=block)
    return a
