"""Recurrent layers over time as one autograd Function per (layer, direction).

``rnn_layer(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse)`` runs one direction of one layer
given xg = x W_ih^T + b_ih for all steps at once (the caller's single matmul, so its backward is
the linear's: one matmul for dx, one for dW_ih and db_ih). Per step the forward is one launch
(``kernels/rnn.py``: the recurrent product h W_hh^T + b_hh, the gates and the state update), and
so is the backward through time (dhg_{t+1} W_hh, the gates' derivatives, the carries); then
dW_hh = sum_t dhg_t^T h_{t-1} and db_hh come from one matmul over all steps.

The backward is a ``FusedBackward``: that fused pass, whose own derivative (double backward)
differentiates the layer replayed with differentiable tgrad ops (``composed``, the same math
written with matmul/sigmoid/tanh), as PyTorch's CPU kernels compose. LSTM with ``proj_size`` (h = (o tanh c) W_hr^T) is fused too, except on packed
input, which runs the composed form.
"""
from __future__ import annotations

import torch

import tgrad
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import composed_grads, fused_backward
from tgrad.kernels.linalg import matmul as KM
from tgrad.kernels import rnn as KR
from tgrad.ops.common import check_runnable, wrap

__all__ = ["rnn_layer", "composed"]


def _orders(T, reverse):
    """(time, index of the state before it, index of the state after it) per step, in run order;
    states are kept in a (T+1, B, H) buffer, forward h_{t} at t+1, reverse h_t at t."""
    if reverse:
        return [(t, t + 1, t) for t in range(T - 1, -1, -1)]
    return [(t, t, t + 1) for t in range(T)]


class RNNLayer(BuiltinFunction):
    """One direction of one layer over all steps. With ``w_hr`` (LSTM proj_size, no lengths) the
    state is h = (o tanh c) W_hr^T: per step one more matmul forward, and backward an add (the
    step's upstream) and the matmul dhh = dh W_hr beside the gate kernel; dW_hr from one matmul."""
    node_name = "RNNLayerBackward0"

    @staticmethod
    def forward(ctx, xg, w_hh, b_hh, h0, c0, mode, lengths, reverse, w_hr=None):
        check_runnable(xg, w_hh, b_hh, h0, c0, w_hr)
        x = xg._data if xg._data.stride(-1) == 1 else xg._data.contiguous()
        T, B, _ = x.shape
        GH, P = w_hh.shape
        H = GH // KR.gate_count(mode)
        like = dict(dtype=x.dtype, device=x.device)
        hs = torch.empty((T + 1, B, P), **like)  # the states h (projected with w_hr)
        lstm = mode == KR.MODES["LSTM"]
        cs = torch.empty((T + 1, B, H), **like) if lstm else hs
        nsave = KR.saved_gates(mode)
        save = torch.empty((T, B, nsave * H), **like) if nsave else hs
        proj = w_hr is not None
        out = torch.empty((T, B, H), **like)  # with w_hr: o tanh(c), before the projection
        scratch = torch.empty((B, H), **like) if proj else None
        hg = torch.empty((B, GH), **like) if proj else None
        first = T if reverse else 0
        hs[first].copy_(h0._data)
        if lstm:
            cs[first].copy_(c0._data)
        w, bias = w_hh._data, None if b_hh is None else b_hh._data
        for t, p, n in _orders(T, reverse):
            if proj:  # hg from its own matmul (h has P columns), then h = (o tanh c) W_hr^T
                KM.matmul(hs[p], w.t(), bias=bias, out=hg)
                KR.step_forward(mode, t, x[t], hg, scratch, cs[p], scratch, cs[n], out[t], save[t], None)
                KM.matmul(out[t], w_hr._data.t(), out=hs[n])
            else:  # one launch: the recurrent matmul inside the gate kernel
                KR.step_forward(mode, t, x[t], None, hs[p], cs[p], hs[n], cs[n], out[t], save[t] if nsave else hs[n],
                                lengths, w_hh=w, b_hh=bias)
        last = 0 if reverse else T
        ctx.cfg = (mode, lengths, reverse)
        ctx.bufs = (hs, cs, save, out if proj else None)
        ctx.save_for_backward(xg, w_hh, b_hh, h0, c0, w_hr)
        result = (hs[1:] if not reverse else hs[:T]).clone() if proj else out
        return wrap(result), wrap(hs[last].clone()), wrap(cs[last].clone() if lstm else hs[last].clone())

    @staticmethod
    def backward(ctx, gout, ghn, gcn):
        xg, w_hh, b_hh, h0, c0, w_hr = ctx.saved_tensors
        mode, lengths, reverse = ctx.cfg
        lstm = mode == KR.MODES["LSTM"]
        need = ctx.needs_input_grad
        need = (need[0], need[1], need[2], need[3], need[4] and lstm, need[8])

        def kernel(gout, ghn, gcn, xg, w_hh, b_hh, h0, c0, w_hr):
            return _fused_grads(ctx, need, gout, ghn, gcn, xg, w_hh, w_hr)

        def recorded(gout, ghn, gcn, xg, w_hh, b_hh, h0, c0, w_hr):  # the composed form of the same layer
            return composed_grads(lambda *a: composed(mode, *a[:5], lengths, reverse, a[5]),
                                  (xg, w_hh, b_hh, h0, c0, w_hr), need, (gout, ghn, gcn))

        dxg, dw, db, dh0, dc0, dwr = fused_backward(ctx, kernel, recorded, gout, ghn, gcn, xg, w_hh, b_hh, h0,
                                                    c0 if lstm else None, w_hr)
        return dxg, dw, db, dh0, dc0, None, None, None, dwr


def _fused_grads(ctx, need, gout, ghn, gcn, xg, w_hh, w_hr):
    """(dxg, dW_hh, db_hh, dh0, dc0, dW_hr) of the layer, through time, fused (see the module's doc)."""
    mode, lengths, reverse = ctx.cfg
    hs, cs, save, hh = ctx.bufs
    proj = hh is not None
    T, B, GH = xg.shape
    P = w_hh.shape[1]
    H = GH // KR.gate_count(mode)
    lstm, gru = mode == KR.MODES["LSTM"], mode == KR.MODES["GRU"]
    go = gout._data if gout._data.stride(-1) == 1 else gout._data.contiguous()
    like = dict(dtype=go.dtype, device=go.device)
    dxg = torch.empty((T, B, GH), **like)
    dhg = torch.empty((T, B, GH), **like) if gru else dxg
    mm = ghn._data.contiguous().clone()  # (B, P): dL/dh carried back from the later step
    direct = torch.zeros((B, H), **like)
    dc = gcn._data.contiguous().clone() if lstm else mm
    if proj:
        dhs = torch.empty((T, B, P), **like)  # dL/dh_t of every step, for dW_hr
        dhh = torch.empty((B, H), **like)
        zero = torch.zeros((B, H), **like)
    w = w_hh._data
    steps = _orders(T, reverse)[::-1]
    if not proj:  # the carry into the last step is ghn; the launch adds ``direct`` to dh
        direct.copy_(mm)
        none_later = torch.zeros((B, GH), **like)
    for k, (t, p, n) in enumerate(steps):
        if proj:  # dh_t = gout_t + carry, then back through the projection
            dhs[t].copy_(go[t])
            KR.add_into(dhs[t], mm)
            KM.matmul(dhs[t], w_hr._data, out=dhh)
            KR.step_backward(mode, t, dhh, zero, direct, dc, save[t], dhh, dhh, cs[p], cs[n], dxg[t], dhg[t],
                             None)
            if k < T - 1 or need[3]:
                KM.matmul(dhg[t], w, out=mm)
        else:  # one launch: dhg_{t+1} W_hh inside the gate backward
            later = none_later if k == 0 else dhg[steps[k - 1][0]]
            KR.step_backward(mode, t, go[t], None, direct, dc, save[t] if KR.saved_gates(mode) else hs[n],
                             hs[p], hs[n], cs[p], cs[n], dxg[t], dhg[t], lengths, dhg_next=later, w_hh=w)
    if not proj and need[3]:
        KM.matmul(dhg[steps[-1][0]], w, out=mm)
    dh0 = (wrap(mm) if proj else wrap(KR.add_into(mm, direct))) if need[3] else None
    dc0 = wrap(dc) if lstm and need[4] else None
    dw = db = dwr = None
    if need[1] or need[2]:
        before = hs[1:] if reverse else hs[:T]
        res = KM.matmul(dhg.view(T * B, GH).t(), before.reshape(T * B, P), rowsum=need[2])
        dw, db = res if need[2] else (res, None)
        dw, db = wrap(dw) if need[1] else None, wrap(db) if db is not None else None
    if proj and need[5]:
        dwr = wrap(KM.matmul(dhs.view(T * B, P).t(), hh.view(T * B, H)))
    return wrap(dxg) if need[0] else None, dw, db, dh0, dc0, dwr


def _active_masks(lengths, T, like):
    """(T, B, 1) 0/1 masks of the active rows, built on the host from the lengths."""
    lens = lengths.tolist()
    rows = [[[1.0 if t < n else 0.0] for n in lens] for t in range(T)]
    return tgrad.tensor(rows, dtype=like.dtype, device=like.device)


def composed(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse, w_hr=None):
    """The same layer from differentiable tgrad ops: (out (T, B, H'), h_T, c_T or None)."""
    T = xg.shape[0]
    masks = None if lengths is None else _active_masks(lengths, T, xg)
    h, c = h0, c0
    outs = [None] * T
    for t, _, _ in _orders(T, reverse):
        hg = h @ w_hh.t()
        if b_hh is not None:
            hg = hg + b_hh
        x = xg[t]
        c_new = None
        if mode == KR.MODES["LSTM"]:
            i, f, g, o = (x + hg).chunk(4, 1)
            c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h_new = o.sigmoid() * c_new.tanh()
            if w_hr is not None:
                h_new = h_new @ w_hr.t()
        elif mode == KR.MODES["GRU"]:
            xr, xz, xn = x.chunk(3, 1)
            hr, hz, hn = hg.chunk(3, 1)
            r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
            n = (xn + r * hn).tanh()
            h_new = (1 - z) * n + z * h
        else:
            pre = x + hg
            h_new = pre.tanh() if mode == KR.MODES["RNN_TANH"] else pre.relu()
        if masks is None:
            outs[t], h, c = h_new, h_new, c_new
        else:
            m = masks[t]
            outs[t] = h_new * m
            h = h_new * m + h * (1 - m)
            c = None if c_new is None else c_new * m + c * (1 - m)
    return tgrad.stack(outs, 0), h, c


def rnn_layer(mode, xg, w_hh, b_hh, h0, c0, lengths=None, reverse=False, w_hr=None):
    """One direction of one layer: (out (T, B, H), h_T, c_T) from xg (T, B, G*H). ``lengths``: an
    int64 torch tensor (B,) of the rows' lengths (packed input) or None; ``w_hr``: LSTM projection."""
    if w_hr is not None and lengths is not None:  # a finished row keeps a projected state: composed
        return composed(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse, w_hr)
    out, h, c = RNNLayer.apply(xg, w_hh, b_hh, h0, c0 if c0 is not None else h0, mode, lengths, reverse, w_hr)
    return out, h, (c if mode == KR.MODES["LSTM"] else None)
