"""polygamma (the order first; n = 0, 1 and the Hurwitz-zeta orders) and tgrad.special against
PyTorch in float64: values, gradients of a random upstream gradient (polygamma(n + 1) for
polygamma(n)), second derivatives, integer inputs, the method and in-place forms, and PyTorch's
errors."""
import pytest
import torch

import tgrad
import tgrad.special
from support.reference import run, same, uniform64
from tgrad.autograd import gradcheck, gradgradcheck

X = torch.cat([uniform64((40,), 0.05, 12.0, seed=1), uniform64((20,), -3.9, -0.1, seed=2)])
X = X[(X - X.round()).abs() > 0.05]  # away from the poles, where the value is huge
SPECIAL = torch.tensor([0.5, 1.0, -0.5, -1.0, 0.0, -0.0, float("inf"), -float("inf"), 1e-30, 800.0, 30.0, -13.5,
                        float("nan")], dtype=torch.float64)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma(n):
    run(lambda x: torch.polygamma(n, x), lambda x: tgrad.polygamma(n, x), [X], rtol=1e-9)
    run(lambda x: x.polygamma(n), lambda x: x.polygamma(n), [X[:10]], rtol=1e-9)
    same(tgrad.polygamma(n, tgrad.from_torch(SPECIAL)), torch.polygamma(n, SPECIAL), rtol=1e-12, atol=0)
    same(tgrad.polygamma(n, tgrad.from_torch(X.float())), torch.polygamma(n, X.float()), rtol=1e-5, atol=1e-6)
    same(tgrad.polygamma(n, tgrad.tensor([1, 2, 3])), torch.polygamma(n, torch.tensor([1, 2, 3])), rtol=1e-6, atol=1e-6)
    x = tgrad.from_torch(uniform64((2, 3), 0.5, 3.0, seed=4)).requires_grad_()
    assert gradcheck(lambda t: tgrad.polygamma(n, t), (x,), fast_mode=True)
    assert gradgradcheck(lambda t: tgrad.polygamma(n, t), (x,), fast_mode=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_polygamma_far_left_sums_as_cephes(dtype):
    """Cephes' zeta (PyTorch's polygamma for n >= 2) sums floor(9 - x) + 1 terms before its tail for
    x < 0: a block runs its most negative lane's count. A bounded count (24 terms) gave NaN below -14."""
    x = torch.tensor([-1000.3, -999.75, -400.5, -129.2, -40.25, -14.5, -13.5, -3.7, -0.5, 0.5, 2.5, 30.0, -7.0,
                      float("nan"), -float("inf")], dtype=torch.float64).to(dtype)
    got, ref = run(lambda t: torch.polygamma(2, t), lambda t: tgrad.polygamma(2, t), [x],
                   rtol=1e-12 if dtype == torch.float64 else 1e-6, atol=0, exact_dtype=True)
    assert not got.torch()[:13].isnan().any()


def test_polygamma_inplace_and_errors():
    t, r = tgrad.from_torch(X.clone()), X.clone()
    assert t.polygamma_(2) is t
    same(t, r.polygamma_(2), rtol=1e-9)
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n."):
        torch.polygamma(-1, X)
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n."):
        tgrad.polygamma(-1, tgrad.from_torch(X))
    y = tgrad.polygamma(1, tgrad.from_torch(X).requires_grad_())
    assert type(y.grad_fn).__name__ == "PolygammaBackward0"


P = uniform64((4, 5), 0.1, 0.9, seed=5)
CASES = [("expit", [uniform64((4, 5), seed=6)]), ("logit", [P]), ("erf", [uniform64((4, 5), seed=7)]),
         ("erfinv", [P * 2 - 1]), ("gammaln", [X]), ("digamma", [X]), ("psi", [X]), ("i0", [uniform64((9,), -9, 9, seed=8)]),
         ("sinc", [uniform64((7,), seed=9)]), ("log1p", [P]), ("expm1", [P]), ("exp2", [P]), ("entr", [P * 3]),
         ("ndtr", [uniform64((4, 5), -4, 4, seed=10)]), ("xlogy", [P - 0.5, P * 2]), ("xlog1py", [P - 0.5, P]),
         ("round", [P * 10])]


@pytest.mark.parametrize("name,inputs", CASES, ids=[c[0] for c in CASES])
def test_special_namespace(name, inputs):
    run(getattr(torch.special, name), getattr(tgrad.special, name), inputs)


@pytest.mark.parametrize("call", [lambda L, x: L.special.softmax(x, 1), lambda L, x: L.special.log_softmax(x, 0),
                                  lambda L, x: L.special.logsumexp(x, 1), lambda L, x: L.special.polygamma(2, x.abs() + 0.5),
                                  lambda L, x: L.special.multigammaln(x.abs() + 2, 3)])
def test_special_with_arguments(call):
    run(lambda x: call(torch, x), lambda x: call(tgrad, x), [uniform64((3, 4), seed=11)])


def test_special_edges_and_integers():
    edges = torch.tensor([-1.0, 0.0, 0.5, float("inf"), float("nan")], dtype=torch.float64)
    for name in ("entr", "ndtr", "expit", "gammaln"):
        same(getattr(tgrad.special, name)(tgrad.from_torch(edges)), getattr(torch.special, name)(edges))
        same(getattr(tgrad.special, name)(tgrad.tensor([1, 2, 3])), getattr(torch.special, name)(torch.tensor([1, 2, 3])),
             rtol=1e-6, atol=1e-6)
    x, y = torch.tensor([0.0, 0.0, 1.0]), torch.tensor([float("nan"), -1.0, 1.0])
    same(tgrad.special.xlog1py(tgrad.from_torch(x), tgrad.from_torch(y)), torch.special.xlog1py(x, y))
    same(tgrad.special.multigammaln(tgrad.tensor([0.5, 1.0, -0.3]), 3), torch.special.multigammaln(torch.tensor([0.5, 1.0, -0.3]), 3),
         rtol=1e-6)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        tgrad.special.multigammaln(tgrad.ones(2), 0)
    assert tgrad.special.__all__ == sorted(tgrad.special.__all__)
    assert all(hasattr(torch.special, name) for name in tgrad.special.__all__)


@pytest.mark.parametrize("name,fns", [("lgamma", (torch.lgamma, tgrad.lgamma)), ("digamma", (torch.digamma, tgrad.digamma)),
                                      ("erfinv", (torch.erfinv, tgrad.erfinv)), ("i0", (torch.i0, tgrad.i0)),
                                      ("polygamma2", (lambda x: torch.polygamma(2, x), lambda x: tgrad.polygamma(2, x)))])
def test_second_derivatives_match_pytorch(name, fns):
    """create_graph runs each derivative through the ops it names (digamma's own derivative is
    PyTorch's trigamma formula), so the second derivative is PyTorch's, not the derivative of a
    series' truncation."""
    x = X[:12] / 13 if name == "erfinv" else X[:12]
    up = uniform64(tuple(x.shape), -1, 1, seed=21)
    xr = x.clone().requires_grad_()
    (d1,) = torch.autograd.grad(fns[0](xr), xr, up, create_graph=True)
    (d2,) = torch.autograd.grad(d1, xr, up)
    xt = tgrad.from_torch(x.clone()).requires_grad_()
    (e1,) = tgrad.autograd.grad(fns[1](xt), xt, tgrad.from_torch(up), create_graph=True)
    (e2,) = tgrad.autograd.grad(e1, xt, tgrad.from_torch(up))
    same(e2, d2, rtol=1e-10, atol=1e-10)
