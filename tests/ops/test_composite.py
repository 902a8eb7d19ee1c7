"""The composed ops (``tgrad/ops/arithmetic.py``, ``statistics.py``, ``scans.py``, ...) and the scans
against PyTorch: values, result dtypes and every input gradient under a random upstream gradient,
float64 on the same numbers."""
import math

import pytest
import torch

import tgrad
from support.reference import assert_close, uniform64


def pair(shape, low=-2.0, high=2.0, seed=0, dtype=torch.float64):
    data = uniform64(shape, low, high, seed).to(dtype)
    return tgrad.from_torch(data.clone()).requires_grad_(), data.clone().requires_grad_()


def check(fn_t, fn_r, *shapes, seed=0, **kw):
    xs, rs = zip(*(pair(s, seed=seed + k, **kw) for k, s in enumerate(shapes)))
    y, yr = fn_t(tgrad, *xs), fn_r(torch, *rs)
    if isinstance(yr, (tuple, list)):
        y, yr = y[0], yr[0]
    assert tuple(y.shape) == tuple(yr.shape) and y.dtype.torch is yr.dtype
    assert_close(y, yr.detach())
    if yr.requires_grad and yr.numel():
        g = uniform64(tuple(yr.shape), -1, 1, 99)
        y.backward(tgrad.from_torch(g.clone()))
        yr.backward(g)
        for x, r in zip(xs, rs):
            if r.grad is None:
                assert x.grad is None
            else:
                assert_close(x.grad, r.grad)


CASES = {
    "cumsum": (lambda L, x: L.cumsum(x, 1), [(3, 5)]),
    "cumsum_0d": (lambda L, x: L.cumsum(x, 0), [()]),
    "cumsum_long_rows": (lambda L, x: x.cumsum(-1), [(2, 1300)]),
    "cumprod": (lambda L, x: L.cumprod(x, 0), [(4, 3)]),
    "repeat": (lambda L, x: x.repeat(2, 1, 3), [(3, 2)]),
    "tile": (lambda L, x: L.tile(x, (2,)), [(3, 2)]),
    "repeat_interleave": (lambda L, x: L.repeat_interleave(x, 2, dim=1), [(2, 3)]),
    "flip": (lambda L, x: L.flip(x, (0, 1)), [(3, 4)]),
    "roll": (lambda L, x: L.roll(x, (1, -2), (0, 1)), [(3, 4)]),
    "roll_flat": (lambda L, x: L.roll(x, 5), [(3, 4)]),
    "diff": (lambda L, x: L.diff(x, n=2, dim=1), [(3, 5)]),
    "diagonal": (lambda L, x: L.diagonal(x, 1), [(3, 4)]),
    "diag_1d": (lambda L, x: L.diag(x, -1), [(3,)]),
    "diag_2d": (lambda L, x: L.diag(x), [(3, 4)]),
    "trace": (lambda L, x: L.trace(x), [(4, 4)]),
    "tril": (lambda L, x: L.tril(x, -1), [(2, 3, 4)]),
    "triu": (lambda L, x: x.triu(1), [(4, 3)]),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0), [(3,), (2, 4), (4, 3)]),
    "addmv": (lambda L, c, a, b: L.addmv(c, a, b), [(2,), (2, 4), (4,)]),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "addbmm": (lambda L, c, a, b: L.addbmm(c, a, b), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    "kron": (lambda L, a, b: L.kron(a, b), [(2, 3), (3, 2)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=([1, 2], [0, 1])), [(2, 3, 4), (3, 4, 5)]),
    "einsum_matmul": (lambda L, a, b: L.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_batch": (lambda L, a, b: L.einsum("bij,bjk->bik", a, b), [(2, 2, 3), (2, 3, 4)]),
    "einsum_outer": (lambda L, a, b: L.einsum("i,j->ij", a, b), [(3,), (4,)]),
    "einsum_trace": (lambda L, a: L.einsum("ii", a), [(3, 3)]),
    "einsum_sum": (lambda L, a: L.einsum("ij->j", a), [(3, 4)]),
    "einsum_implicit": (lambda L, a, b: L.einsum("ij,jk", a, b), [(2, 3), (3, 4)]),
    "einsum_three": (lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c), [(2, 3), (3, 4), (4, 2)]),
    "einsum_ellipsis": (lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b), [(2, 2, 3), (2, 3, 4)]),
    "einsum_attention": (lambda L, q, k: L.einsum("bhqd,bhkd->bhqk", q, k), [(1, 2, 3, 4), (1, 2, 5, 4)]),
    "cdist": (lambda L, a, b: L.cdist(a, b), [(3, 4), (5, 4)]),
    "cdist_p1": (lambda L, a, b: L.cdist(a, b, p=1.0), [(3, 4), (2, 4)]),
    "meshgrid": (lambda L, a, b: L.meshgrid(a, b, indexing="ij")[1] * 1.0, [(3,), (4,)]),
    "meshgrid_xy": (lambda L, a, b: L.meshgrid(a, b, indexing="xy")[0] * 1.0, [(3,), (4,)]),
    "topk": (lambda L, x: L.topk(x, 2, dim=1).values, [(3, 5)]),
    "topk_smallest": (lambda L, x: x.topk(3, largest=False)[0], [(4, 6)]),
    "median": (lambda L, x: L.median(x), [(3, 5)]),
    "median_dim": (lambda L, x: L.median(x, 1).values, [(3, 5)]),
    "quantile": (lambda L, x: L.quantile(x, 0.3), [(3, 5)]),
    "quantile_dim": (lambda L, x: L.quantile(x, 0.75, dim=1, keepdim=True), [(3, 5)]),
    "take_along_dim": (lambda L, x: L.take_along_dim(x, L.argsort(x, 1), 1), [(3, 4)]),
    "index_add": (lambda L, x, s: x.index_add(0, L.tensor([0, 2, 0]), s), [(3, 2), (3, 2)]),
    "index_copy": (lambda L, x, s: x.index_copy(1, L.tensor([2, 0]), s), [(2, 3), (2, 2)]),
    "index_fill": (lambda L, x: x.index_fill(1, L.tensor([1]), 2.5), [(2, 3)]),
    "scatter": (lambda L, x, s: x.scatter(1, L.tensor([[2, 0], [1, 2]]), s), [(2, 3), (2, 2)]),
    "scatter_value": (lambda L, x: L.scatter(x, 0, L.tensor([[1, 0, 1]]), value=-1.0), [(2, 3)]),
    "scatter_reduce_sum": (lambda L, x, s: x.scatter_reduce(1, L.tensor([[0, 2, 0], [1, 1, 2]]), s, "sum"),
                           [(2, 3), (2, 3)]),
    "scatter_reduce_mean": (lambda L, x, s: L.scatter_reduce(x, 1, L.tensor([[0, 2, 0], [1, 1, 2]]), s, "mean",
                                                              include_self=False), [(2, 3), (2, 3)]),
    "scatter_reduce_amax": (lambda L, x, s: x.scatter_reduce(0, L.tensor([[1, 0, 1], [1, 1, 0]]), s, "amax"),
                            [(2, 3), (2, 3)]),
    "scatter_reduce_prod": (lambda L, x, s: x.scatter_reduce(0, L.tensor([[1, 0, 1], [1, 1, 0]]), s, "prod"),
                            [(2, 3), (2, 3)]),
    "masked_scatter": (lambda L, x, s: x.masked_scatter(L.tensor([[True, False, True], [False, True, False]]), s),
                       [(2, 3), (5,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_composite_against_pytorch(name):
    fn, shapes = CASES[name]
    check(fn, fn, *shapes)


def test_cumsum_integers_and_dtype():
    x = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    assert tgrad.cumsum(tgrad.from_torch(x), 1).torch().tolist() == torch.cumsum(x, 1).tolist()
    assert tgrad.cumsum(tgrad.from_torch(x), 1).dtype is tgrad.int64
    assert tgrad.cumsum(tgrad.tensor([True, True]), 0).tolist() == [1, 2]
    assert tgrad.cumsum(tgrad.ones(3), 0, dtype=tgrad.float64).dtype is tgrad.float64


def test_cumprod_gradient_with_zeros_matches_pytorch():
    data = torch.tensor([[2.0, 0.0, 3.0, 0.5], [0.0, 1.5, 0.0, 2.0]], dtype=torch.float64)
    x, xr = tgrad.from_torch(data.clone()).requires_grad_(), data.clone().requires_grad_()
    g = uniform64((2, 4), -1, 1, 5)
    tgrad.cumprod(x, 1).backward(tgrad.from_torch(g.clone()))
    torch.cumprod(xr, 1).backward(g)
    assert_close(x.grad, xr.grad)


def test_isclose_allclose_like_pytorch():
    a = torch.tensor([1.0, math.nan, math.inf, -math.inf, 1e-9, 2.0])
    b = torch.tensor([1.0 + 1e-7, math.nan, math.inf, math.inf, 0.0, 2.1])
    for equal_nan in (False, True):
        got = tgrad.isclose(tgrad.from_torch(a), tgrad.from_torch(b), equal_nan=equal_nan).torch()
        assert got.tolist() == torch.isclose(a, b, equal_nan=equal_nan).tolist()
    assert tgrad.allclose(tgrad.ones(3), tgrad.ones(3) + 1e-7) and not tgrad.allclose(tgrad.ones(2), tgrad.zeros(2))


def test_selection_ops_like_pytorch():
    x = torch.tensor([[3, 1, 3, 2], [5, 5, 4, 4]])
    t = tgrad.from_torch(x)
    assert tgrad.count_nonzero(t).item() == torch.count_nonzero(x).item()
    assert tgrad.count_nonzero(t, 1).tolist() == torch.count_nonzero(x, 1).tolist()
    assert tgrad.argwhere(t > 3).tolist() == torch.argwhere(x > 3).tolist()
    m, mr = tgrad.mode(t, 1), torch.mode(x, 1)
    assert m.values.tolist() == mr.values.tolist()
    seq = torch.tensor([1.0, 3.0, 5.0, 7.0])
    v = torch.tensor([[0.5, 3.0, 7.5], [5.0, 5.1, 1.0]])
    for right in (False, True):
        got = tgrad.searchsorted(tgrad.from_torch(seq), tgrad.from_torch(v), right=right)
        assert got.tolist() == torch.searchsorted(seq, v, right=right).tolist()
    assert tgrad.bucketize(tgrad.from_torch(v), tgrad.from_torch(seq)).tolist() == torch.bucketize(v, seq).tolist()


def test_unique_bincount_histc_like_pytorch():
    x = torch.tensor([3, 1, 3, 0, 1, 1])
    t = tgrad.from_torch(x)
    for kw in ({}, {"return_inverse": True}, {"return_counts": True}, {"return_inverse": True, "return_counts": True}):
        got, want = tgrad.unique(t, **kw), torch.unique(x, **kw)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
    w = torch.tensor([0.5, 1.0, 2.0, 0.25, 1.0, 1.0])
    assert tgrad.bincount(t).tolist() == torch.bincount(x).tolist()
    assert tgrad.bincount(t, minlength=6).tolist() == torch.bincount(x, minlength=6).tolist()
    assert tgrad.bincount(t, tgrad.from_torch(w)).tolist() == torch.bincount(x, w).tolist()
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs"):
        tgrad.bincount(tgrad.tensor([-1, 2]))
    f = torch.tensor([0.1, 0.5, 0.5, 0.9, 1.0, -0.2, 2.0])
    for kw in ({"bins": 4, "min": 0, "max": 1}, {"bins": 3}):
        assert tgrad.histc(tgrad.from_torch(f), **kw).tolist() == torch.histc(f, **kw).tolist()


def test_random_draws_follow_their_distributions():
    tgrad.manual_seed(0)
    p = tgrad.tensor([0.1, 0.0, 0.6, 0.3])
    draws = tgrad.multinomial(p, 4000, replacement=True)
    freq = tgrad.bincount(draws, minlength=4).to(tgrad.float32) / 4000
    assert (freq - p).abs().amax().item() < 0.03 and freq[1].item() == 0
    once = tgrad.multinomial(tgrad.tensor([[1.0, 2.0, 3.0, 4.0]] * 50), 4)
    assert all(sorted(r) == [0, 1, 2, 3] for r in once.tolist())
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        tgrad.multinomial(p, 5)
    b = tgrad.bernoulli(tgrad.full((4000,), 0.25))
    assert b.dtype is tgrad.float32 and abs(b.mean().item() - 0.25) < 0.03
    assert set(tgrad.bernoulli(tgrad.zeros(10), 1.0).tolist()) == {1.0}


def test_in_place_index_updates_and_scans_like_pytorch():
    base = uniform64((3, 4), -1, 1, 7)
    idx = torch.tensor([[0, 2], [1, 0], [3, 3]])
    src = uniform64((3, 2), -1, 1, 8)
    cases = [
        lambda L, x, i, s: x.scatter_(1, i, s),
        lambda L, x, i, s: x.index_add_(0, L.tensor([2, 0, 2]), x * 1.0),
        lambda L, x, i, s: x.index_copy_(1, L.tensor([3, 1]), s),
        lambda L, x, i, s: x.index_fill_(0, L.tensor([1]), -2.0),
        lambda L, x, i, s: x.masked_scatter_(x > 0, L.arange(12, dtype=x.dtype)),
        lambda L, x, i, s: x.scatter_reduce_(1, i, s, "amax"),
        lambda L, x, i, s: x.cumsum_(1),
        lambda L, x, i, s: x.cumprod_(0),
    ]
    for case in cases:
        x = tgrad.from_torch(base.clone())
        xr = base.clone()
        out = case(tgrad, x, tgrad.from_torch(idx), tgrad.from_torch(src))
        ref = case(torch, xr, idx, src)
        assert out is x
        assert_close(x, ref)
    leaf = tgrad.from_torch(base.clone()).requires_grad_()
    leaf_r = base.clone().requires_grad_()
    y, yr = leaf * 2.0, leaf_r * 2.0
    y.index_fill_(1, tgrad.tensor([0, 2]), 1.0).sum().backward()
    yr.index_fill_(1, torch.tensor([0, 2]), 1.0).sum().backward()
    assert_close(leaf.grad, leaf_r.grad)
