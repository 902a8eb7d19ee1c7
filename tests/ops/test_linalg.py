"""tgrad.linalg against torch.linalg in float64: norms (vector, matrix, the norm dispatcher),
cross, vecdot, diagonal, cholesky and solve_triangular; values, gradients, errors."""
import math

import pytest
import torch

import tgrad
import tgrad.linalg as LA
from support.reference import run, same, uniform64

INF = math.inf
A = uniform64((3, 5, 4), -2, 2, 21)
B = uniform64((3, 5, 4), -2, 2, 22)


def both(name, *args, **kwargs):
    return (lambda *a: getattr(torch.linalg, name)(*a, *args, **kwargs),
            lambda *a: getattr(LA, name)(*a, *args, **kwargs))


CASES = [
    ("vector_norm", both("vector_norm"), [A]), ("vector_norm_p1", both("vector_norm", 1, dim=1), [A]),
    ("vector_norm_inf", both("vector_norm", INF, dim=(0, 2), keepdim=True), [A]),
    ("vector_norm_ninf", both("vector_norm", -INF, dim=-1), [A]), ("vector_norm_p3", both("vector_norm", 3.5), [A]),
    ("vector_norm_0d", both("vector_norm"), [torch.tensor(-1.5, dtype=torch.float64)]),
    ("vector_norm_empty", both("vector_norm", dim=1), [torch.zeros(2, 0, dtype=torch.float64)]),
    ("matrix_norm_fro", both("matrix_norm"), [A]), ("matrix_norm_1", both("matrix_norm", 1), [A]),
    ("matrix_norm_m1", both("matrix_norm", -1, dim=(0, 2)), [A]), ("matrix_norm_inf", both("matrix_norm", INF), [A]),
    ("matrix_norm_ninf", both("matrix_norm", -INF, keepdim=True), [A]),
    ("matrix_norm_dims", both("matrix_norm", 1, dim=(2, 0), keepdim=True), [A]),
    ("norm", both("norm"), [A]), ("norm_vec", both("norm", 3, dim=1), [A]), ("norm_1d", both("norm", INF), [A[0, 0]]),
    ("norm_2d", both("norm", 1), [A[0]]), ("norm_fro", both("norm", "fro", dim=(0, 1)), [A]),
    ("norm_2dims", both("norm", -INF, dim=(1, 2)), [A]),
    ("cross", both("cross"), [A[..., :3], B[..., :3]]), ("cross_dim", both("cross", dim=0), [A, B]),
    ("vecdot", both("vecdot"), [A, B]), ("vecdot_dim", both("vecdot", dim=1), [A, B[:1]]),
    ("diagonal", both("diagonal", offset=1), [A]), ("diagonal_dims", both("diagonal", dim1=0, dim2=2), [A]),
    ("matmul", both("matmul"), [A, B.mT]),
]


@pytest.mark.parametrize("name,fns,inputs", CASES, ids=[c[0] for c in CASES])
def test_linalg_vs_torch(name, fns, inputs):
    run(fns[0], fns[1], inputs)


def _spd(n, seed):
    m = uniform64((2, n, n), -1, 1, seed)
    return m @ m.mT + n * torch.eye(n, dtype=torch.float64)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    a = _spd(5, 3)
    run(lambda x: torch.linalg.cholesky((x + x.mT) / 2, upper=upper),
        lambda x: LA.cholesky((x + x.mT) / 2, upper=upper), [a], rtol=1e-8, atol=1e-10)
    with pytest.raises(torch.linalg.LinAlgError):
        LA.cholesky(tgrad.from_torch(-a))
    assert LA.LinAlgError is torch.linalg.LinAlgError


@pytest.mark.parametrize("upper,left,unit", [(False, True, False), (True, True, False), (False, False, False),
                                             (True, False, True), (False, True, True)])
def test_solve_triangular(upper, left, unit):
    t = uniform64((2, 4, 4), -1, 1, 5) + 3 * torch.eye(4, dtype=torch.float64)
    t = t.triu() if upper else t.tril()
    b = uniform64((2, 4, 3) if left else (2, 3, 4), -1, 1, 6)
    run(lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
        lambda x, y: LA.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit), [t, b],
        rtol=1e-8, atol=1e-10)


def test_errors():
    a, i = tgrad.from_torch(A), tgrad.tensor([[1, 2], [3, 4]])
    for fn in [lambda m: m.linalg.vector_norm(i if m is tgrad else i.torch()),
               lambda m: m.linalg.matrix_norm((a if m is tgrad else A)[0, 0]),
               lambda m: m.linalg.matrix_norm((a if m is tgrad else A), 3),
               lambda m: m.linalg.norm((a if m is tgrad else A), 2),
               lambda m: m.linalg.cross((a if m is tgrad else A), (a if m is tgrad else A)),
               lambda m: m.linalg.vector_norm((a if m is tgrad else A)[:0], -1),
               lambda m: m.linalg.matrix_norm((a if m is tgrad else A), dim=(1, 1))]:
        with pytest.raises(Exception) as ref:
            fn(torch)
        with pytest.raises(type(ref.value)):
            fn(tgrad)


MORE = [
    ("matrix_power_1", both("matrix_power", 1), [A[:, :4]]), ("matrix_power_5", both("matrix_power", 5), [A[:, :4] / 2]),
    ("matrix_power_2", both("matrix_power", 2), [A[0, :4]]),
    ("multi_dot", (lambda a, b, c: torch.linalg.multi_dot([a, b, c]), lambda a, b, c: LA.multi_dot([a, b, c])),
     [A[0], B[0].mT, A[1]]),
    ("multi_dot_vec", (lambda a, b, c: torch.linalg.multi_dot([a, b, c]), lambda a, b, c: LA.multi_dot([a, b, c])),
     [A[0, :, 0], B[0], A[1, 0]]),
    ("vander", (lambda x: torch.linalg.vander(x), lambda x: LA.vander(x)), [A[0]]),
    ("vander_N", (lambda x: torch.linalg.vander(x, N=3), lambda x: LA.vander(x, N=3)),
     [torch.tensor([0.0, -1.5, 2.0, float("nan")], dtype=torch.float64)]),
    ("vecdot_m", (lambda x, y: x.vdot(y), lambda x, y: x.vdot(y)), [A[0, 0], B[0, 0]]),
]


@pytest.mark.parametrize("name,fns,inputs", MORE, ids=[c[0] for c in MORE])
def test_linalg_more(name, fns, inputs):
    run(fns[0], fns[1], inputs, rtol=1e-9, atol=1e-11)


def test_linalg_more_edges():
    same(LA.matrix_power(tgrad.from_torch(A[:, :4]), 0), torch.linalg.matrix_power(A[:, :4], 0))
    same(LA.vander(tgrad.tensor([1, 2])), torch.linalg.vander(torch.tensor([1, 2])))
    for fn in [lambda m: m.linalg.matrix_power(m.ones(2, 3), 2), lambda m: m.linalg.multi_dot([m.ones(2, 2)]),
               lambda m: m.linalg.vander(m.ones(1)), lambda m: m.linalg.multi_dot([m.ones(2, 2), m.ones(2, 2, 2)])]:
        with pytest.raises(RuntimeError):
            fn(torch)
        with pytest.raises(RuntimeError):
            fn(tgrad)
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):  # a negative power inverts
        LA.matrix_power(tgrad.ones(2, 2), -1)
