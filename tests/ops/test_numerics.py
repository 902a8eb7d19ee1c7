"""Numerical robustness at extreme inputs: +-1e4, +-88 (where exp overflows float32), +-inf,
rows whose exponentials sum to a huge number, constant rows, a row of -inf.

Each op is compared, forward and backward (with a random upstream gradient), against PyTorch on the
same numbers:

- non-finite results (inf, -inf, NaN) must be exactly PyTorch's in the same dtype: no NaN where
  PyTorch has none, and no NaN hidden where PyTorch reports one;
- finite results must match PyTorch computed in float64 within the dtype's tolerance, or be at
  least as accurate as PyTorch's own result in that dtype (twice its largest error in the same row
  allowed): some values cannot be computed better in float32 (a layer_norm of a row at 1e4 whose
  values differ by 0.25 loses the digits the mean cannot hold).
"""
from __future__ import annotations

import math

import pytest
import torch

import tgrad
import tgrad.nn.functional as F

INF = math.inf
TF = torch.nn.functional
TOL = {torch.float32: (2e-5, 2e-6), torch.float64: (1e-10, 1e-12)}

# rows of logits (one row per line), padded to a common width with 0
ROWS = [
    [1e4, -1e4, 0.0, 88.0, -88.0, 1.0, 2.0],
    [88.5, 89.0, 90.0, 100.0, 88.7, 89.5, 95.0],          # exp overflows float32 without a shift
    [-1e4] * 7,                                            # constant, very negative
    [1e4] * 7,                                             # constant, very large
    [3.0] * 7,                                             # constant
    [-INF, 0.0, 1.0, 2.0, -INF, -1e4, 1e4],                # -inf entries
    [1e4, 1e4 + 1.0, 1e4 - 1.0, 1e4, 1e4, 1e4, 1e4],       # large logits, O(1) differences
    [-88.0, -89.0, -100.0, -1e4, -87.0, -88.5, -200.0],
    [-INF] * 7,                                            # every entry -inf
    [INF, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0],                   # a +inf entry
]
# a long row: the shifted exponentials sum to ~2000
LONG = [50.0] * 1999 + [49.0]
POINTS = [1e4, -1e4, 88.0, -88.0, 88.8, -88.8, 89.0, -89.0, 100.0, -100.0, 20.0, 20.5, -20.0, 30.0, -30.0,
          1e-8, -1e-8, 0.0, 1.0, -1.0, 5.0, -5.0, 710.0, -710.0, 750.0, -750.0, INF, -INF]


def _row_max(err):
    return err.amax(-1, keepdim=True).expand_as(err) if err.dim() else err


def _compare(got, want64, want_same, dtype, what, extra=0.0):
    got = got.detach().to(torch.float64)
    want64 = want64.detach().to(torch.float64)
    want_same = want_same.detach().to(torch.float64)
    assert got.shape == want64.shape, what
    odd = ~torch.isfinite(want_same) | ~torch.isfinite(got)
    same = (got[odd] == want_same[odd]) | (torch.isnan(got[odd]) & torch.isnan(want_same[odd]))
    assert same.all(), f"{what}: non-finite values differ from PyTorch's at {odd.nonzero()[~same].tolist()}: " \
                       f"got {got[odd][~same].tolist()}, PyTorch {want_same[odd][~same].tolist()}"
    rtol, atol = TOL[dtype]
    torch_err = _row_max(torch.where(odd, 0.0, want_same - want64).abs())
    g, w = got[~odd], want64[~odd]
    allowed = atol + extra + rtol * w.abs() + 2 * torch_err[~odd]
    bad = (g - w).abs() > allowed
    assert not bad.any(), f"{what}: got {g[bad].tolist()[:6]}, float64 {w[bad].tolist()[:6]}, " \
                          f"PyTorch {want_same[~odd][bad].tolist()[:6]} (in {dtype})"


def _check(tg_fn, torch_fn, inputs, dtype, what, seed=0, extra=0.0):
    """Forward and backward of ``tg_fn(*inputs)`` against ``torch_fn`` in float64 and in ``dtype``.
    ``inputs``: float64 torch tensors; the first one is differentiated."""
    cast = [x.to(dtype) for x in inputs]
    xs = [tgrad.from_torch(c.clone()) for c in cast]
    xs[0].requires_grad_()
    r64 = [c.to(torch.float64).clone() for c in cast]
    r64[0].requires_grad_()
    rs = [c.clone() for c in cast]
    rs[0].requires_grad_()
    y, y64, ys = tg_fn(*xs), torch_fn(*r64), torch_fn(*rs)
    _compare(y.torch(), y64, ys, dtype, f"{what} forward", extra)
    gen = torch.Generator().manual_seed(seed)
    up = (torch.rand(tuple(y.shape), generator=gen, dtype=torch.float64) + 0.5).to(dtype)
    y.backward(tgrad.from_torch(up.clone()))
    y64.backward(up.to(torch.float64))
    ys.backward(up.clone())
    _compare(xs[0].grad.torch(), r64[0].grad, rs[0].grad, dtype, f"{what} backward", extra)


def _rows(rows, width=None):
    width = width or max(len(r) for r in rows)
    return torch.tensor([r + [0.0] * (width - len(r)) for r in rows], dtype=torch.float64)


DTYPES = [torch.float32, torch.float64]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_family_at_extremes(op, dtype):
    tg = {"softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(-1),
          "logsumexp": lambda x: x.logsumexp(-1)}[op]
    th = {"softmax": lambda x: x.softmax(-1), "log_softmax": lambda x: x.log_softmax(-1),
          "logsumexp": lambda x: x.logsumexp(-1)}[op]
    _check(tg, th, [_rows(ROWS)], dtype, op)
    _check(tg, th, [_rows([LONG, [-1e4] * 2000])], dtype, f"{op} of a long row")
    _check(lambda x: tg(x.t()), lambda x: th(x.t()), [_rows(ROWS).t().contiguous()], dtype, f"{op} over dim 0")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("kw", [{}, dict(label_smoothing=0.1), dict(reduction="none"), dict(weight=True)],
                         ids=["mean", "smoothing", "none", "weight"])
def test_cross_entropy_at_extremes(kw, dtype):
    rows = [r for r in ROWS if INF not in r and r != [-INF] * 7]  # an infinite logit makes torch's loss NaN
    x = _rows(rows)
    # targets: the largest logit, the smallest finite one, and a -inf one where there is
    t = torch.tensor([0, 3, 2, 5, 1, 0, 1, 4])[:len(rows)]
    kw = dict(kw)
    if kw.pop("weight", False):
        w = torch.linspace(0.5, 2.0, x.shape[1], dtype=torch.float64)
        _check(lambda a, w_: F.cross_entropy(a, tgrad.from_torch(t), weight=w_, **kw),
               lambda a, w_: TF.cross_entropy(a, t, weight=w_, **kw), [x, w], dtype, "cross_entropy")
    else:
        _check(lambda a: F.cross_entropy(a, tgrad.from_torch(t), **kw),
               lambda a: TF.cross_entropy(a, t, **kw), [x], dtype, "cross_entropy")
    long_t = torch.tensor([1999, 0])
    _check(lambda a: F.cross_entropy(a, tgrad.from_torch(long_t), **kw), lambda a: TF.cross_entropy(a, long_t, **kw),
           [_rows([LONG, [-1e4] * 2000])], dtype, "cross_entropy of long rows")


def test_cross_entropy_of_a_minus_inf_target_is_inf_not_nan():
    x = torch.tensor([[-INF, 0.0, 1.0]])
    t = torch.tensor([0])
    _check(lambda a: F.cross_entropy(a, tgrad.from_torch(t)), lambda a: TF.cross_entropy(a, t), [x],
           torch.float32, "cross_entropy at -inf")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("op", ["sigmoid", "tanh", "softplus", "softplus-beta2", "logsigmoid"])
def test_activations_at_extremes(op, dtype):
    tg = {"sigmoid": lambda x: x.sigmoid(), "tanh": lambda x: x.tanh(), "softplus": F.softplus,
          "softplus-beta2": lambda x: F.softplus(x, beta=2.0, threshold=15.0),
          "logsigmoid": lambda x: -F.softplus(-x)}[op]
    th = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "softplus": TF.softplus,
          "softplus-beta2": lambda x: TF.softplus(x, beta=2.0, threshold=15.0),
          "logsigmoid": lambda x: -TF.softplus(-x)}[op]
    _check(tg, th, [torch.tensor(POINTS, dtype=torch.float64)], dtype, op)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("pos_weight", [False, True], ids=["plain", "pos_weight"])
def test_bce_with_logits_at_extremes(pos_weight, dtype):
    finite = [p for p in POINTS if math.isfinite(p)]
    x = torch.tensor(finite * 3, dtype=torch.float64)
    y = torch.tensor([0.0] * len(finite) + [1.0] * len(finite) + [0.3] * len(finite), dtype=torch.float64)
    pw = torch.full_like(x, 2.5) if pos_weight else None
    for reduction in ("none", "sum"):
        def tg(a, b):
            q = None if pw is None else tgrad.from_torch(pw.to(a.dtype.torch))
            return F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=q)

        def th(a, b):
            q = None if pw is None else pw.to(a.dtype)
            return TF.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=q)

        _check(tg, th, [x, y], dtype, f"bce_with_logits ({reduction})")


def test_bce_with_logits_at_infinite_logits():
    """+-inf logits with the target on their side: PyTorch gives 0 loss or NaN; tgrad the same."""
    x = torch.tensor([INF, -INF, INF, -INF], dtype=torch.float64)
    y = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    _check(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"),
           lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction="none"), [x, y], torch.float32,
           "bce_with_logits at inf")


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_layer_norm_at_extremes(dtype):
    rows = [[3.0] * 7,                                      # constant: var 0, rstd = 1/sqrt(eps)
            [1e4, -1e4, 1e4, -1e4, 0.0, 88.0, -88.0],
            [1e18, -1e18, 1e18, 0.0, 0.0, 1.0, -1.0],      # variance near float32's range
            [0.0] * 6 + [1e-30]]
    w = torch.linspace(-1.5, 2.0, 7, dtype=torch.float64)
    b = torch.linspace(0.5, -0.5, 7, dtype=torch.float64)
    for x, extra in [(_rows(rows), 0.0), _ill_conditioned(_rows([[1e4 + d for d in (0.5, -0.5, 0.25, 0.0, 1.0, -1.0,
                                                                                    0.75)]]), dtype)]:
        _check(lambda a, w_, b_: F.layer_norm(a, (7,), w_, b_), lambda a, w_, b_: TF.layer_norm(a, (7,), w_, b_),
               [x, w, b], dtype, "layer_norm", extra=extra)
        _check(lambda w_, a: F.layer_norm(a, (7,), w_), lambda w_, a: TF.layer_norm(a, (7,), w_), [w, x], dtype,
               "layer_norm weight grad", extra=extra)
    long, extra = _ill_conditioned(_rows([[1e4 + (i % 7) * 0.125 for i in range(3000)], [2.0] * 3000]), dtype)
    _check(lambda a: F.layer_norm(a, (3000,)), lambda a: TF.layer_norm(a, (3000,)), [long], dtype, "long rows",
           extra=extra)


def _ill_conditioned(x, dtype):
    """(x, the error its rounding forces): rows far from 0 with a small spread lose the low digits
    of x - mean; the output then carries errors of eps * max|x| * rstd, the gradient one more rstd."""
    std = x.std(-1, unbiased=False)
    rstd = 1 / std[std > 0].min()
    return x, 8 * torch.finfo(dtype).eps * x.abs().max().item() * max(rstd.item(), rstd.item() ** 2)


@pytest.mark.parametrize("op", ["cosh", "sinh"])
def test_cosh_and_sinh_of_large_arguments_are_correctly_rounded_in_float64(op):
    """e^a / 2 taken as e^(a - ln 2) is off by about a ulps (the argument's rounding); e^a * 0.5, and
    two halves near overflow, keep cosh, sinh and their gradients within an ulp of libm's (Python's
    math, what PyTorch's scalar CPU path calls: its vectorized float64 kernels overflow to inf
    above ~709.78 on some CPUs, so PyTorch's own results there depend on the host)."""
    xs = [20.0, 27.308232836016487, 100.0, 354.5, 700.0, 709.5, 709.9, 710.4, -27.5, -709.9]
    x = tgrad.tensor(xs, dtype=tgrad.float64, requires_grad=True)
    y = getattr(x, op)()
    y.sum().backward()
    derivative = {"cosh": math.sinh, "sinh": math.cosh}[op]
    want = torch.tensor([getattr(math, op)(v) for v in xs], dtype=torch.float64)
    want_grad = torch.tensor([derivative(v) for v in xs], dtype=torch.float64)
    for got, expected in ((y.detach(), want), (x.grad, want_grad)):
        got = got.torch()
        assert torch.equal(torch.isinf(got), torch.isinf(expected))
        finite = torch.isfinite(expected)
        rel = ((got[finite] - expected[finite]) / expected[finite]).abs()
        assert float(rel.max()) <= 2.3e-16, rel


def test_float32_tanh_is_correctly_rounded():
    """tanh in float32 is the float64 value rounded once (PyTorch's is within an ulp): one ulp
    decides whether atanh(atanh(tanh(-1))) is -inf or NaN."""
    xs = torch.linspace(-10, 10, 20001, dtype=torch.float32)
    got = tgrad.tanh(tgrad.tensor(xs.numpy())).torch()
    assert torch.equal(got, torch.tanh(xs.double()).float())
    chain = tgrad.atanh(tgrad.atanh(tgrad.tanh(tgrad.tensor(-1.0))))
    assert chain.item() == torch.atanh(torch.atanh(torch.tanh(torch.tensor(-1.0)))).item() == -INF


@pytest.mark.parametrize("norm,shape,wshape", [
    ("layer_norm", (200, 2), (2,)), ("layer_norm", (200, 3), (3,)),
    ("layer_norm", (2, 70000), (70000,)),  # longer than one block: the chunked backward
    ("group_norm", (100, 4, 1), (4,)), ("instance_norm", (100, 3, 2), (3,)), ("batch_norm", (2, 300), (300,))])
def test_float32_norm_gradients_of_values_that_nearly_cancel(norm, shape, wshape):
    """Rows (channels) of close values: the stored float32 mean is an ulp of x off, which times rstd
    (~300 here) is large beside the gradient; the backward re-centres x - mean on its own mean.
    PyTorch's float32 input gradients are off the float64 ones by 1e-6 to 3e-5 of their scale here (the
    program fuzzer's layer_norm on an 'hwc' layout, seed 303); tgrad's must stay within 5e-7."""
    calls = {"layer_norm": lambda F_, x, w: F_.layer_norm(x, shape[1:], w),
             "group_norm": lambda F_, x, w: F_.group_norm(x, 2, w),
             "instance_norm": lambda F_, x, w: F_.instance_norm(x, weight=w),
             "batch_norm": lambda F_, x, w: F_.batch_norm(x, None, None, w, training=True)}
    gen = torch.Generator().manual_seed(7)
    centre_shape = (1, shape[1]) if norm == "batch_norm" else (shape[0],) + (1,) * (len(shape) - 1)
    centre = torch.randn(*centre_shape, generator=gen, dtype=torch.float64)
    x = (centre + 1e-2 * torch.randn(*shape, generator=gen, dtype=torch.float64)).float().double()
    g = torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1
    w = torch.rand(*wshape, generator=gen, dtype=torch.float64) + 0.5
    grads = []
    for L, F_, dtype in ((torch, TF, torch.float64), (tgrad, F, tgrad.float32)):
        xs, ws = L.tensor(x.numpy(), dtype=dtype, requires_grad=True), L.tensor(w.numpy(), dtype=dtype,
                                                                                 requires_grad=True)
        calls[norm](F_, xs, ws).backward(L.tensor(g.numpy(), dtype=dtype))
        grads.append([t.grad if L is torch else t.grad.torch().double() for t in (xs, ws)])
    for want, got in zip(*grads):
        assert float((got - want).abs().max()) <= 5e-7 * float(want.abs().max())
