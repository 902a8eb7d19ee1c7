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


# kernels/linalg/lu.py: LU with partial pivoting, the row order of its swaps, the solves on its factors

from support.kernel_guard import memory_checked, poisoned_allocations  # noqa: E402
from tgrad.kernels.linalg import lu as KL  # noqa: E402


@pytest.mark.parametrize("m,n", [(1, 1), (3, 3), (5, 5), (17, 17), (5, 3), (3, 5), (1, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lu_factor_odd_sizes_strides_and_bounds(m, n, dtype):
    A = torch.tensor(RNG.standard_normal((3, n, m)), dtype=dtype).mT  # a transposed (strided) view
    with memory_checked() as violations, poisoned_allocations():  # every access inside its tensor
        LU, piv, info = KL.lu_factor(A)
    assert not violations
    want = torch.linalg.lu_factor_ex(A)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(LU, want.LU, rtol=tol, atol=tol)
    assert torch.equal(piv, want.pivots) and torch.equal(info, want.info)
    assert KL.lu_factor(A[:0])[0].shape == (0, m, n)


@pytest.mark.parametrize("n,k", [(1, 1), (3, 5), (5, 2), (17, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lu_solve_both_ways(n, k, dtype):
    A = torch.tensor(RNG.standard_normal((2, n, n)), dtype=dtype)
    B = torch.tensor(RNG.standard_normal((2, k, n)), dtype=dtype).mT
    LU, piv, _ = torch.linalg.lu_factor_ex(A)
    tol = 1e-10 if dtype == torch.float64 else 1e-3
    with memory_checked() as violations, poisoned_allocations():
        perm = KL.pivots_to_perm(piv, n)
        X = KL.lu_solve(LU, perm, B)
        XT = KL.lu_solve(LU.mT.contiguous().mT, perm, B, transpose=True)
    assert not violations
    assert torch.equal(perm.long(), torch.linalg.lu(A).P.argmax(-2))
    torch.testing.assert_close(X, torch.linalg.solve(A, B), rtol=tol, atol=tol)
    torch.testing.assert_close(XT, torch.linalg.solve(A.mT, B), rtol=tol, atol=tol)
    assert KL.lu_solve(LU, perm, B[..., :0]).shape == (2, n, 0)


def test_lu_factor_singular_and_nan():
    zero_col = torch.tensor([[[1.0, 0.0, 2.0], [3.0, 0.0, 1.0], [2.0, 0.0, 5.0]],
                             [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 7.0]]], dtype=torch.float64)
    LU, piv, info = KL.lu_factor(zero_col)
    want = torch.linalg.lu_factor_ex(zero_col)
    torch.testing.assert_close(LU, want.LU)
    assert torch.equal(piv, want.pivots) and torch.equal(info, want.info) and info.tolist() == [2, 3]
    for col in (0, 1):  # a NaN column: no row wins the pivot search, the row stays (as LAPACK)
        nan = torch.eye(3, dtype=torch.float64)[None].clone()
        nan[0, :, col] = float("nan")
        for got, want in zip(KL.lu_factor(nan), torch.linalg.lu_factor_ex(nan)):
            torch.testing.assert_close(got, want, equal_nan=True)


def test_lu_functions_gradients_twice():
    from tgrad import linalg_lu as G2
    a = tgrad.tensor(RNG.standard_normal((2, 2)), dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(RNG.standard_normal((2, 2, 1)), dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda x: G2.lu_factor(x)[0], (a,))
    assert tgrad.autograd.gradgradcheck(lambda x: G2.lu_factor(x)[0], (a,))
    LU, piv, _ = G2.lu_factor(a.detach())
    perm = G2.perm_of(piv, 2)
    lu = LU.requires_grad_()
    for adjoint in (False, True):  # LU broadcast over B's batch
        assert tgrad.autograd.gradcheck(lambda x, y: G2.lu_solve(x, perm, y, adjoint), (lu, b))
    assert tgrad.autograd.gradgradcheck(lambda x, y: G2.lu_solve(x, perm, y, True), (lu, b[0]))
    assert type(G2.lu_factor(a)[0].grad_fn).__name__ == "LinalgLuFactorExBackward0"
    assert type(G2.lu_solve(lu, perm, b).grad_fn).__name__ == "LinalgLuSolveBackward0"


# kernels/linalg/jacobi.py: symmetric eigendecomposition and SVD by Jacobi sweeps

from tgrad.kernels.linalg import jacobi as KJ  # noqa: E402


@pytest.mark.parametrize("n", [1, 3, 5, 17])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eigh_odd_sizes_strides_and_bounds(n, dtype):
    a = RNG.standard_normal((2, n, n))
    A = torch.tensor(a + a.transpose(0, 2, 1), dtype=dtype)
    garbage = torch.tensor(np.tril(a) + np.triu(RNG.standard_normal((n, n)), 1), dtype=dtype)  # upper: never read
    sym = torch.tensor(np.tril(a) + np.tril(a, -1).transpose(0, 2, 1), dtype=dtype)
    with memory_checked() as violations, poisoned_allocations():
        w, V = KJ.eigh(garbage.mT.contiguous().mT)
    assert not violations
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    want = torch.linalg.eigh(sym)
    torch.testing.assert_close(w, want.eigenvalues, rtol=tol, atol=tol)
    torch.testing.assert_close(V.abs(), want.eigenvectors.abs(), rtol=tol, atol=tol)  # columns up to sign
    torch.testing.assert_close(V @ torch.diag_embed(w) @ V.mT, sym, rtol=tol, atol=tol)
    assert KJ.eigh(A[:0])[0].shape == (0, n)


@pytest.mark.parametrize("m,n", [(1, 1), (3, 3), (5, 3), (17, 4), (4, 4)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_svd_odd_sizes_strides_and_bounds(m, n, dtype):
    A = torch.tensor(RNG.standard_normal((2, n, m)), dtype=dtype).mT
    if (m, n) == (4, 4):  # rank 2: two zero singular values, their U columns zero
        A = A[..., :2] @ A[..., :2].mT
    with memory_checked() as violations, poisoned_allocations():
        U, S, V = KJ.svd(A)
    assert not violations
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    torch.testing.assert_close(S, torch.linalg.svdvals(A), rtol=tol, atol=tol)
    torch.testing.assert_close(U @ torch.diag_embed(S) @ V.mT, A, rtol=tol, atol=tol)
    torch.testing.assert_close(V.mT @ V, torch.eye(n, dtype=dtype).expand(2, n, n), rtol=tol, atol=tol)
    assert (S[:, :-1] >= S[:, 1:]).all()


def test_jacobi_nan_and_convergence():
    nan = torch.tensor([[[1.0, float("nan")], [float("nan"), 2.0]]], dtype=torch.float64)
    w, V = KJ.eigh(nan)  # stops (NaN is not above the tolerance) and reports NaN, as LAPACK's NaN in, NaN out
    assert w.isnan().any()
    diag = torch.diag_embed(torch.tensor([[3.0, -1.0, 2.0]], dtype=torch.float64))
    assert KJ.eigh(diag)[0].tolist() == [[-1.0, 2.0, 3.0]]  # already diagonal: sorted, nothing rotated
    assert KJ.svd(diag)[1].tolist() == [[3.0, 2.0, 1.0]]


# kernels/linalg/qr.py: Householder QR

from tgrad.kernels.linalg import qr as KQ  # noqa: E402


@pytest.mark.parametrize("m,n", [(1, 1), (3, 3), (5, 3), (3, 5), (17, 4), (4, 17)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_qr_odd_sizes_strides_and_bounds(m, n, dtype):
    A = torch.tensor(RNG.standard_normal((2, n, m)), dtype=dtype).mT
    with memory_checked() as violations, poisoned_allocations():
        Q, R = KQ.qr(A)
    assert not violations
    want = torch.linalg.qr(A, mode="complete")  # the same reflections: the same signs
    tol = 1e-10 if dtype == torch.float64 else 1e-4
    torch.testing.assert_close(Q, want.Q, rtol=tol, atol=tol)
    torch.testing.assert_close(R, want.R, rtol=tol, atol=tol)
    assert torch.equal(R, R.triu())
    zero_col = torch.zeros((1, 3, 2), dtype=dtype)  # nothing to reflect: the identity, as dlarfg's tau = 0
    for got, ref in zip(KQ.qr(zero_col), torch.linalg.qr(zero_col, mode="complete")):
        torch.testing.assert_close(got, ref)


def test_svd_completes_the_columns_of_zero_singular_values():
    U, S, V = KJ.svd(torch.ones((1, 4, 3), dtype=torch.float64))  # rank 1: the sweeps leave two zero columns
    assert S[0, 1:].tolist() == [0.0, 0.0]
    torch.testing.assert_close(U.mT @ U, torch.eye(3, dtype=torch.float64)[None])
    torch.testing.assert_close(U @ torch.diag_embed(S) @ V.mT, torch.ones((1, 4, 3), dtype=torch.float64))
