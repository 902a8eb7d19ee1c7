"""Matrix products against PyTorch autograd: matmul (every ndim pairing, broadcast batches), ``@``,
mm, bmm, dot, mv, outer — forward values and both input gradients under a random upstream gradient,
on contiguous, transposed and sliced operands, with PyTorch's node names and error messages.

Errors are judged against the scale a K-term dot product's rounding grows with: the same product
of |A| and |B| (and, for gradients, of |A|, |B| and |upstream|), which torch gives by running the
same bilinear op on absolute values.
"""
import pytest
import torch

import tgrad
from support.reference import make_pair, node_signature as signature, to_torch, uniform64

TOL = {torch.float32: 4e-6, torch.float64: 1e-13}
DTYPES = [tgrad.float32, tgrad.float64]


def operand(shape, dtype, layout="contiguous", seed=0):
    """(tgrad leaf, torch float64 leaf); 't' transposes the last two dims of stored data, 'step'
    takes every other column of a twice-as-wide tensor: both are non-contiguous leaves."""
    if layout == "contiguous":
        return make_pair(shape, dtype, -1.0, 1.0, seed=seed)
    if layout == "t":
        data = uniform64(shape[:-2] + (shape[-1], shape[-2]), -1, 1, seed).to(dtype.torch).transpose(-1, -2)
    else:
        data = uniform64(shape[:-1] + (2 * shape[-1],), -1, 1, seed).to(dtype.torch)[..., ::2]
    x = tgrad.from_torch(data).requires_grad_()
    assert not x.is_contiguous() or x.numel() <= 1
    return x, data.to(torch.float64).requires_grad_()


def assert_bilinear_close(got, ref, scale, dtype):
    assert got is not None and tuple(got.shape) == tuple(ref.shape), (got, ref.shape)
    err = (to_torch(got) - ref.detach()).abs()
    bound = TOL[dtype.torch] * (scale.detach() + 1e-30)
    assert bool((err <= bound).all()), f"max err {err.max().item() if err.numel() else 0:.3g}"


def check(fn, ref_fn, a, ar, b, br, dtype, seed=7):
    """Forward and both gradients of ``fn(a, b)`` against ``ref_fn`` in float64."""
    y, yr = fn(a, b), ref_fn(ar, br)
    assert y.dtype is dtype and y.requires_grad
    g, gr = make_pair(y.shape, dtype, -1.0, 1.0, requires_grad=False, seed=seed)
    y.backward(g)
    yr.backward(gr)
    a_abs, b_abs = ar.detach().abs().requires_grad_(), br.detach().abs().requires_grad_()
    y_abs = ref_fn(a_abs, b_abs)
    y_abs.backward(gr.abs())
    assert_bilinear_close(y, yr, y_abs, dtype)
    for t, r, s in [(a, ar, a_abs), (b, br, b_abs)]:
        assert t.grad.dtype is dtype
        assert_bilinear_close(t.grad, r.grad, s.grad, dtype)


MATMUL_SHAPES = [
    ((5,), (5,)), ((4,), (4, 3)), ((3, 4), (4,)), ((3, 4), (4, 5)), ((1, 1), (1, 1)), ((17, 33), (33, 5)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)),
    ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((1, 3, 4), (2, 4, 1)), ((0, 4), (4, 3)), ((3, 0), (0, 4)),
    ((3, 4), (4, 0)), ((2, 0, 3), (3, 2)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: "@".join("x".join(map(str, d)) for d in s))
def test_matmul(shapes, dtype):
    a, ar = operand(shapes[0], dtype)
    b, br = operand(shapes[1], dtype, seed=1)
    check(lambda p, q: p @ q, torch.matmul, a, ar, b, br, dtype)


@pytest.mark.parametrize("layouts", [("t", "contiguous"), ("contiguous", "t"), ("t", "t"), ("step", "step"),
                                     ("t", "step")], ids="-".join)
@pytest.mark.parametrize("shapes", [((7, 9), (9, 6)), ((2, 5, 3), (2, 3, 4)), ((2, 1, 5, 3), (3, 3, 4))],
                         ids=lambda s: "@".join("x".join(map(str, d)) for d in s))
def test_matmul_non_contiguous(shapes, layouts):
    a, ar = operand(shapes[0], tgrad.float32, layouts[0])
    b, br = operand(shapes[1], tgrad.float32, layouts[1], seed=1)
    check(tgrad.matmul, torch.matmul, a, ar, b, br, tgrad.float32)


def test_matmul_large():
    a, ar = operand((300, 70), tgrad.float32)
    b, br = operand((70, 700), tgrad.float32, "t", seed=1)
    check(tgrad.matmul, torch.matmul, a, ar, b, br, tgrad.float32)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op,shapes", [
    ("mm", ((3, 4), (4, 5))), ("mm", ((1, 7), (7, 1))), ("bmm", ((2, 3, 4), (2, 4, 5))), ("bmm", ((1, 1, 3), (1, 3, 2))),
    ("dot", ((7,), (7,))), ("dot", ((1,), (1,))), ("mv", ((3, 4), (4,))), ("mv", ((1, 5), (5,))),
    ("outer", ((3,), (4,))), ("outer", ((1,), (5,))), ("inner", ((6,), (6,))), ("dot", ((0,), (0,))),
    ("mm", ((0, 3), (3, 2))),
], ids=lambda v: v if isinstance(v, str) else "@".join("x".join(map(str, d)) for d in v))
def test_named_products(op, shapes, dtype):
    a, ar = operand(shapes[0], dtype)
    b, br = operand(shapes[1], dtype, seed=1)
    check(getattr(tgrad, op), getattr(torch, op), a, ar, b, br, dtype)
    # the Tensor method is the same function
    assert_bilinear_close(getattr(a, op)(b), getattr(ar, op)(br), getattr(ar.abs(), op)(br.abs()), dtype)


def test_non_contiguous_named_products():
    a, ar = operand((4, 3, 5), tgrad.float64, "t")
    b, br = operand((4, 5, 2), tgrad.float64, "step", seed=1)
    check(tgrad.bmm, torch.bmm, a, ar, b, br, tgrad.float64)
    m, mr = operand((6, 5), tgrad.float64, "t")
    v, vr = operand((5,), tgrad.float64, "step", seed=2)
    check(tgrad.mv, torch.mv, m, mr, v, vr, tgrad.float64)
    u, ur = operand((6,), tgrad.float64, "step", seed=3)
    w, wr = operand((6,), tgrad.float64, "step", seed=4)
    check(tgrad.dot, torch.dot, u, ur, w, wr, tgrad.float64)


def test_float16_forward():
    a, ar = operand((9, 33), tgrad.float16)
    b, br = operand((33, 7), tgrad.float16, "t", seed=1)
    y = a @ b
    assert y.dtype is tgrad.float16  # accumulated in fp32, rounded once to half precision
    err = (to_torch(y) - (ar @ br).detach()).abs()
    assert bool((err <= 1e-3 * (ar.abs() @ br.abs()).detach()).all())


@pytest.mark.parametrize("expr,name", [("a2 @ b2", "MmBackward0"), ("tgrad.matmul(a2, b2)", "MmBackward0"),
                                       ("a2.mm(b2)", "MmBackward0"), ("v @ w", "DotBackward0"),
                                       ("tgrad.dot(v, w)", "DotBackward0"), ("tgrad.bmm(a3, b3)", "BmmBackward0"),
                                       ("tgrad.mv(a2, w[:3])", "MvBackward0"), ("a2 @ w[:3]", "MvBackward0")])
def test_node_names(expr, name):
    env = {"tgrad": tgrad, "a2": tgrad.ones(2, 3, requires_grad=True), "b2": tgrad.ones(3, 4, requires_grad=True),
           "v": tgrad.ones(4, requires_grad=True), "w": tgrad.ones(4, requires_grad=True),
           "a3": tgrad.ones(2, 2, 3, requires_grad=True), "b3": tgrad.ones(2, 3, 2, requires_grad=True)}
    out = eval(expr, env)
    edges = ("SliceBackward0" if "w[:3]" in expr else "AccumulateGrad", 0)
    assert signature(out) == (name, (("AccumulateGrad", 0), edges))


ERRORS = [  # (a shape, a dtype, b shape, b dtype, op): tgrad must raise torch's exact message
    ((3,), "f", (4,), "f", "matmul"), ((3,), "f", (4, 5), "f", "matmul"), ((2, 3), "f", (4,), "f", "matmul"),
    ((2, 3), "f", (4, 5), "f", "matmul"), ((2, 2, 3), "f", (4, 5), "f", "matmul"),
    ((2, 2, 3), "f", (2, 4, 5), "f", "matmul"), ((2, 2, 3), "f", (3, 3, 5), "f", "matmul"),
    ((), "f", (3,), "f", "matmul"), ((3,), "f", (3, 2), "f", "mm"), ((2, 3), "f", (3,), "f", "mm"),
    ((2, 3), "f", (4, 2), "f", "mm"), ((2, 3), "f", (3, 2, 1), "f", "bmm"), ((2, 2, 3), "f", (2, 3), "f", "bmm"),
    ((2, 2, 3), "f", (3, 3, 2), "f", "bmm"), ((2, 2, 3), "f", (2, 4, 2), "f", "bmm"), ((2, 3), "f", (3,), "f", "dot"),
    ((3,), "f", (4,), "f", "dot"), ((3,), "f", (3,), "d", "dot"), ((3,), "f", (3,), "d", "matmul"),
    ((2, 3), "f", (3, 2), "d", "mm"), ((2, 3), "f", (3, 2), "d", "matmul"), ((3,), "f", (3, 2), "d", "matmul"),
    ((2, 2, 3), "f", (3, 2), "d", "matmul"), ((2, 2, 3), "f", (2, 3, 2), "d", "bmm"),
    ((2, 2, 3), "d", (2, 3, 2), "f", "matmul"), ((2, 3), "f", (3,), "d", "mv"), ((2, 3), "d", (3,), "f", "matmul"),
    ((2, 3), "f", (4,), "f", "mv"), ((3,), "f", (3,), "f", "mv"), ((2, 3), "f", (3, 1), "f", "mv"),
    ((2, 3), "f", (3,), "f", "outer"), ((3,), "f", (2, 3), "f", "outer"), ((2, 3), "h", (3, 2), "f", "mm"),
]


@pytest.mark.parametrize("case", ERRORS, ids=lambda c: f"{c[4]}-{c[0]}{c[1]}-{c[2]}{c[3]}")
def test_error_messages(case):
    a_shape, a_dt, b_shape, b_dt, op = case
    dts = {"f": torch.float32, "d": torch.float64, "h": torch.float16}
    ar, br = torch.zeros(a_shape, dtype=dts[a_dt]), torch.zeros(b_shape, dtype=dts[b_dt])
    with pytest.raises(RuntimeError) as expected:
        getattr(torch, op)(ar, br)
    with pytest.raises(RuntimeError) as got:
        getattr(tgrad, op)(tgrad.from_torch(ar), tgrad.from_torch(br))
    assert str(got.value) == str(expected.value).replace("torch", "tgrad")


def test_matmul_refuses_non_tensors_and_multiplies_integers_exactly():
    with pytest.raises(TypeError, match="matmul"):
        tgrad.matmul(tgrad.ones(2, 2), [[1.0, 0.0], [0.0, 1.0]])
    got = tgrad.tensor([[1, 2 ** 40]]) @ tgrad.tensor([[3], [2 ** 20]])  # exact in int64, as PyTorch
    assert got.dtype is tgrad.int64
    assert torch.equal(got.torch(), torch.tensor([[1, 2 ** 40]]) @ torch.tensor([[3], [2 ** 20]]))
