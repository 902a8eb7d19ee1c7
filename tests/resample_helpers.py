"""Helpers shared by the convolution / resampling test files: run one op in tgrad and in torch
(float64, same numbers), compare outputs and every gradient, and second derivatives."""
from __future__ import annotations

import re

import pytest
import torch

import tgrad
from helpers import assert_close, make_pair, uniform64


def raises(exc, text):
    return pytest.raises(exc, match="^" + re.escape(text) + "$")


def leaves(shapes, dtype=tgrad.float64, seed=0, noncontig=False):
    """(tgrad leaves, torch float64 leaves) of ``shapes``; with noncontig each tgrad/torch input is a
    strided view (every other column of a wider tensor), the leaf being the wider tensor."""
    pairs = []
    for i, s in enumerate(shapes):
        if s is None:
            pairs.append((None, None))
            continue
        wide = tuple(s[:-1]) + (2 * s[-1],) if noncontig and len(s) else s
        pairs.append(make_pair(wide, dtype, seed=seed + i))
    return pairs


def view(t, noncontig):
    return t[..., ::2] if noncontig and t is not None else t


def compare(fn_t, fn_r, shapes, dtype=tgrad.float64, seed=0, noncontig=False, device="cpu", name=None, **kw):
    """fn_t(*tgrad inputs, **kw) against fn_r(*torch inputs, **kw): output, grad_fn name (``name``,
    or torch's when None), and the grads of every input for one random upstream gradient."""
    pairs = leaves(shapes, dtype, seed, noncontig)
    xs = [None if t is None else view(t.to(device), noncontig) for t, _ in pairs]
    rs = [view(r, noncontig) for _, r in pairs]
    out = fn_t(*xs, **kw)
    ref = fn_r(*rs, **kw)
    assert_close(out.cpu(), ref, msg="output")
    assert out.grad_fn.name() == (name or ref.grad_fn.name())
    g = uniform64(tuple(ref.shape), -1.5, 1.5, seed + 77).to(dtype.torch)
    out.backward(tgrad.from_torch(g.clone()).to(device))
    ref.backward(g.double())
    for i, (t, r) in enumerate(pairs):
        if t is not None:
            assert_close(t.grad.cpu(), r.grad, msg=f"grad of input {i}")
    return out, ref


def compare_second_order(fn_t, fn_r, shapes, seed=0, **kw):
    """d/dx <dL/dx, v> for L = <fn(x), g>: the first-order grads built with create_graph in both
    libraries, then differentiated again, in float64."""
    pairs = leaves(shapes, tgrad.float64, seed)
    xs = [t for t, _ in pairs if t is not None]
    rs = [r for _, r in pairs if r is not None]
    out, ref = fn_t(*[t for t, _ in pairs], **kw), fn_r(*[r for _, r in pairs], **kw)
    g = uniform64(tuple(ref.shape), -1, 1, seed + 5)
    gt = tgrad.from_torch(g.clone())
    d_t = tgrad.autograd.grad(out, xs, gt, create_graph=True)
    d_r = torch.autograd.grad(ref, rs, g, create_graph=True)
    vs = [uniform64(tuple(r.shape), -1, 1, seed + 9 + i) for i, r in enumerate(rs)]
    s_t = sum((d * tgrad.from_torch(v.clone())).sum() for d, v in zip(d_t, vs) if d.requires_grad)
    s_r = sum((d * v).sum() for d, v in zip(d_r, vs) if d.requires_grad)
    h_t = tgrad.autograd.grad(s_t, xs, allow_unused=True)
    h_r = torch.autograd.grad(s_r, rs, allow_unused=True)
    for i, (a, b) in enumerate(zip(h_t, h_r)):
        if b is None:
            assert a is None or float(a.abs().max()) == 0.0, f"second derivative {i}"
        else:
            assert_close(a, b, msg=f"second derivative {i}")
