"""Every row of the op table (``tgrad/ops/table.py``) against PyTorch, generated from the row.

For each row with a public name: the forward value, the node name and its edges, and every input
gradient under a random upstream gradient, in float32 and float64 on the same numbers as PyTorch
(compared in float64), on odd shapes and layouts (0-d, a transposed and a step-sliced leaf, a 0-size
tensor, broadcast operands); then gradcheck and gradgradcheck (the derivative formula run traced,
create_graph), the in-place forms, and the special values (NaN, +-inf, -0.0) in the forward. A row added to the table
is tested here with nothing else to write.
"""
import math
import re

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as F
from support.domains import domain
from support.reference import TOL, assert_close, check_vs_torch, uniform64
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.ops.table import ROWS

PUBLIC = [row for row in ROWS if row.where]
# arguments to pass for a row's parameters in the tests (defaults otherwise)
PARAMS = {"leaky_relu": (0.2,), "elu": (1.5,), "celu": (0.7,), "softplus": (2.0, 1.0), "hardtanh": (-0.6, 0.9)}
# shapes per layout: (input, operands); operands broadcast against the input
LAYOUTS = {
    "0d": ((), ()),
    "odd": ((3, 5), (3, 5)),
    "broadcast": ((2, 3, 4), (3, 1)),
    "T": ((5, 3), (5, 3)),
    "step": ((3, 10), (3, 5)),
    "empty": ((0, 3), (0, 3)),
}


def torch_fn(row):
    """The PyTorch function with the row's name: torch.<name>, else torch.nn.functional.<name>."""
    return getattr(torch, row.name, None) or getattr(TF, row.name)


def tgrad_fn(row):
    return getattr(tgrad, row.name, None) if "torch" in row.where else getattr(F, row.name)


def leaves(row, layout, dtype=tgrad.float64, seed=0):
    """(tgrad leaves, float64 torch leaves) for the input and each operand, from the row's domain."""
    shapes = LAYOUTS[layout]
    out, refs = [], []
    for k, (low, high) in enumerate(domain(row)):
        shape = shapes[0] if k == 0 else shapes[1]
        if layout == "T":
            data = uniform64(shape[::-1], low, high, seed + k).t()
        elif layout == "step" and k == 0:
            data = uniform64((3, 10), low, high, seed + k)[:, ::2]
        else:
            data = uniform64(shape, low, high, seed + k)
        data = data.to(dtype.torch)
        out.append(tgrad.from_torch(data).requires_grad_())
        refs.append(data.to(torch.float64).requires_grad_())
    return out, refs


def check_row(row, y, yr, xs, refs):
    """check_vs_torch, with celu's gradient at PyTorch's precision (it rounds 1/alpha to float32:
    docs/differences.md)."""
    if row.name == "celu":
        assert_close(y, yr)
        g = tgrad.ones_like(y)
        y.backward(g)
        yr.backward(torch.ones_like(yr))
        assert_close(xs[0].grad, refs[0].grad, rtol=max(1e-7, TOL[xs[0].dtype.torch][0]), atol=1e-7)
        return
    check_vs_torch(y, yr, xs, refs)


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64], ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("row", PUBLIC, ids=lambda r: r.name)
def test_row_against_pytorch(row, layout, dtype):
    xs, refs = leaves(row, layout, dtype)
    params = PARAMS.get(row.name, ())
    y = tgrad_fn(row)(*xs, *params)
    yr = torch_fn(row)(*refs, *params)
    assert y.dtype is dtype and tuple(y.shape) == tuple(yr.shape)
    if y.numel() == 0:
        assert_close(y, yr)
        return
    check_row(row, y, yr, xs, refs)


@pytest.mark.parametrize("row", PUBLIC, ids=lambda r: r.name)
def test_row_gradcheck_and_gradgradcheck(row):
    xs, _ = leaves(row, "odd", seed=3)
    xs = [tgrad.from_torch(x.detach().torch()[:2, :3].clone()).requires_grad_() for x in xs]
    params = PARAMS.get(row.name, ())
    fn = lambda *a: tgrad_fn(row)(*a, *params)  # noqa: E731
    assert gradcheck(fn, tuple(xs), fast_mode=True)
    if row.derivative is not None:
        assert gradgradcheck(fn, tuple(xs), fast_mode=True)


SPECIALS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 30.0, -30.0, 800.0]


@pytest.mark.parametrize("row", PUBLIC, ids=lambda r: r.name)
def test_row_special_values(row):
    """Forward values at NaN, +-inf, signed zeros, tiny and huge numbers, in every combination
    for binary rows, bit for bit in the sign of zero and NaN-ness (float64)."""
    n = len(domain(row))
    grid = torch.tensor(SPECIALS, dtype=torch.float64)
    if n == 1:
        args = [grid]
    else:
        mesh = torch.meshgrid(*([grid] * n), indexing="ij")
        args = [m.reshape(-1) for m in mesh]
    params = PARAMS.get(row.name, ())
    got = tgrad_fn(row)(*(tgrad.from_torch(a.clone()) for a in args), *params).torch()
    want = torch_fn(row)(*args, *params)
    close = torch.isclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)
    zero_sign = (got == 0) & (want == 0) & (torch.signbit(got) != torch.signbit(want))
    bad = ~close | zero_sign
    assert not bad.any(), [(tuple(float(a[i]) for a in args), float(got[i]), float(want[i]))
                           for i in bad.nonzero().flatten()[:8].tolist()]


def inplace_call(row, lib, target, others, params):
    """``target.<name>_(...)`` where PyTorch has that method, else ``F.<name>(..., inplace=True)``."""
    if "Tensor" in row.where:
        return getattr(target, row.name + "_")(*others, *params)
    functional = F if lib is tgrad else TF
    return getattr(functional, row.name)(target, *others, *params, inplace=True)


@pytest.mark.parametrize("row", [r for r in PUBLIC if r.inplace], ids=lambda r: r.name)
def test_row_inplace(row):
    """The in-place form writes the out-of-place result into the tensor (fused, no graph), and
    with a graph records the op's node (rebased history) and PyTorch's gradient."""
    xs, refs = leaves(row, "odd", seed=7)
    params = PARAMS.get(row.name, ())
    others, ref_others = [x.detach() for x in xs[1:]], [r.detach() for r in refs[1:]]
    expected = tgrad_fn(row)(*xs, *params).detach()
    target = xs[0].detach().clone()
    assert inplace_call(row, tgrad, target, others, params) is target
    assert_close(target, expected.torch())
    y = xs[0] * 1.0
    yr = refs[0] * 1.0
    inplace_call(row, tgrad, y, others, params)
    inplace_call(row, torch, yr, ref_others, params)
    if not row.inplace_derivative:  # PyTorch has none: both raise the same error in backward
        assert type(y.grad_fn).__name__ == type(yr.grad_fn).__name__
        for t in (y, yr):
            with pytest.raises(NotImplementedError, match="inplace version of"):
                t.sum().backward()
        return
    check_row(row, y, yr, xs[:1], refs[:1])


@pytest.mark.parametrize("row", [r for r in PUBLIC if r.dtypes == "float"], ids=lambda r: r.name)
def test_row_integer_inputs(row):
    """Integer and bool inputs: the default float dtype as PyTorch computes, or PyTorch's error where
    it has no such kernel; the in-place form on an integer tensor is PyTorch's RuntimeError (a
    float result cannot be cast to Long)."""
    params = PARAMS.get(row.name, ())
    for values in ([1, 2, 3], [True, False, True]):
        args = [torch.tensor(values) for _ in domain(row)]
        ours = [tgrad.tensor(values) for _ in domain(row)]
        try:
            yr = torch_fn(row)(*args, *params)
        except (RuntimeError, NotImplementedError) as e:
            with pytest.raises(type(e), match=re.escape(str(e).split("\n")[0])):
                tgrad_fn(row)(*ours, *params)
            continue
        y = tgrad_fn(row)(*ours, *params)
        assert y.dtype.torch is yr.dtype
        assert_close(y, yr.to(torch.float64), rtol=1e-5, atol=1e-6)
    if row.inplace and "Tensor" in row.where and row.no_ints is None:
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            getattr(torch.tensor([1, 2, 3]), row.name + "_")(*(torch.tensor([1, 2, 3]) for _ in row.operands), *params)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            getattr(tgrad.tensor([1, 2, 3]), row.name + "_")(*(tgrad.tensor([1, 2, 3]) for _ in row.operands), *params)


@pytest.mark.parametrize("row", [r for r in PUBLIC if r.operands], ids=lambda r: r.name)
def test_row_number_operands(row):
    """A Python number for an operand: PyTorch's node name and edges where PyTorch takes one,
    PyTorch's TypeError where it refuses."""
    xs, refs = leaves(row, "odd", seed=9)
    for position in range(1, 1 + len(row.operands)):
        number = 0.75
        args = [x if k != position else number for k, x in enumerate(xs)]
        rargs = [r if k != position else number for k, r in enumerate(refs)]
        try:
            yr = torch_fn(row)(*rargs)
        except TypeError:
            with pytest.raises(TypeError, match="must be Tensor, not float"):
                tgrad_fn(row)(*args)
            continue
        y = tgrad_fn(row)(*args)
        check_vs_torch(y, yr, [a for a in args], [r for r in rargs])
