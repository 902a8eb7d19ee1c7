"""The composed ops (nansum ... block_diag, the scans, einsum, selection, scatter, ...) against
PyTorch in float64 on the same numbers: values, result dtypes, gradients for a random upstream
gradient, odd / 0-d / 0-size shapes, special values, integer inputs and PyTorch's exception types.
Their in-place forms are in test_inplace.py."""
import math
import warnings
from functools import partial

import pytest
import torch

import tgrad
from support.reference import assert_close, run, same, uniform64

NAN, INF = float("nan"), float("inf")
SPECIAL = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, 0.25], dtype=torch.float64)
A = uniform64((3, 5, 7), -3, 3, 11)
B = uniform64((3, 5, 7), -3, 3, 12)
S = torch.cat([uniform64((22,), -3, 3, 13), SPECIAL]).reshape(3, 11)
S2 = torch.cat([SPECIAL.flip(0), uniform64((22,), -3, 3, 14)]).reshape(3, 11)
Z0 = torch.tensor(0.7, dtype=torch.float64)
E = torch.zeros(0, 4, dtype=torch.float64)


def both(name, *args, **kwargs):
    return (lambda *a: getattr(torch, name)(*a, *args, **kwargs), lambda *a: getattr(tgrad, name)(*a, *args, **kwargs))


def meth(name, *args, **kwargs):
    return (lambda x, *a: getattr(x, name)(*a, *args, **kwargs), lambda x, *a: getattr(x, name)(*a, *args, **kwargs))


CASES = [
    ("nansum", both("nansum"), [S]), ("nansum_dim", both("nansum", 1), [S]),
    ("nansum_kd", both("nansum", (0, 1), True), [S]), ("nansum_kd_all", both("nansum", None, True), [S]),
    ("nansum_0d", both("nansum"), [Z0]), ("nansum_empty", both("nansum", 0), [E]),
    ("nansum_m", meth("nansum", dim=0), [S]),
    ("nanmean", both("nanmean"), [S]), ("nanmean_dim", both("nanmean", 1, keepdim=True), [S]),
    ("nanmean_empty", both("nanmean", 1), [E]), ("nanmean_m", meth("nanmean"), [A]),
    ("nan_to_num", both("nan_to_num"), [S]), ("nan_to_num_args", both("nan_to_num", 1.5, 7.0, -8.0), [S]),
    ("nan_to_num_m", meth("nan_to_num", posinf=3.0), [S]), ("nan_to_num_0d", both("nan_to_num"), [Z0]),
    ("fmax", both("fmax"), [S, S2]), ("fmin", both("fmin"), [S, S2]), ("fmax_ties", both("fmax"), [S, S.clone()]),
    ("fmin_ties", both("fmin"), [S, S.clone()]), ("fmax_bcast", both("fmax"), [A, B[0, :, :1]]),
    ("fmax_m", meth("fmax"), [S2, S]), ("fmin_0d", both("fmin"), [Z0, A]),
    ("logit", both("logit"), [uniform64((4, 9), -0.2, 1.2, 3)]), ("logit_eps", both("logit", 0.1), [uniform64((4, 9), -0.2, 1.2, 3)]),
    ("logit_edges", both("logit"), [torch.tensor([0.0, 1.0, 0.5, NAN], dtype=torch.float64)]),
    ("logit_m", meth("logit", eps=0.3), [uniform64((5,), 0, 1, 4)]),
    ("sinc", both("sinc"), [torch.cat([S.reshape(-1), A.reshape(-1)[:20]])]), ("sinc_m", meth("sinc"), [Z0]),
    ("addcmul", both("addcmul"), [A, B, A[0]]), ("addcmul_v", both("addcmul", value=-0.5), [A, B, A[0, 0]]),
    ("addcdiv", both("addcdiv"), [A, B, A + 4]), ("addcdiv_v", both("addcdiv", value=3), [Z0, B, A + 4]),
    ("addcmul_m", meth("addcmul", value=2), [A, B, A]),
    ("float_power", both("float_power", 2.5), [A.abs()]), ("float_power_t", both("float_power"), [A.abs(), B]),
    ("copysign", both("copysign"), [S, S2]), ("copysign_s", both("copysign", -0.0), [S]),
    ("copysign_m", meth("copysign"), [A, B]),
    ("sgn", both("sgn"), [S]), ("positive", both("positive"), [A]), ("deg2rad", both("deg2rad"), [S]),
    ("rad2deg", both("rad2deg"), [S]), ("absolute", both("absolute"), [S]), ("absolute_m", meth("absolute"), [A]),
    ("hardshrink_m", meth("hardshrink", 0.7), [A]),
    # group 2
    ("ravel", both("ravel"), [A.transpose(0, 2)]), ("swapdims", both("swapdims", 0, 2), [A]),
    ("moveaxis", both("moveaxis", 0, -1), [A]), ("moveaxis_m", meth("moveaxis", (0, 1), (2, 0)), [A]),
    ("msort", both("msort"), [A]), ("dist", both("dist"), [A, B]), ("dist_p1", both("dist", 1), [A, B[0]]),
    ("dist_inf", both("dist", INF), [A, B]), ("dist_p3", both("dist", 3.0), [A, B]),
    ("dist_same", both("dist"), [A, A.clone()]),
    ("renorm", both("renorm", 2, 0, 4.0), [A]), ("renorm_p1", both("renorm", 1, -1, 3.0), [A]),
    ("renorm_m", meth("renorm", 3, 1, 2.0), [A]),
    ("ger", both("ger"), [A[0, 0], B[0, 1]]), ("addr", both("addr"), [A[0, :, :6], A[1, 0, :5], B[2, 0, :6]]),
    ("addr_ab", both("addr", beta=0.5, alpha=-2), [A[0, :, :6], A[1, 0, :5], B[2, 0, :6]]),
    ("addr_beta0", both("addr", beta=0), [S[:, :5], A[1, 0, :3], B[2, 0, :5]]),
    ("addr_m", meth("addr", alpha=3), [A[0, 0, :1], A[1, 0], B[2, 0, :6]]),
    ("cummax", (lambda x: torch.cummax(x, 1).values, lambda x: tgrad.cummax(x, 1).values), [A]),
    ("cummin", (lambda x: torch.cummin(x, -1).values, lambda x: tgrad.cummin(x, -1).values), [A]),
    ("cummax_nan", (lambda x: torch.cummax(x, 1).values, lambda x: tgrad.cummax(x, 1).values), [S]),
    ("cummin_nan", (lambda x: x.cummin(0).values, lambda x: x.cummin(0).values), [S2]),
    ("cummax_ties", (lambda x: torch.cummax(x, 0).values, lambda x: tgrad.cummax(x, 0).values),
     [torch.tensor([1.0, 3, 3, 2, 3, 5, 5], dtype=torch.float64)]),
    ("cummax_0d", (lambda x: torch.cummax(x, 0).values, lambda x: tgrad.cummax(x, 0).values), [Z0]),
    ("logcumsumexp", both("logcumsumexp", 1), [A]), ("logcumsumexp_big", both("logcumsumexp", 0),
                                                     [torch.tensor([-1000.0, 0.0, 1000.0, 999.0, -INF], dtype=torch.float64)]),
    ("logcumsumexp_m", meth("logcumsumexp", -1), [A]), ("logcumsumexp_0d", both("logcumsumexp", 0), [Z0]),
    ("logcumsumexp_empty", both("logcumsumexp", 0), [E]),
    ("kthvalue", (lambda x: torch.kthvalue(x, 2, 1).values, lambda x: tgrad.kthvalue(x, 2, 1).values), [A]),
    ("kthvalue_kd", (lambda x: x.kthvalue(7, keepdim=True).values, lambda x: x.kthvalue(7, keepdim=True).values), [A]),
    ("kthvalue_0d", (lambda x: torch.kthvalue(x, 1).values, lambda x: tgrad.kthvalue(x, 1).values), [Z0]),
    ("cross", both("cross", dim=1), [A[:, :3], B[:, :3]]), ("cross_bcast", both("cross", dim=-1), [A[:, :, :3], B[:1, :, :3]]),
    ("cross_m", meth("cross", dim=0), [A, B]),
    ("rot90", both("rot90"), [A]), ("rot90_k2", both("rot90", 2, (1, 2)), [A]), ("rot90_k3", both("rot90", -1, (2, 0)), [A]),
    ("rot90_k0", both("rot90", 4), [A]), ("rot90_m", meth("rot90", 1, [-1, -2]), [A]),
    ("take", (lambda x: torch.take(x, torch.tensor([[0, 5], [-1, 104]])), lambda x: tgrad.take(x, tgrad.tensor([[0, 5], [-1, 104]]))), [A]),
    ("take_m", (lambda x: x.take(torch.tensor([3, 3, 2])), lambda x: x.take(tgrad.tensor([3, 3, 2]))), [A]),
    ("take_empty", (lambda x: x.take(torch.zeros(0, dtype=torch.long)), lambda x: x.take(tgrad.zeros(0, dtype=tgrad.long))), [A]),
    ("diagflat", both("diagflat"), [A[0, :2]]), ("diagflat_off", both("diagflat", -2), [A[0, 0]]),
    ("diagflat_m", meth("diagflat", 1), [A[0, :2, :2]]),
    ("trapezoid", both("trapezoid"), [A]), ("trapezoid_dx", both("trapezoid", dx=0.3, dim=1), [A]),
    ("trapezoid_x", (lambda y, x: torch.trapezoid(y, x), lambda y, x: tgrad.trapezoid(y, x)), [A, B[0, 0].sort().values]),
    ("trapezoid_xnd", (lambda y, x: torch.trapezoid(y, x, dim=0), lambda y, x: tgrad.trapezoid(y, x, dim=0)), [A, B]),
    ("trapezoid_1", both("trapezoid"), [A[..., :1]]), ("trapezoid_0", both("trapezoid"), [E]),
    ("ctrapezoid", both("cumulative_trapezoid"), [A]), ("ctrapezoid_dx", both("cumulative_trapezoid", dx=2.0, dim=0), [A]),
    ("ctrapezoid_x", (lambda y, x: torch.cumulative_trapezoid(y, x, dim=1),
                      lambda y, x: tgrad.cumulative_trapezoid(y, x, dim=1)), [A, B[0, :, 0]]),
    ("cartesian_prod", (lambda a, b: torch.cartesian_prod(a, b), lambda a, b: tgrad.cartesian_prod(a, b)), [A[0, 0], B[0, 1, :3]]),
    ("cartesian_prod3", (lambda a, b, c: torch.cartesian_prod(a, b, c), lambda a, b, c: tgrad.cartesian_prod(a, b, c)),
     [A[0, 0, :2], B[0, 1, :3], A[1, 1]]),
    ("block_diag", (lambda a, b, c: torch.block_diag(a, b, c), lambda a, b, c: tgrad.block_diag(a, b, c)),
     [A[0, :2], Z0, B[0, 0]]),
    ("combinations", both("combinations"), [A[0, 0]]), ("combinations3", both("combinations", 3), [A[0, 0, :5]]),
    ("combinations_r1", both("combinations", 1), [A[0, 0]]), ("combinations_r0", both("combinations", 0), [A[0, 0]]),
    ("combinations_repl", both("combinations", 2, True), [A[0, 0, :4]]), ("combinations_big_r", both("combinations", 6), [A[0, 0, :4]]),
    ("combinations_empty", both("combinations"), [E[:, 0]]),
]


SHAPED = {  # name: (fn(L, *inputs) for L in (torch, tgrad), input shapes)
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
CASES += [(name, (partial(fn, torch), partial(fn, tgrad)), [uniform64(s, seed=k) for k, s in enumerate(shapes)])
          for name, (fn, shapes) in SHAPED.items()]


@pytest.mark.parametrize("name,fns,inputs", CASES, ids=[c[0] for c in CASES])
def test_composed_vs_torch(name, fns, inputs):
    run(fns[0], fns[1], inputs)


def test_cummax_cummin_indices():
    for x in [A, S, S2, torch.tensor([1.0, 3, 3, 2, 3, 5, 5, NAN, 1, NAN], dtype=torch.float64),
              torch.tensor([[3, 1, 1, 2, 0], [0, 0, 5, 5, 4]]), torch.tensor([True, False, True, True])]:
        for dim in range(x.ndim):
            for name in ("cummax", "cummin"):
                r, g = getattr(torch, name)(x, dim), getattr(tgrad, name)(tgrad.from_torch(x), dim)
                same(g.values, r.values)
                same(g.indices, r.indices)
                assert type(g).__name__ == name and g._fields == ("values", "indices")


def test_dist_p0():  # (PyTorch's own backward of dist p=0 with a gradient argument fails)
    same(tgrad.dist(tgrad.from_torch(A), tgrad.from_torch(B * (A > 0))), torch.dist(A, B * (A > 0)))
    same(tgrad.dist(tgrad.from_torch(A), tgrad.from_torch(B * (A > 0)), 0), torch.dist(A, B * (A > 0), 0))


def test_kthvalue_indices_and_errors():
    r, g = torch.kthvalue(A, 3, 0, True), tgrad.kthvalue(tgrad.from_torch(A), 3, 0, True)
    same(g.values, r.values)
    same(g.indices, r.indices)


def test_aminmax():
    for x, kw in [(A, {}), (A, dict(dim=1)), (A, dict(dim=-1, keepdim=True)), (Z0, {}), (S, dict(dim=0)),
                  (torch.tensor([[3, 1], [2, 9]]), dict(dim=0))]:
        r, g = torch.aminmax(x, **kw), tgrad.aminmax(tgrad.from_torch(x), **kw)
        same(g.min, r.min)
        same(g.max, r.max)
        assert g._fields == ("min", "max")
    with pytest.raises(RuntimeError):
        tgrad.aminmax(tgrad.from_torch(E))
    with pytest.raises(TypeError):
        tgrad.aminmax(tgrad.from_torch(A), 1)  # dim is keyword-only, as in PyTorch


@pytest.mark.parametrize("case", ["tensor_split", "hsplit", "vsplit", "dsplit"])
def test_splits(case):
    args = {"tensor_split": [(3,), (2, 1), ([1, 4],), ([-2, 9, 1],), (torch.tensor([1, 3]), 2), (7, -1), (torch.tensor(2),)],
            "hsplit": [(5,), ([2, 3],)], "vsplit": [(3,), ([1],)], "dsplit": [(7,), ([2, 5],)]}[case]
    for a in args:
        ga = tuple(tgrad.from_torch(v) if isinstance(v, torch.Tensor) else v for v in a)
        ref, got = getattr(torch, case)(A, *a), getattr(tgrad, case)(tgrad.from_torch(A), *ga)
        assert len(ref) == len(got)
        for r, g in zip(ref, got):
            same(g, r)
        # gradients: a weighted sum of every piece
        x, xr = tgrad.from_torch(A.clone()).requires_grad_(), A.clone().requires_grad_()
        pieces, pieces_r = getattr(x, case)(*ga), getattr(xr, case)(*a)
        total = sum(((p * (i + 1)).sum() for i, p in enumerate(pieces)), tgrad.zeros(()))
        total_r = sum(((p * (i + 1)).sum() for i, p in enumerate(pieces_r)), torch.zeros((), dtype=torch.float64))
        total.backward()
        total_r.backward()
        same(x.grad, xr.grad)
    same(tgrad.hsplit(tgrad.from_torch(A[0, 0]), 7)[3], torch.hsplit(A[0, 0], 7)[3])


def test_errors_match_pytorch():
    a, b = tgrad.from_torch(A), tgrad.from_torch(B)
    cases = [
        (lambda m: m.hsplit(m.from_numpy(A.numpy()) if m is tgrad else A, 2), RuntimeError),
        (lambda m: m.vsplit((a if m is tgrad else A)[0, 0], 1), RuntimeError),
        (lambda m: m.dsplit((a if m is tgrad else A), 2), RuntimeError),
        (lambda m: m.tensor_split((a if m is tgrad else A), 0), RuntimeError),
        (lambda m: m.cross((a if m is tgrad else A), (b if m is tgrad else B), dim=2), RuntimeError),
        (lambda m: m.rot90((a if m is tgrad else A), 1, (0, 0)), RuntimeError),
        (lambda m: m.rot90((a if m is tgrad else A)[0, 0], 1), RuntimeError),
        (lambda m: m.take((a if m is tgrad else A), m.tensor([105])), IndexError if False else (IndexError, RuntimeError)),
        (lambda m: m.addr((a if m is tgrad else A)[0], (a if m is tgrad else A)[0], (b if m is tgrad else B)[0, 0]), RuntimeError),
        (lambda m: m.addcdiv(m.ones(2), m.tensor([1, 2]), m.tensor([3, 4])), RuntimeError),
        (lambda m: m.positive(m.tensor([True])), RuntimeError),
        (lambda m: m.nanmean(m.tensor([1, 2])), RuntimeError),
        (lambda m: m.logcumsumexp(m.tensor([1, 2]), 0), RuntimeError),
        (lambda m: m.renorm((a if m is tgrad else A), 0, 0, 1.0), RuntimeError),
        (lambda m: m.block_diag((a if m is tgrad else A)), RuntimeError),
        (lambda m: m.cartesian_prod((a if m is tgrad else A)), RuntimeError),
        (lambda m: m.kthvalue((a if m is tgrad else A), 9, 0), RuntimeError),
        (lambda m: m.kthvalue((a if m is tgrad else A), 0), RuntimeError),
        (lambda m: m.cross((a if m is tgrad else A), (b if m is tgrad else B)[0], dim=-1), RuntimeError),
        (lambda m: m.combinations((a if m is tgrad else A)[0]), RuntimeError),
        (lambda m: m.combinations((a if m is tgrad else A)[0, 0], -1), RuntimeError),
        (lambda m: m.heaviside(m.ones(2), m.tensor([1])), RuntimeError), (lambda m: m.heaviside(m.ones(2), 0.5), TypeError),
        (lambda m: m.heaviside(m.ones(2).requires_grad_(), m.tensor(0.5)).sum().backward(), RuntimeError),
    ]
    for i, (fn, exc) in enumerate(cases):
        with pytest.raises(exc) as ref:
            fn(torch)
        with pytest.raises(type(ref.value)):
            fn(tgrad)


def test_dtypes_and_integer_inputs():
    i = torch.tensor([[3, -1, 0], [7, 2, -5]])
    gi = tgrad.from_torch(i)
    for name in ("sinc", "deg2rad", "rad2deg", "logit", "nan_to_num", "signbit", "sgn", "positive", "absolute",
                 "msort", "ravel"):
        same(getattr(tgrad, name)(gi), getattr(torch, name)(i), rtol=1e-6, atol=1e-6)
    same(tgrad.nansum(gi, 1), torch.nansum(i, 1))
    same(tgrad.nansum(gi, dtype=tgrad.float64), torch.nansum(i, dtype=torch.float64))
    same(tgrad.float_power(gi, 2), torch.float_power(i, 2))
    same(tgrad.fmax(gi, gi.flip(0)), torch.fmax(i, i.flip(0)))
    same(tgrad.copysign(gi, -1), torch.copysign(i, -1), rtol=1e-6, atol=1e-6)
    same(tgrad.signbit(tgrad.from_torch(SPECIAL)), torch.signbit(SPECIAL))
    same(tgrad.signbit(tgrad.from_torch(-SPECIAL.float())), torch.signbit(-SPECIAL.float()))
    same(tgrad.cummax(gi, 1).values, torch.cummax(i, 1).values)
    same(tgrad.trapezoid(gi), torch.trapezoid(i), rtol=1e-6, atol=1e-6)
    f32 = tgrad.from_torch(A.float())
    assert tgrad.float_power(f32, 2).dtype is tgrad.float64
    assert tgrad.nanmean(f32).dtype is tgrad.float32
    assert tgrad.is_floating_point(f32) and not tgrad.is_floating_point(gi)


def test_heaviside_and_combinations_of_integers():
    for x, v in [(S, torch.tensor(0.5, dtype=torch.float64)), (S, S2), (torch.tensor([[0, 1, -2]]), torch.tensor([[7], [3]])),
                 (torch.tensor([True, False]), torch.tensor([True])), (E, E[:1]), (Z0 * 0, A)]:
        same(tgrad.heaviside(tgrad.from_torch(x), tgrad.from_torch(v)), torch.heaviside(x, v))
        same(tgrad.from_torch(x).heaviside(tgrad.from_torch(v)), x.heaviside(v))
        if torch.broadcast_shapes(x.shape, v.shape) == x.shape:
            t = tgrad.from_torch(x.clone())
            assert t.heaviside_(tgrad.from_torch(v)) is t
            same(t, x.clone().heaviside_(v))
    y = tgrad.heaviside(tgrad.from_torch(A).requires_grad_(), tgrad.from_torch(Z0))
    assert y.requires_grad
    ints = torch.tensor([4, 1, 3, 3])
    for args in [(), (3,), (2, True), (4, True)]:
        same(tgrad.combinations(tgrad.from_torch(ints), *args), torch.combinations(ints, *args))


def test_construction():
    for args in [(0, 2, 5), (-1, 1, 7, 2.0), (1, 3, 1), (0, 1, 0)]:
        same(tgrad.logspace(*args), torch.logspace(*args), rtol=1e-6, atol=1e-6)
    same(tgrad.logspace(0, 2, 5, dtype=tgrad.float64), torch.logspace(0, 2, 5, dtype=torch.float64))
    for args in [(3, 3), (4, 6, 1), (5, 3, -1), (0, 3), (3, 4, 10), (3, 4, -10)]:
        same(tgrad.triu_indices(*args), torch.triu_indices(*args))
        same(tgrad.tril_indices(*args), torch.tril_indices(*args))
    same(tgrad.block_diag(tgrad.ones(2, 3), tgrad.tensor([1, 2])), torch.block_diag(torch.ones(2, 3), torch.tensor([1, 2])))
    same(tgrad.cartesian_prod(tgrad.tensor([1, 2, 3])), torch.cartesian_prod(torch.tensor([1, 2, 3])))


def test_cross_default_dim_warns():
    x, y = A[:, :3, 0], B[:, :3, 0]
    with pytest.warns(UserWarning, match="dim"):
        got = tgrad.cross(tgrad.from_torch(x), tgrad.from_torch(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(got, torch.cross(x, y))


@pytest.mark.parametrize("geometry", [((4, 3), (2, 1), 1), ((2, 3), (1, 2), None), ((3, 3), (0, 1), 2),
                                      ((5,), (2,), 0), ((0, 3), (1, 1), 0), ((), (), 7), ((3, 2, 2), (3, 1, 2), 0)])
def test_as_strided(geometry):
    size, stride, off = geometry
    base = uniform64((12,), seed=31)
    run(lambda x: (x * 1).as_strided(size, stride, off), lambda x: (x * 1).as_strided(size, stride, off), [base])
    run(lambda x: torch.as_strided(x * 1, size, stride, off), lambda x: tgrad.as_strided(x * 1, size, stride, off), [base])


def test_as_strided_view_and_errors():
    x = tgrad.zeros(6)
    v = x.as_strided((2, 2), (1, 2))
    v.fill_(1.0)
    same(x, torch.zeros(6).as_strided((2, 2), (1, 2)).fill_(1.0).as_strided((6,), (1,), 0))
    for args in [((2, 2), (1, 9)), ((2,), (1, 1)), ((-1,), (1,)), ((2,), (-1,))]:
        with pytest.raises(RuntimeError):
            torch.zeros(6).as_strided(*args)
        with pytest.raises(RuntimeError):
            x.as_strided(*args)


@pytest.mark.parametrize("name,fn", [
    ("cummax", lambda x: tgrad.cummax(x, 1).values), ("logcumsumexp", lambda x: tgrad.logcumsumexp(x, 0)),
    ("fmax", lambda x: tgrad.fmax(x, x.flip(0))), ("copysign", lambda x: tgrad.copysign(x, x.flip(1))),
    ("logit", lambda x: tgrad.logit(x.sigmoid(), 0.1)), ("sinc", tgrad.sinc), ("renorm", lambda x: x.renorm(2, 0, 1.0)),
    ("kthvalue", lambda x: tgrad.kthvalue(x, 2, 1).values), ("trapezoid", tgrad.trapezoid),
    ("nanmean", lambda x: tgrad.nanmean(x, 1)), ("cross", lambda x: tgrad.cross(x, x.exp(), dim=1)),
    ("threshold", lambda x: tgrad.nn.functional.threshold(x, 0.1, 2.0) * x)])
def test_second_order(name, fn):
    x = tgrad.from_torch(uniform64((4, 3), -1, 1, 51)).requires_grad_()
    assert tgrad.autograd.gradcheck(fn, (x,))
    assert tgrad.autograd.gradgradcheck(fn, (x,))


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


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_of_an_empty_index_keeps_src_in_the_graph(reduce, include_self):
    # no position is reached, so the result is the input, yet it depends on src (zero gradient) as PyTorch's
    results = []
    for L in (torch, tgrad):
        x = L.ones(3, 2, dtype=L.float64, requires_grad=True)
        src = L.ones(0, 2, dtype=L.float64, requires_grad=True)  # (a longer src: PyTorch's backward raises)
        out = x.scatter_reduce(0, L.zeros(0, 2, dtype=L.int64), src, reduce, include_self=include_self)
        out.backward(L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=L.float64))
        results.append((out.tolist(), out.requires_grad, x.grad.tolist(), src.grad.tolist()))
        with L.no_grad():
            results.append(x.scatter_reduce(0, L.zeros(0, 2, dtype=L.int64), src, reduce).requires_grad)
    assert results[:2] == results[2:]
