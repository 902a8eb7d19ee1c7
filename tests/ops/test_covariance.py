"""cov and corrcoef against PyTorch in float64: values and gradients of a random upstream gradient
(the observations' and the aweights'), 1-d, 2-d, 0-d and single-observation inputs, weights,
corrections, integer inputs, the degrees-of-freedom warning and PyTorch's errors."""
import warnings

import pytest
import torch

import tgrad
from support.reference import run, same, uniform64

X = uniform64((3, 7), seed=1)
FW = torch.tensor([1, 3, 0, 2, 1, 1, 4])
AW = uniform64((7,), 0.1, 2.0, seed=2)


@pytest.mark.parametrize("name,fn,inputs", [
    ("2d", lambda L, x: L.cov(x), [X]),
    ("1d", lambda L, x: L.cov(x), [X[0]]),
    ("rows1", lambda L, x: L.cov(x), [X[:1]]),
    ("T", lambda L, x: L.cov(x), [X.t()]),
    ("correction0", lambda L, x: L.cov(x, correction=0), [X]),
    ("correction2", lambda L, x: x.cov(correction=2), [X]),
    ("fweights", lambda L, x: L.cov(x, fweights=L.tensor(FW.tolist())), [X]),
    ("aweights", lambda L, x, a: L.cov(x, aweights=a), [X, AW]),
    ("both", lambda L, x, a: L.cov(x, correction=3, fweights=L.tensor(FW.tolist()), aweights=a), [X, AW]),
    ("both_c0", lambda L, x, a: L.cov(x, correction=0, fweights=L.tensor(FW.tolist()), aweights=a), [X, AW]),
    ("corrcoef", lambda L, x: L.corrcoef(x), [X]),
    ("corrcoef_m", lambda L, x: x.corrcoef(), [X[:2]]),
    ("corrcoef_1d", lambda L, x: L.corrcoef(x), [X[0]]),
    ("corrcoef_T", lambda L, x: L.corrcoef(x), [X.t()[:4]]),
])
def test_against_pytorch(name, fn, inputs):
    run(lambda *a: fn(torch, *a), lambda *a: fn(tgrad, *a), inputs)


@pytest.mark.parametrize("x", [torch.tensor([[1, 2, 4], [0, 3, 3]]), torch.tensor([True, False, True]),
                               torch.tensor(2.5, dtype=torch.float64), torch.zeros(0, 3, dtype=torch.float64),
                               torch.zeros(2, 0, dtype=torch.float64), torch.tensor([[1.0, float("nan"), 2.0]], dtype=torch.float64)])
def test_odd_inputs(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("cov", "corrcoef"):
            try:
                ref = getattr(torch, name)(x)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    getattr(tgrad, name)(tgrad.from_torch(x))
                continue
            tol = {} if x.dtype == torch.float64 else dict(rtol=1e-6, atol=1e-6)  # float32 sums, in other orders
            same(getattr(tgrad, name)(tgrad.from_torch(x)), ref, **tol)


def test_degrees_of_freedom_warning():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        ref = torch.cov(X[:, :1])
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        got = tgrad.cov(tgrad.from_torch(X[:, :1]))
    same(got, ref)


@pytest.mark.parametrize("kw", [dict(fweights=torch.ones(7)), dict(fweights=torch.ones(6, dtype=torch.long)),
                                dict(fweights=torch.tensor([1, -1, 1, 1, 1, 1, 1])), dict(aweights=torch.ones(7, dtype=torch.long)),
                                dict(aweights=-torch.ones(7)), dict(fweights=torch.ones(1, 7, dtype=torch.long)),
                                dict(aweights=torch.ones(2, 7))])
def test_errors(kw):
    with pytest.raises(RuntimeError) as ref:
        torch.cov(X, **kw)
    with pytest.raises(RuntimeError) as got:
        tgrad.cov(tgrad.from_torch(X), **{k: tgrad.from_torch(v) for k, v in kw.items()})
    assert str(got.value) == str(ref.value)
    with pytest.raises(RuntimeError, match="two or fewer dimensions but got an input with 3"):
        tgrad.cov(tgrad.ones(2, 2, 2))


def test_float32_corrcoef_diagonal_is_exactly_one():
    """c_ii / s_i / s_i rounds an ulp below 1 for these rows (PyTorch's diagonal is 1 here), and a
    trunc() after it turned that into 0 (the program fuzzer's seed 101)."""
    rows = [[1.0, 1.75, -1.25, 0.5, -2.5], [-0.0, 2.75, 2.25, -1.0, 2.75]]
    want = torch.corrcoef(torch.tensor(rows))
    got = tgrad.corrcoef(tgrad.tensor(rows))
    assert torch.equal(got.diagonal().torch(), want.diagonal()) and bool((got.diagonal() == 1).all())
    same(got.trunc(), want.trunc())
    same(got, want, rtol=1e-6, atol=1e-6)
