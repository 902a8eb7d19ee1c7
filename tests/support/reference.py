"""tgrad tensors paired with float64 torch references on the same numbers, and the comparisons.

Data is drawn in float64, cast to the test dtype, and the torch reference is built from the *cast*
values in float64, so a comparison measures tgrad's arithmetic and not the rounding of its inputs.
Also: the devices the op tests run on, exact-message ``raises``, random upstream gradients, and
``compare`` / ``compare_backward`` / ``compare_double_backward`` / ``compare_second_order`` (one op in
both libraries: output, grads, second derivatives).
"""
from __future__ import annotations

import re
import zlib

import pytest
import torch

import tgrad

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# (rtol, atol) per dtype of the tensor under test; float16 results are stored in half precision
TOL = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (2e-5, 2e-6),
    torch.float16: (4e-3, 2e-3),
    torch.bfloat16: (2e-2, 1e-2),
}


def _torch_dtype(dtype) -> torch.dtype:
    if dtype is None:
        return torch.float32
    return dtype if isinstance(dtype, torch.dtype) else dtype.torch


def to_torch(t) -> torch.Tensor:
    """A float64 torch copy of tgrad tensor ``t`` (or of a torch tensor), detached, on the CPU
    (where the float64 references are)."""
    data = t.torch() if isinstance(t, tgrad.Tensor) else t
    return data.detach().to(device="cpu", dtype=torch.float64).clone()


def uniform64(shape, low=-2.0, high=2.0, seed=0) -> torch.Tensor:
    """Uniform float64 numbers in [low, high), reproducible from (shape, low, high, seed)."""
    key = zlib.crc32(repr((tuple(shape), float(low), float(high), seed)).encode())
    g = torch.Generator().manual_seed(key)
    return torch.rand(tuple(shape), generator=g, dtype=torch.float64) * (high - low) + low


def make_pair(shape, dtype=tgrad.float32, low=-2.0, high=2.0, requires_grad=True, seed=0):
    """(tgrad leaf of ``dtype``, torch float64 leaf) holding the same numbers, uniform in [low, high)."""
    cast = uniform64(shape, low, high, seed).to(_torch_dtype(dtype))
    x = tgrad.from_torch(cast.clone())
    if requires_grad:
        x.requires_grad_()
    ref = cast.to(torch.float64).requires_grad_(requires_grad)
    return x, ref


def assert_close(got, expected: torch.Tensor, dtype=None, rtol=None, atol=None, msg=""):
    """``got`` (tgrad or torch) matches the float64 reference ``expected`` within the tolerance of
    ``dtype`` (default: got's dtype); shapes must match exactly. NaN matches NaN, inf matches inf."""
    assert got is not None, f"got None {msg}"
    g = to_torch(got)
    e = expected.detach().to(torch.float64)
    assert tuple(g.shape) == tuple(e.shape), f"shape {tuple(g.shape)} != {tuple(e.shape)} {msg}"
    if dtype is None:
        dtype = got.torch().dtype if isinstance(got, tgrad.Tensor) else got.dtype
    r, a = TOL[_torch_dtype(dtype)]
    torch.testing.assert_close(g, e, rtol=rtol if rtol is not None else r, atol=atol if atol is not None else a,
                               equal_nan=True, msg=lambda m: f"{m} {msg}")


def node_signature(t):
    """``t.grad_fn``'s type name and its edges as (type name or None, output_nr), comparable between
    tgrad and torch: ('AddBackward0', (('AccumulateGrad', 0), (None, 0)))."""
    fn = t.grad_fn
    return type(fn).__name__, tuple((type(n).__name__ if n is not None else None, nr) for n, nr in fn.next_functions)


def check_vs_torch(y, yr, inputs, refs, dtype=None, seed=99, edges=True):
    """Output ``y`` of tgrad against ``yr`` of torch (float64, same numbers): values, grad_fn and its
    edges (only the name when ``edges`` is False), then backward with one random upstream gradient
    and every input's gradient (values, shape, and the input's own dtype). Inputs whose reference
    is not a torch tensor that requires grad are skipped."""
    assert_close(y, yr, dtype)
    assert y.requires_grad
    assert node_signature(y) == node_signature(yr) if edges else node_signature(y)[0] == node_signature(yr)[0]
    g, gr = make_pair(y.shape, y.dtype, -1.0, 1.0, requires_grad=False, seed=seed)
    y.backward(g)
    yr.backward(gr)
    for x, r in zip(inputs, refs):
        if isinstance(r, torch.Tensor) and r.requires_grad:
            assert x.grad is not None and x.grad.dtype is x.dtype
            assert_close(x.grad, r.grad, x.dtype)


def raises(exc, text):
    """pytest.raises matching ``text`` literally against the whole message."""
    return pytest.raises(exc, match="^" + re.escape(text) + "$")


def upstream(shape, dtype, seed=11):
    """A random upstream gradient (never all ones): (tgrad tensor, its float64 torch copy)."""
    g = uniform64(tuple(shape), -1.5, 1.5, seed).to(dtype.torch)
    return tgrad.from_torch(g.clone()), g.double()



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


def compare_backward(out, ref, pairs, dtype=None, seed=11, atol=None):
    """tgrad's ``out`` against torch's float64 ``ref`` (and, given ``dtype``, out's dtype), then one
    random upstream gradient through both and the gradients of every (tgrad leaf, torch leaf) in
    ``pairs``, each in its leaf's dtype."""
    assert_close(out.cpu(), ref, dtype, atol=atol, msg="output")
    if dtype is not None:
        assert out.dtype is dtype
    g, gr = upstream(tuple(ref.shape), dtype or out.dtype, seed)
    out.backward(g.to(out.device))
    ref.backward(gr)
    for i, (t, r) in enumerate(pairs):
        assert t.grad is not None and t.grad.dtype is t.dtype, f"grad of argument {i}"
        assert_close(t.grad, r.grad, t.dtype, atol=atol, msg=f"grad of argument {i}")


def compare_double_backward(fn_t, fn_r, pairs, seed=5, rtol=None, atol=None):
    """First and second derivatives of fn at the (tgrad leaf, torch leaf) ``pairs`` (a (None, None)
    pair is passed to fn as None): the gradients of <fn, g> built with create_graph in both
    libraries and compared, then differentiated again along random directions v (d/dx <dL/dx, v>)."""
    xs = [t for t, _ in pairs if t is not None]
    rs = [r for _, r in pairs if r is not None]
    out, ref = fn_t(*[t for t, _ in pairs]), fn_r(*[r for _, r in pairs])
    g = uniform64(tuple(ref.shape), -1, 1, seed)
    d_t = tgrad.autograd.grad(out, xs, tgrad.from_torch(g.clone()), create_graph=True)
    d_r = torch.autograd.grad(ref, rs, g, create_graph=True)
    for i, (a, b) in enumerate(zip(d_t, d_r)):
        assert_close(a, b, rtol=rtol, atol=atol, msg=f"derivative {i}")
    compare_derivatives_of(d_t, d_r, xs, rs, seed - 5, rtol=rtol, atol=atol)


def compare_derivatives_of(d_t, d_r, xs, rs, seed=0, **tol):
    """d/dx <d, v> for first derivatives ``d`` (made with create_graph) of inputs ``xs`` (tgrad) and
    ``rs`` (torch), a random v per input, compared; None in torch is None or zeros in tgrad."""
    vs = [uniform64(tuple(r.shape), -1, 1, seed + 9 + i) for i, r in enumerate(rs)]
    s_t = sum((d * tgrad.from_torch(v.clone())).sum() for d, v in zip(d_t, vs) if d.requires_grad)
    s_r = sum((d * v).sum() for d, v in zip(d_r, vs) if d.requires_grad)
    h_t = tgrad.autograd.grad(s_t, xs, allow_unused=True)
    h_r = torch.autograd.grad(s_r, rs, allow_unused=True)
    for i, (a, b) in enumerate(zip(h_t, h_r)):
        if b is None:
            assert a is None or float(a.abs().max()) == 0.0, f"second derivative {i}"
        else:
            assert_close(a, b, msg=f"second derivative {i}", **tol)


def compare_second_order(fn_t, fn_r, shapes, seed=0, **kw):
    """``compare_double_backward`` of fn(*inputs, **kw) on float64 leaves of ``shapes``."""
    compare_double_backward(lambda *a: fn_t(*a, **kw), lambda *a: fn_r(*a, **kw), leaves(shapes, tgrad.float64, seed),
                            seed=seed + 5)


def run(fn_t, fn_g, inputs, grads=None, rtol=1e-10, atol=1e-12, exact_dtype=True):
    """Call both on the same float64 numbers; compare value, dtype and (for the floating tensors or
    the ``grads`` indices) the gradients of a random upstream gradient."""
    if grads is None:
        grads = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
    tin = [x.clone().requires_grad_(i in grads) if isinstance(x, torch.Tensor) else x for i, x in enumerate(inputs)]
    gin = [tgrad.from_torch(x.clone()).requires_grad_(i in grads) if isinstance(x, torch.Tensor) else x
           for i, x in enumerate(inputs)]
    ref, got = fn_t(*tin), fn_g(*gin)
    same(got, ref, rtol, atol, exact_dtype)
    if grads and ref.requires_grad:
        up = uniform64(tuple(ref.shape), -1, 1, 123).to(ref.dtype)
        ref.backward(up)
        got.backward(tgrad.from_torch(up.clone()))
        for i in grads:
            if tin[i].grad is None or (gin[i].grad is None and not tin[i].grad.any()):
                # (a zero gradient PyTorch materialises, e.g. beta=0 of addr, is None in tgrad)
                assert gin[i].grad is None or not gin[i].grad.torch().any()
            else:
                same(gin[i].grad, tin[i].grad, rtol, atol)
    return got, ref


def same(got, ref, rtol=1e-10, atol=1e-12, exact_dtype=True):
    assert isinstance(got, tgrad.Tensor), type(got)
    assert tuple(got.shape) == tuple(ref.shape), (tuple(got.shape), tuple(ref.shape))
    if exact_dtype:
        assert got.torch().dtype == ref.dtype, (got.dtype, ref.dtype)
    torch.testing.assert_close(got.torch(), ref.detach(), rtol=rtol, atol=atol, equal_nan=True,
                               check_dtype=exact_dtype)
