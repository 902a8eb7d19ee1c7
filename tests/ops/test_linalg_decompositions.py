"""tgrad.linalg's decompositions against torch.linalg in float64: LU with partial pivoting (lu_factor,
lu, lu_solve, solve, inv, det, slogdet, logdet), eigh, svd and what is built on them (pinv,
matrix_rank, lstsq, the singular-value norms), QR; values, first and second derivatives, odd sizes,
batches, singular inputs and errors as PyTorch's."""
import re

import pytest
import torch

import tgrad
import tgrad.linalg as LA
from support.reference import compare_second_order, raises, run, same, uniform64


# LU with partial pivoting and what is built on it: values and the gradients of a random upstream
# gradient against torch.linalg in float64, odd sizes, batches, broadcasting, singular inputs.
LU_SIZES = [(1,), (3,), (2, 5), (2, 1, 17)]


def _general(shape, seed):
    """Random (not diagonally dominant) matrices: the factorisation has rows to swap."""
    n = shape[-1]
    return uniform64(tuple(shape[:-1]) + (n, n), -1, 1, seed)


def _pivot_is_used():
    piv = LA.lu_factor(tgrad.from_torch(_general((2, 5), 1))).pivots
    assert (piv.torch() != torch.arange(1, 6, dtype=torch.int32)).any()


LU_CASES = [
    ("lu_factor", lambda m, a: m.linalg.lu_factor(a).LU),
    ("lu_factor_ex", lambda m, a: m.linalg.lu_factor_ex(a)[0]),
    ("lu_L", lambda m, a: m.linalg.lu(a).L), ("lu_U", lambda m, a: m.linalg.lu(a).U),
    ("lu_PLU", lambda m, a: m.linalg.lu(a).P @ m.linalg.lu(a).L * 0.5 + m.linalg.lu(a).U),
    ("inv", lambda m, a: m.linalg.inv(a)), ("inverse", lambda m, a: m.inverse(a)),
    ("Tensor.inverse", lambda m, a: a.inverse()), ("inv_ex", lambda m, a: m.linalg.inv_ex(a).inverse),
    ("det", lambda m, a: m.linalg.det(a)), ("torch.det", lambda m, a: m.det(a)), ("Tensor.det", lambda m, a: a.det()),
    ("slogdet", lambda m, a: m.linalg.slogdet(a).logabsdet), ("slogdet_sign", lambda m, a: m.linalg.slogdet(a)[0]),
    ("torch.slogdet", lambda m, a: m.slogdet(a).logabsdet), ("Tensor.slogdet", lambda m, a: a.slogdet()[1]),
    ("logdet", lambda m, a: m.logdet(a @ a.mT)), ("logdet_negative", lambda m, a: m.logdet(a)),
    ("Tensor.logdet", lambda m, a: (a @ a.mT).logdet()),
]


@pytest.mark.parametrize("shape", LU_SIZES, ids=str)
@pytest.mark.parametrize("name,fn", LU_CASES, ids=[c[0] for c in LU_CASES])
def test_lu_family_vs_torch(name, fn, shape):
    run(lambda a: fn(torch, a), lambda a: fn(tgrad, a), [_general(shape, 7)], rtol=1e-8, atol=1e-10)


def test_lu_pivots_and_permutation():
    _pivot_is_used()
    a = _general((3, 17), 2)
    got, ref = LA.lu_factor_ex(tgrad.from_torch(a)), torch.linalg.lu_factor_ex(a)
    assert torch.equal(got.pivots.torch(), ref.pivots) and torch.equal(got.info.torch(), ref.info)
    same(LA.lu(tgrad.from_torch(a)).P, torch.linalg.lu(a).P)
    assert LA.lu_factor(tgrad.from_torch(a)).pivots.dtype is tgrad.int32


@pytest.mark.parametrize("m,n", [(5, 3), (3, 5)])
def test_lu_rectangular(m, n):
    a = uniform64((2, m, n), -1, 1, 4)
    for fn in [lambda t, x: t.linalg.lu_factor(x).LU, lambda t, x: t.linalg.lu(x).L, lambda t, x: t.linalg.lu(x).U,
               lambda t, x: t.linalg.lu(x).P]:
        run(lambda x: fn(torch, x), lambda x: fn(tgrad, x), [a], rtol=1e-9, atol=1e-11)
    compare_second_order(lambda x: LA.lu_factor(x).LU, lambda x: torch.linalg.lu_factor(x).LU, [(m, n)], seed=7)


SOLVE_CASES = [  # (name, A shape, B shape, kwargs)
    ("matrix", (3, 3), (3, 2), {}), ("vector", (5, 5), (5,), {}), ("batched", (2, 5, 5), (2, 5, 3), {}),
    ("broadcast_A", (5, 5), (3, 5, 2), {}), ("broadcast_B", (2, 3, 3), (3, 4), {}),
    ("batched_vector", (2, 3, 3), (2, 3), {}), ("n1", (1, 1), (1, 3), {}), ("n17", (17, 17), (17, 2), {}),
    ("right", (2, 5, 5), (2, 3, 5), {"left": False}),
]


@pytest.mark.parametrize("name,sa,sb,kw", SOLVE_CASES, ids=[c[0] for c in SOLVE_CASES])
def test_solve_vs_torch(name, sa, sb, kw):
    a, b = uniform64(sa, -1, 1, 8), uniform64(sb, -1, 1, 9)
    run(lambda x, y: torch.linalg.solve(x, y, **kw), lambda x, y: LA.solve(x, y, **kw), [a, b], rtol=1e-8, atol=1e-10)
    run(lambda x, y: torch.linalg.solve_ex(x, y, **kw).result, lambda x, y: LA.solve_ex(x, y, **kw).result, [a, b],
        rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve_vs_torch(left, adjoint):
    a, b = _general((2, 5), 10), uniform64((2, 5, 3) if left else (2, 3, 5), -1, 1, 11)
    piv = torch.linalg.lu_factor(a).pivots

    def fn(m):
        return lambda x, y: m.linalg.lu_solve(m.linalg.lu_factor(x).LU, piv if m is torch else tgrad.from_torch(piv),
                                              y, left=left, adjoint=adjoint)
    run(fn(torch), fn(tgrad), [a, b], rtol=1e-8, atol=1e-10)
    # the packed factors themselves as the differentiated input (PyTorch's LinalgLuSolveBackward0)
    lu = torch.linalg.lu_factor(a).LU
    run(lambda x, y: torch.linalg.lu_solve(x, piv, y, left=left, adjoint=adjoint),
        lambda x, y: LA.lu_solve(x, tgrad.from_torch(piv), y, left=left, adjoint=adjoint), [lu, b],
        rtol=1e-8, atol=1e-10)


def test_lu_family_second_derivatives():
    cases = [
        (lambda a, b: LA.solve(a, b), lambda a, b: torch.linalg.solve(a, b), [(3, 3), (3, 2)]),
        (lambda a, b: LA.solve(a, b, left=False), lambda a, b: torch.linalg.solve(a, b, left=False), [(3, 3), (2, 3)]),
        (lambda a: LA.inv(a), lambda a: torch.linalg.inv(a), [(2, 3, 3)]),
        (lambda a: LA.det(a), lambda a: torch.linalg.det(a), [(3, 3)]),
        (lambda a: LA.slogdet(a)[1], lambda a: torch.linalg.slogdet(a)[1], [(3, 3)]),
        (lambda a: LA.lu(a).U, lambda a: torch.linalg.lu(a).U, [(3, 3)]),
        (lambda a: LA.lu_factor(a).LU, lambda a: torch.linalg.lu_factor(a).LU, [(3, 3)]),
    ]
    for fn_t, fn_r, shapes in cases:
        compare_second_order(fn_t, fn_r, shapes, seed=3)


def test_lu_family_gradcheck():
    a = tgrad.from_torch(_general((2,), 12)).requires_grad_()
    b = tgrad.from_torch(uniform64((2, 1), -1, 1, 13)).requires_grad_()
    piv = LA.lu_factor(a.detach()).pivots
    lu = LA.lu_factor(a.detach()).LU.requires_grad_()
    assert tgrad.autograd.gradcheck(lambda x, y: LA.solve(x, y), (a, b))
    assert tgrad.autograd.gradgradcheck(lambda x, y: LA.solve(x, y), (a, b))
    assert tgrad.autograd.gradgradcheck(lambda x: LA.lu(x).L, (a,))
    assert tgrad.autograd.gradgradcheck(lambda x, y: LA.lu_solve(x, piv, y, adjoint=True), (lu, b))


def test_singular_inputs_as_torch():
    s = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64)
    sb = torch.stack([torch.eye(2, dtype=torch.float64), s])
    for m in (s, sb):
        x = tgrad.from_torch(m)
        for fn in [lambda t, a: t.linalg.solve(a, a), lambda t, a: t.linalg.inv(a), lambda t, a: t.inverse(a),
                   lambda t, a: t.linalg.lu_factor(a), lambda t, a: t.linalg.lu_factor_ex(a, check_errors=True),
                   lambda t, a: t.linalg.inv_ex(a, check_errors=True),
                   lambda t, a: t.linalg.solve_ex(a, a, check_errors=True)]:
            with pytest.raises(RuntimeError) as ref:
                fn(torch, m)
            with raises(type(ref.value), str(ref.value)):
                fn(tgrad, x)
        same(LA.det(x), torch.linalg.det(m))
        same(LA.logdet(x), torch.logdet(m))
        for got, want in zip(LA.slogdet(x), torch.linalg.slogdet(m)):
            same(got, want)
        for got, want in zip(LA.lu_factor_ex(x), torch.linalg.lu_factor_ex(m)):
            same(got, want)
        for got, want in zip(LA.inv_ex(x), torch.linalg.inv_ex(m)):  # inf/nan where PyTorch has them
            assert torch.equal(got.torch().isfinite(), want.isfinite()) or got.torch().dtype == torch.int32
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError):
        LA.solve(tgrad.from_torch(s), tgrad.from_torch(s))


def test_lu_family_errors():
    i = tgrad.tensor([[1, 2], [3, 4]])
    for fn in [lambda t: t.linalg.inv(t.ones(2, 3, dtype=t.float64)), lambda t: t.linalg.det(t.ones(3)),
               lambda t: t.linalg.slogdet(t.ones(2, 3)), lambda t: t.linalg.lu(t.ones(3)),
               lambda t: t.linalg.lu_factor(t.ones(3, 3), pivot=False),
               lambda t: t.linalg.solve(t.ones(3, 3), t.ones(2, 3)),
               lambda t: t.linalg.solve(t.ones(3, 3), t.ones(3, 2), left=False),
               lambda t: t.linalg.solve(t.ones(3, 3), t.ones(3), left=False),
               lambda t: t.linalg.solve(t.ones(3, 3), t.ones(3, 2, dtype=t.float64)),
               lambda t: t.linalg.lu_solve(t.ones(3, 2), t.ones(2, dtype=t.int32), t.ones(3, 2)),
               lambda t: t.linalg.lu_solve(t.eye(3), t.ones(3, dtype=t.int32), t.ones(2, 2)),
               lambda t: t.linalg.inv(i if t is tgrad else i.torch())]:
        with pytest.raises(RuntimeError) as ref:
            fn(torch)
        with pytest.raises(type(ref.value)):
            fn(tgrad)


def test_matrix_power_negative():
    a = _general((2, 3), 14)
    run(lambda x: torch.linalg.matrix_power(x, -3), lambda x: LA.matrix_power(x, -3), [a], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)], ids=str)
def test_lu_family_empty(shape):
    a = torch.zeros(shape, dtype=torch.float64)
    x = tgrad.from_torch(a)
    for name in ["det", "inv", "slogdet", "lu_factor", "lu"]:
        got, want = getattr(LA, name)(x), getattr(torch.linalg, name)(a)
        for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            same(g, w)
    b = torch.zeros(shape[:-1] + (2,), dtype=torch.float64)
    same(LA.solve(x, tgrad.from_torch(b)), torch.linalg.solve(a, b))


# eigh / svd on the Jacobi kernels and what is built on them. Eigen- and singular vectors are
# defined up to sign, so what is compared of them is sign-free (squares, V diag V^T, U Vh).
def _sym(shape, seed):
    a = _general(shape, seed)
    return a + a.mT


SPECTRAL_CASES = [
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a)), ("eigh_values", lambda m, a: m.linalg.eigh(a).eigenvalues),
    ("eigh_vectors_sq", lambda m, a: m.linalg.eigh(a).eigenvectors ** 2),
    ("eigh_VDVt", lambda m, a: (lambda w, v: (v * w.exp().unsqueeze(-2)) @ v.mT)(*m.linalg.eigh(a))),
    ("eigh_upper", lambda m, a: m.linalg.eigh(a, UPLO="U").eigenvectors ** 2
     + m.linalg.eigvalsh(a, UPLO="U")[..., None, :]),
    ("eigh_lower_only", lambda m, a: m.linalg.eigh(a.tril()).eigenvectors ** 2),
]


@pytest.mark.parametrize("shape", [(1,), (3,), (2, 5)], ids=str)
@pytest.mark.parametrize("name,fn", SPECTRAL_CASES, ids=[c[0] for c in SPECTRAL_CASES])
def test_eigh_vs_torch(name, fn, shape):
    run(lambda a: fn(torch, a), lambda a: fn(tgrad, a), [_sym(shape, 15)], rtol=1e-8, atol=1e-10)


SVD_CASES = [
    ("svdvals", lambda m, a: m.linalg.svdvals(a)), ("svd_S", lambda m, a: m.linalg.svd(a, full_matrices=False).S),
    ("svd_UVh", lambda m, a: (lambda u, s, vh: u @ vh)(*m.linalg.svd(a, full_matrices=False))),
    ("svd_U_sq", lambda m, a: m.linalg.svd(a, full_matrices=False).U ** 2),
    ("svd_Vh_sq", lambda m, a: m.linalg.svd(a, full_matrices=False).Vh ** 2),
    ("pinv", lambda m, a: m.linalg.pinv(a)), ("nuc", lambda m, a: m.linalg.matrix_norm(a, "nuc")),
    ("norm2", lambda m, a: m.linalg.matrix_norm(a, 2)), ("norm_m2", lambda m, a: m.linalg.matrix_norm(a, -2)),
    ("norm_nuc_dims", lambda m, a: m.linalg.norm(a, "nuc", dim=(0, -1), keepdim=True)),
]


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 3), (2, 3, 5)], ids=str)
@pytest.mark.parametrize("name,fn", SVD_CASES, ids=[c[0] for c in SVD_CASES])
def test_svd_family_vs_torch(name, fn, shape):
    run(lambda a: fn(torch, a), lambda a: fn(tgrad, a), [uniform64(shape, -1, 1, 16)], rtol=1e-8, atol=1e-10)


def test_spectral_n17_values():
    a, s = uniform64((17, 17), -1, 1, 17), _sym((17,), 18)
    same(LA.svdvals(tgrad.from_torch(a)), torch.linalg.svdvals(a), rtol=1e-9, atol=1e-11)
    same(LA.eigvalsh(tgrad.from_torch(s)), torch.linalg.eigvalsh(s), rtol=1e-9, atol=1e-11)
    w, v = LA.eigh(tgrad.from_torch(s))
    same(v.abs(), torch.linalg.eigh(s).eigenvectors.abs(), rtol=1e-8, atol=1e-10)


def test_rank_pinv_lstsq_vs_torch():
    low = uniform64((2, 5, 2), -1, 1, 19) @ uniform64((2, 2, 4), -1, 1, 20)  # rank 2
    x = tgrad.from_torch(low)
    same(LA.matrix_rank(x), torch.linalg.matrix_rank(low))
    same(LA.matrix_rank(x, atol=1.0, rtol=0.0), torch.linalg.matrix_rank(low, atol=1.0, rtol=0.0))
    same(LA.matrix_rank(x @ x.mT, hermitian=True), torch.linalg.matrix_rank(low @ low.mT, hermitian=True))
    same(LA.pinv(x), torch.linalg.pinv(low), rtol=1e-8, atol=1e-10)
    sym = _sym((4,), 21)
    run(lambda a: torch.linalg.pinv(a, hermitian=True), lambda a: LA.pinv(a, hermitian=True), [sym], rtol=1e-8,
        atol=1e-10)
    for a, b in [(uniform64((2, 5, 3), -1, 1, 22), uniform64((2, 5, 2), -1, 1, 23)),
                 (uniform64((3, 5), -1, 1, 24), uniform64((3, 2), -1, 1, 25))]:
        got, want = LA.lstsq(tgrad.from_torch(a), tgrad.from_torch(b)), torch.linalg.lstsq(a, b)
        same(got.solution, want.solution, rtol=1e-8, atol=1e-10)
        same(got.rank, want.rank)
        assert got.residuals.shape == want.residuals.shape and got.singular_values.shape == want.singular_values.shape
        run(lambda p, q: torch.linalg.lstsq(p, q).solution, lambda p, q: LA.lstsq(p, q).solution, [a, b],
            rtol=1e-8, atol=1e-10)


def test_spectral_second_derivatives():
    cases = [
        (lambda a: LA.eigvalsh(a + a.mT), lambda a: torch.linalg.eigvalsh(a + a.mT), [(3, 3)]),
        (lambda a: LA.eigh(a + a.mT)[1] ** 2, lambda a: torch.linalg.eigh(a + a.mT)[1] ** 2, [(3, 3)]),
        (lambda a: LA.svdvals(a), lambda a: torch.linalg.svdvals(a), [(4, 3)]),
        (lambda a: (lambda u, s, vh: u @ vh)(*LA.svd(a, full_matrices=False)),
         lambda a: (lambda u, s, vh: u @ vh)(*torch.linalg.svd(a, full_matrices=False)), [(3, 4)]),
        (lambda a: LA.svd(a, full_matrices=False)[0] ** 2, lambda a: torch.linalg.svd(a, full_matrices=False)[0] ** 2,
         [(4, 3)]),
        (lambda a: LA.pinv(a), lambda a: torch.linalg.pinv(a), [(3, 2)]),
    ]
    for fn_t, fn_r, shapes in cases:
        compare_second_order(fn_t, fn_r, shapes, seed=4)
    a = tgrad.from_torch(_sym((2,), 26)).requires_grad_()
    assert tgrad.autograd.gradgradcheck(lambda x: LA.eigh(x + x.mT)[1] ** 2, (a,))  # it reads one triangle
    assert type(LA.eigh(a)[0].grad_fn).__name__ == "LinalgEighBackward0"
    assert type(LA.svdvals(a).grad_fn).__name__ == "LinalgSvdBackward0"


def test_repeated_eigen_and_singular_values_as_torch():
    eye = torch.eye(3, dtype=torch.float64)
    for fn in [lambda m, a: m.linalg.eigh(a).eigenvectors, lambda m, a: m.linalg.svd(a).U]:
        ref = eye.clone().requires_grad_()
        got = tgrad.from_torch(eye).requires_grad_()
        up = uniform64((3, 3), -1, 1, 27)
        fn(torch, ref).backward(up)
        fn(tgrad, got).backward(tgrad.from_torch(up))
        assert not ref.grad.isfinite().all() and not got.grad.torch().isfinite().all()  # PyTorch's inf/nan
    run(lambda a: torch.linalg.eigvalsh(a), lambda a: LA.eigvalsh(a), [eye])  # the values alone: finite
    run(lambda a: torch.linalg.svdvals(a), lambda a: LA.svdvals(a), [eye])


def test_spectral_errors():
    for fn in [lambda t: t.linalg.eigh(t.ones(2, 3)), lambda t: t.linalg.eigh(t.eye(2), UPLO="X"),
               lambda t: t.linalg.svd(t.ones(3)), lambda t: t.linalg.svdvals(t.ones(3)),
               lambda t: t.linalg.matrix_rank(t.ones(3)), lambda t: t.linalg.pinv(t.ones(3)),
               lambda t: t.linalg.lstsq(t.ones(3, 2), t.ones(4, 2)), lambda t: t.linalg.eigvalsh(t.ones(2, 3))]:
        with pytest.raises(RuntimeError) as ref:
            fn(torch)
        with pytest.raises(type(ref.value)):
            fn(tgrad)


QR_CASES = [
    ("Q", lambda m, a: m.linalg.qr(a).Q), ("R", lambda m, a: m.linalg.qr(a).R),
    ("QR", lambda m, a: (lambda q, r: q @ (r @ r.mT))(*m.linalg.qr(a))),
    ("complete_R", lambda m, a: m.linalg.qr(a, mode="complete").R), ("r_R", lambda m, a: m.linalg.qr(a, mode="r")[1]),
]


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5, 3), (3, 5), (17, 17)], ids=str)
@pytest.mark.parametrize("name,fn", QR_CASES, ids=[c[0] for c in QR_CASES])
def test_qr_vs_torch(name, fn, shape):
    a = uniform64(shape, -1, 1, 28)
    if name == "r_R" or (shape[-2] > shape[-1] and name == "complete_R"):  # not differentiable (as PyTorch)
        same(fn(tgrad, tgrad.from_torch(a)), fn(torch, a), rtol=1e-8, atol=1e-10)
        return
    run(lambda x: fn(torch, x), lambda x: fn(tgrad, x), [a], rtol=1e-8, atol=1e-10)


def test_qr_second_derivatives_and_errors():
    for shape in [(4, 3), (3, 4)]:
        compare_second_order(lambda a: (lambda q, r: q @ (r @ r.mT))(*LA.qr(a)),
                             lambda a: (lambda q, r: q @ (r @ r.mT))(*torch.linalg.qr(a)),
                             [shape], seed=5)
    a = tgrad.from_torch(uniform64((4, 3), -1, 1, 29)).requires_grad_()
    assert LA.qr(a, mode="complete").Q.shape == (4, 4) and LA.qr(a, mode="r").Q.shape == (0,)
    for mode in ("r", "complete"):
        ref = uniform64((4, 3), -1, 1, 29).requires_grad_()
        with pytest.raises(RuntimeError) as want:
            torch.linalg.qr(ref, mode=mode).R.sum().backward()
        with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
            LA.qr(a, mode=mode).R.sum().backward()
    for fn in [lambda t: t.linalg.qr(t.ones(3)), lambda t: t.linalg.qr(t.ones(3, 3), mode="x")]:
        with pytest.raises(RuntimeError) as ref:
            fn(torch)
        with pytest.raises(RuntimeError, match=re.escape(str(ref.value))):
            fn(tgrad)
    assert type(LA.qr(a).Q.grad_fn).__name__ == "LinalgQrBackward0"


COND_ORDERS = [None, 2, -2, "fro", "nuc", 1, -1, float("inf"), -float("inf")]


@pytest.mark.parametrize("p", COND_ORDERS, ids=str)
def test_cond_vs_torch(p):
    a = _general((2, 3), 30)
    if p in (None, 2, -2):
        run(lambda x: torch.linalg.cond(x, p), lambda x: LA.cond(x, p), [a], rtol=1e-8, atol=1e-10)
    else:  # PyTorch's backward of these fails (an in-place write into inv's saved output): gradcheck instead
        same(LA.cond(tgrad.from_torch(a), p), torch.linalg.cond(a, p), rtol=1e-8, atol=1e-10)
        assert tgrad.autograd.gradcheck(lambda x: LA.cond(x, p), (tgrad.from_torch(a[0]).requires_grad_(),))
    ones = torch.ones(2, 2, dtype=torch.float64)  # singular: inf
    same(LA.cond(tgrad.from_torch(ones), p), torch.linalg.cond(ones, p))


def test_cond_rectangular():
    a = uniform64((4, 3), -1, 1, 31)
    same(LA.cond(tgrad.from_torch(a)), torch.linalg.cond(a), rtol=1e-8, atol=1e-10)
    with pytest.raises(RuntimeError, match=re.escape("linalg.cond(ord=1): A must be batches of square matrices")):
        LA.cond(tgrad.from_torch(a), 1)


ALIAS_CASES = [  # PyTorch's top-level names and Tensor methods
    ("svd_U_sq", lambda m, a: m.svd(a).U ** 2), ("svd_S", lambda m, a: m.svd(a)[1]),
    ("svd_V_sq", lambda m, a: a.svd().V ** 2), ("svd_no_uv", lambda m, a: m.svd(a, compute_uv=False).S),
    ("qr", lambda m, a: (lambda q, r: q @ (r @ r.mT))(*m.qr(a))), ("Tensor.qr", lambda m, a: a.qr().R),
    ("pinverse", lambda m, a: m.pinverse(a)), ("Tensor.pinverse", lambda m, a: a.pinverse(rcond=1e-10)),
    ("cholesky", lambda m, a: m.cholesky(a @ a.mT + 3 * m.eye(3, dtype=a.dtype))),
    ("cholesky_upper", lambda m, a: (a @ a.mT + 3 * m.eye(3, dtype=a.dtype)).cholesky(upper=True)),
    ("cholesky_solve", lambda m, a: m.cholesky_solve(a[..., :2],
                                                     m.linalg.cholesky(a @ a.mT + 3 * m.eye(3, dtype=a.dtype)))),
    ("cholesky_solve_upper", lambda m, a: m.cholesky_solve(a, m.linalg.cholesky(a @ a.mT + 3 * m.eye(3, dtype=a.dtype),
                                                                               upper=True), upper=True)),
    ("cholesky_inverse", lambda m, a: m.cholesky_inverse(m.linalg.cholesky(a @ a.mT + 3 * m.eye(3, dtype=a.dtype)))),
    ("lu_unpack", lambda m, a: (lambda p, l, u: p @ l + u)(*m.lu_unpack(*m.linalg.lu_factor(a)))),
]


@pytest.mark.parametrize("name,fn", ALIAS_CASES, ids=[c[0] for c in ALIAS_CASES])
def test_top_level_names_vs_torch(name, fn):
    run(lambda a: fn(torch, a), lambda a: fn(tgrad, a), [_general((2, 3), 32)], rtol=1e-8, atol=1e-10)


def test_top_level_result_shapes():
    a = uniform64((4, 3), -1, 1, 33)
    for got, want in [(tgrad.svd(tgrad.from_torch(a), compute_uv=False), torch.svd(a, compute_uv=False)),
                      (tgrad.qr(tgrad.from_torch(a), some=False), torch.linalg.qr(a, mode="complete"))]:
        assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in want]
    assert type(tgrad.svd(tgrad.from_torch(a))).__name__ == "svd"


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2)], ids=str)
def test_svd_full_matrices(shape):
    a = uniform64(shape, -1, 1, 34)
    m, n = shape[-2:]
    k = min(m, n)
    U, S, Vh = LA.svd(tgrad.from_torch(a))
    want = torch.linalg.svd(a)
    assert U.shape == want.U.shape and Vh.shape == want.Vh.shape
    same(U.mT @ U, torch.eye(m, dtype=torch.float64).expand(want.U.shape))  # an orthonormal completion
    same(Vh @ Vh.mT, torch.eye(n, dtype=torch.float64).expand(want.Vh.shape))
    same(U[..., :k] ** 2, want.U[..., :k] ** 2, rtol=1e-8, atol=1e-10)
    # the completing columns carry no gradient, as in PyTorch's derivative
    run(lambda x: (lambda u, s, vh: u[..., :k] @ vh[..., :k, :])(*torch.linalg.svd(x)),
        lambda x: (lambda u, s, vh: u[..., :k] @ vh[..., :k, :])(*LA.svd(x)), [a], rtol=1e-8, atol=1e-10)


def test_svd_of_a_rank_deficient_matrix_has_orthonormal_factors():
    a = uniform64((2, 5, 1), -1, 1, 35) @ uniform64((2, 1, 4), -1, 1, 36)  # rank 1, exact zeros in S
    U, S, Vh = LA.svd(tgrad.from_torch(a))
    same(U.mT @ U, torch.eye(5, dtype=torch.float64).expand(2, 5, 5), atol=1e-12)
    same(U[..., :4] * S.unsqueeze(-2) @ Vh, a, rtol=1e-9, atol=1e-12)
    same(S, torch.linalg.svdvals(a), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape,scale", [((1,), 1.0), ((3,), 0.5), ((2, 5), 3.0), ((2, 3), 40.0)], ids=str)
def test_matrix_exp_vs_torch(shape, scale):
    a = _general(shape, 37) * scale  # the larger scales need squarings
    run(torch.linalg.matrix_exp, LA.matrix_exp, [a], rtol=1e-9, atol=1e-10)
    run(lambda x: torch.matrix_exp(x) + x.matrix_exp(), lambda x: tgrad.matrix_exp(x) + x.matrix_exp(),
        [a[..., :2, :2]], rtol=1e-9, atol=1e-10)
    compare_second_order(LA.matrix_exp, torch.linalg.matrix_exp, [(2, 2)], seed=6)
