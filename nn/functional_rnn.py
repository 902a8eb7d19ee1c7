"""Recurrent layers over time as one autograd Function per (layer, direction).

``rnn_layer(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse)`` runs one direction of one layer
given xg = x W_ih^T + b_ih for all steps at once (the caller's single matmul, so its backward is
the linear's: one matmul for dx, one for dW_ih and db_ih). Per step the forward launches the
recurrent matmul hg = h W_hh^T + b_hh and the fused gate kernel (``kernels/rnn.py``); the
backward through time launches the fused gate backward and dh_{t-1} = dhg W_hh per step, then
dW_hh = sum_t dhg_t^T h_{t-1} and db_hh from one matmul over all steps.

Double backward (create_graph) replays the layer with differentiable tgrad ops (``composed``,
the same math written with matmul/sigmoid/tanh) and differentiates that, as PyTorch's CPU
kernels compose. LSTM with ``proj_size`` (h = (o tanh c) W_hr^T) runs the composed form too.
"""
from __future__ import annotations

import torch

import tgrad
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import enable_grad, is_grad_enabled
from tgrad.kernels import matmul as KM
from tgrad.kernels import rnn as KR
from tgrad.ops._common import check_runnable, wrap

__all__ = ["rnn_layer", "composed"]


def _orders(T, reverse):
    """(time, index of the state before it, index of the state after it) per step, in run order;
    states are kept in a (T+1, B, H) buffer, forward h_{t} at t+1, reverse h_t at t."""
    if reverse:
        return [(t, t + 1, t) for t in range(T - 1, -1, -1)]
    return [(t, t, t + 1) for t in range(T)]


class RNNLayer(Function):
    node_name = "RNNLayerBackward0"

    @staticmethod
    def forward(ctx, xg, w_hh, b_hh, h0, c0, mode, lengths, reverse):
        check_runnable(xg, w_hh, b_hh, h0, c0)
        x = xg._data if xg._data.stride(-1) == 1 else xg._data.contiguous()
        T, B, _ = x.shape
        GH, H = w_hh.shape
        like = dict(dtype=x.dtype, device=x.device)
        hs = torch.empty((T + 1, B, H), **like)
        lstm = mode == KR.MODES["LSTM"]
        cs = torch.empty((T + 1, B, H), **like) if lstm else hs
        nsave = KR.saved_gates(mode)
        save = torch.empty((T, B, nsave * H), **like) if nsave else hs
        out = torch.empty((T, B, H), **like)
        hg = torch.empty((B, GH), **like)
        first = T if reverse else 0
        hs[first].copy_(h0._data)
        if lstm:
            cs[first].copy_(c0._data)
        wt, bias = w_hh._data.t(), None if b_hh is None else b_hh._data
        lens = None if lengths is None else lengths
        for t, p, n in _orders(T, reverse):
            KM.matmul(hs[p], wt, bias=bias, out=hg)
            KR.step_forward(mode, t, x[t], hg, hs[p], cs[p], hs[n], cs[n], out[t], save[t] if nsave else hs[n],
                            lens)
        last = 0 if reverse else T
        ctx.cfg = (mode, lengths, reverse)
        ctx.bufs = (hs, cs, save)
        ctx.save_for_backward(xg, w_hh, b_hh, h0, c0)
        return wrap(out), wrap(hs[last].clone()), wrap(cs[last].clone() if lstm else hs[last].clone())

    @staticmethod
    def backward(ctx, gout, ghn, gcn):
        xg, w_hh, b_hh, h0, c0 = ctx.saved_tensors
        mode, lengths, reverse = ctx.cfg
        need = ctx.needs_input_grad
        if is_grad_enabled():  # create_graph: differentiate the composed form of the same layer
            return _composed_grads(ctx, (gout, ghn, gcn))
        hs, cs, save = ctx.bufs
        T, B, GH = xg.shape
        H = w_hh.shape[1]
        lstm, gru = mode == KR.MODES["LSTM"], mode == KR.MODES["GRU"]
        go = gout._data if gout._data.stride(-1) == 1 else gout._data.contiguous()
        like = dict(dtype=go.dtype, device=go.device)
        dxg = torch.empty((T, B, GH), **like)
        dhg = torch.empty((T, B, GH), **like) if gru else dxg
        mm = ghn._data.contiguous().clone()
        direct = torch.zeros((B, H), **like)
        dc = gcn._data.contiguous().clone() if lstm else mm
        w = w_hh._data
        steps = _orders(T, reverse)[::-1]
        for k, (t, p, n) in enumerate(steps):
            KR.step_backward(mode, t, go[t], mm, direct, dc, save[t] if KR.saved_gates(mode) else hs[n],
                             hs[p], hs[n], cs[p], cs[n], dxg[t], dhg[t], lengths)
            if k < T - 1 or need[3]:
                KM.matmul(dhg[t], w, out=mm)
        dh0 = wrap(KR.add_into(mm, direct)) if need[3] else None
        dc0 = wrap(dc) if lstm and need[4] else None
        dw = db = None
        if need[1] or need[2]:
            before = hs[1:] if reverse else hs[:T]
            res = KM.matmul(dhg.view(T * B, GH).t(), before.reshape(T * B, H), rowsum=need[2])
            dw, db = res if need[2] else (res, None)
            dw, db = wrap(dw) if need[1] else None, wrap(db) if db is not None else None
        return wrap(dxg) if need[0] else None, dw, db, dh0, dc0, None, None, None


def _composed_grads(ctx, grads):
    xg, w_hh, b_hh, h0, c0 = ctx.saved_tensors
    mode, lengths, reverse = ctx.cfg
    inputs = [(i, t) for i, t in enumerate((xg, w_hh, b_hh, h0, c0)) if ctx.needs_input_grad[i]]
    with enable_grad():
        outs = composed(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse)
        lstm = mode == KR.MODES["LSTM"]
        pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and (lstm or o is not outs[2])]
        found = tgrad.autograd.grad([o for o, _ in pairs], [t for _, t in inputs], [g for _, g in pairs],
                                    create_graph=True, allow_unused=True)
    result = [None] * 8
    for (i, t), g in zip(inputs, found):
        result[i] = g if g is not None else tgrad.zeros_like(t)
    return tuple(result)


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
    if w_hr is not None:
        return composed(mode, xg, w_hh, b_hh, h0, c0, lengths, reverse, w_hr)
    out, h, c = RNNLayer.apply(xg, w_hh, b_hh, h0, c0 if c0 is not None else h0, mode, lengths, reverse)
    return out, h, (c if mode == KR.MODES["LSTM"] else None)
