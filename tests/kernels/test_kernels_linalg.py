"""kernels/linalg.py (triangular solve, Cholesky) and their differentiable Functions against
torch.linalg: odd sizes, strided inputs, garbage above the diagonal, failure reports, gradients."""
import numpy as np
import pytest
import torch

import tgrad
from tgrad.distributions import _linalg as G
from tgrad.kernels.linalg import cholesky as K

RNG = np.random.default_rng(0)


def _lower(batch, n, dtype):
    a = torch.tensor(np.tril(RNG.standard_normal((batch, n, n))) + 2 * np.eye(n), dtype=dtype)
    return a


@pytest.mark.parametrize("n,m", [(1, 1), (3, 5), (7, 2), (17, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_solve_lower_odd_sizes_and_strides(n, m, dtype):
    L = _lower(3, n, dtype)
    garbage = L + torch.triu(torch.tensor(RNG.standard_normal((n, n)), dtype=dtype), 1)  # never read
    B = torch.tensor(RNG.standard_normal((3, m, n)), dtype=dtype).mT  # a transposed (strided) view
    tol = 1e-12 if dtype == torch.float64 else 2e-4
    for transpose in (False, True):
        want = torch.linalg.solve_triangular(L.mT if transpose else L, B, upper=transpose)
        torch.testing.assert_close(K.solve_lower(garbage, B, transpose), want, rtol=tol, atol=tol)
    assert K.solve_lower(L, B[:0]).shape == (0, n, m)


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_cholesky_and_its_failures(n):
    a = torch.tensor(RNG.standard_normal((2, n, n)))
    A = a @ a.mT + n * torch.eye(n, dtype=torch.float64)
    L, info = K.cholesky(A.mT.contiguous().mT)
    torch.testing.assert_close(L, torch.linalg.cholesky(A), rtol=1e-12, atol=1e-12)
    assert info.tolist() == [0, 0]
    bad = A.clone()
    bad[1, n - 1, n - 1] = -1e3
    bad[0, 0, 0] = float("nan")
    assert K.cholesky(bad)[1].tolist() == [1, n]
    _, want = torch.linalg.cholesky_ex(bad)
    assert K.cholesky(bad)[1].tolist() == want.tolist()


def test_functions_gradients_twice():
    n = 2  # gradgradcheck costs launches per element: the smallest sizes that still mean something
    a = RNG.standard_normal((n, n))
    A = tgrad.tensor(a @ a.T + n * np.eye(n), dtype=tgrad.float64, requires_grad=True)
    L = tgrad.tensor(np.tril(RNG.standard_normal((n, n))) + 2 * np.eye(n), dtype=tgrad.float64, requires_grad=True)
    B = tgrad.tensor(RNG.standard_normal((2, n, 1)), dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda m: G.cholesky((m + m.mT) / 2), (A,))
    assert tgrad.autograd.gradgradcheck(lambda m: G.cholesky((m + m.mT) / 2), (A,))
    for t in (False, True):
        assert tgrad.autograd.gradcheck(lambda l, b: G.solve_lower(l, b, t), (L, B))  # L broadcast over B's batch
    assert tgrad.autograd.gradgradcheck(lambda l, b: G.solve_lower(l, b, True), (L, B[0]))
    assert type(G.cholesky(A).grad_fn).__name__ == "LinalgCholeskyExBackward0"


def test_errors():
    with pytest.raises(RuntimeError, match="square"):
        G.cholesky(tgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        G.solve_lower(tgrad.eye(2), tgrad.zeros(3, 1))
    with pytest.raises(torch.linalg.LinAlgError, match=r"\(Batch element 1\).*order 2 is not positive-definite"):
        G.cholesky(tgrad.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]))
