"""Pointwise ops against PyTorch autograd: forward values, input gradients under a random upstream
gradient, result dtypes and grad_fn/next_functions, for every differentiable elementwise op.

Each case runs forward and backward once (kernel launches are the cost under the interpreter) and
compares with torch in float64 on the very same numbers. Domains keep away from kinks and poles,
except the subgradients the spec defines (relu'(0)=0, abs'(0)=0, ...), which have their own test.
"""
import math

import pytest
import torch
import torch.nn.functional as TF

import tgrad
from helpers import assert_close, make_pair, to_torch, uniform64

DTYPES = [tgrad.float32, tgrad.float64]
# name -> (shape of the data, view taken of it); views give non-contiguous leaves
LAYOUTS = {"0d": ((), None), "1": ((1,), None), "7": ((7,), None), "3": ((3,), None), "3x5": ((3, 5), None),
           "3x1": ((3, 1), None), "2x1x4": ((2, 1, 4), None), "0x3": ((0, 3), None),
           "T": ((5, 3), lambda d: d.t()), "step": ((3, 10), lambda d: d[:, ::2])}
UNARY_LAYOUTS = ["0d", "1", "7", "3x5", "0x3", "T", "step"]


def leaf(layout, dtype, low=-2.0, high=2.0, seed=0):
    """(tgrad leaf, torch float64 leaf) with the same values; T/step leaves are non-contiguous."""
    shape, view = LAYOUTS[layout]
    if view is None:
        return make_pair(shape, dtype, low, high, seed=seed)
    data = view(uniform64(shape, low, high, seed).to(dtype.torch))
    x = tgrad.from_torch(data).requires_grad_()
    assert not x.is_contiguous()
    return x, data.to(torch.float64).requires_grad_()


def signature(t):
    """grad_fn type and its edges, as type names (AccumulateGrad, MulBackward0, None)."""
    fn = t.grad_fn
    return type(fn).__name__, tuple((type(n).__name__ if n is not None else None, nr) for n, nr in fn.next_functions)


def check(y, yr, inputs, refs, dtype=None, seed=99):
    """Forward values and graph node as torch, then backward with a random upstream gradient and
    each input's gradient (values, dtype, shape) as torch's."""
    assert_close(y, yr, dtype)
    assert y.requires_grad and signature(y) == signature(yr)
    g, gr = make_pair(y.shape, y.dtype, -1.0, 1.0, requires_grad=False, seed=seed)
    y.backward(g)
    yr.backward(gr)
    for x, r in zip(inputs, refs):
        if isinstance(r, torch.Tensor) and r.requires_grad:
            assert x.grad.dtype is x.dtype
            assert_close(x.grad, r.grad, x.dtype)


# ----------------------------------------------------------------------------- unary

def _pow(e):
    return (lambda x: x ** e), (lambda x: x ** e)


UNARY = {  # name -> (tgrad fn, torch fn, low, high)
    "neg": (tgrad.neg, torch.neg, -2, 2), "abs": (tgrad.abs, torch.abs, -2, 2),
    "exp": (tgrad.exp, torch.exp, -3, 3), "log": (tgrad.log, torch.log, 0.1, 3),
    "sqrt": (tgrad.sqrt, torch.sqrt, 0.1, 3), "rsqrt": (tgrad.rsqrt, torch.rsqrt, 0.1, 3),
    "reciprocal": (tgrad.reciprocal, torch.reciprocal, 0.2, 3),
    "sin": (tgrad.sin, torch.sin, -4, 4), "cos": (tgrad.cos, torch.cos, -4, 4),
    "tanh": (tgrad.tanh, torch.tanh, -3, 3), "sigmoid": (tgrad.sigmoid, torch.sigmoid, -5, 5),
    "relu": (tgrad.relu, torch.relu, -2, 2),
    "gelu": (tgrad.gelu, TF.gelu, -4, 4),
    "gelu_tanh": (lambda x: tgrad.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh"), -4, 4),
    "silu": (tgrad.silu, TF.silu, -5, 5),
    "softplus": (tgrad.softplus, TF.softplus, -5, 5),
    # beta * x crosses the threshold at x = 0.5: both branches are hit
    "softplus_b2_t1": (lambda x: tgrad.softplus(x, beta=2, threshold=1), lambda x: TF.softplus(x, 2, 1), -2, 2),
    "leaky_relu": (tgrad.leaky_relu, TF.leaky_relu, -2, 2),
    "leaky_relu_0.2": (lambda x: tgrad.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), -2, 2),
    "elu": (tgrad.elu, TF.elu, -3, 2),
    "elu_1.5": (lambda x: tgrad.elu(x, alpha=1.5), lambda x: TF.elu(x, alpha=1.5), -3, 2),
    "clamp": (lambda x: tgrad.clamp(x, -0.5, 0.8), lambda x: torch.clamp(x, -0.5, 0.8), -2, 2),
    "clamp_min": (lambda x: x.clamp(min=-0.5), lambda x: x.clamp(min=-0.5), -2, 2),
    "clamp_max": (lambda x: x.clamp(max=0.3), lambda x: x.clamp(max=0.3), -2, 2),
    "clip": (lambda x: x.clip(-1, 1), lambda x: x.clip(-1, 1), -2, 2),
    "pow2": (*_pow(2), -2, 2), "pow3": (*_pow(3), -2, 2), "pow0.5": (*_pow(0.5), 0.1, 3),
    "pow-1": (*_pow(-1), 0.2, 3), "pow0": (*_pow(0), -2, 2), "pow2.5": (*_pow(2.5), 0.1, 3),
    "pow-1.5": (*_pow(-1.5), 0.2, 3),
    "sign": (tgrad.sign, torch.sign, -3, 3), "floor": (tgrad.floor, torch.floor, -3, 3),
    "ceil": (tgrad.ceil, torch.ceil, -3, 3), "round": (tgrad.round, torch.round, -3, 3),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", UNARY_LAYOUTS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name, layout, dtype):
    fn, ref_fn, low, high = UNARY[name]
    x, xr = leaf(layout, dtype, low, high)
    y = fn(x)
    assert y.dtype is dtype and y.shape == tuple(xr.shape)
    check(y, ref_fn(xr), [x], [xr])


@pytest.mark.parametrize("name", ["exp", "gelu", "sigmoid"])
def test_unary_large(name):
    fn, ref_fn, low, high = UNARY[name]
    x, xr = make_pair((300, 700), tgrad.float32, low, high)
    check(fn(x), ref_fn(xr), [x], [xr])


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "gelu", "silu", "sin", "pow2"])
def test_unary_float16_forward(name):
    fn, ref_fn, low, high = UNARY[name]
    x, xr = make_pair((4, 9), tgrad.float16, low, high, requires_grad=False)
    y = fn(x)
    assert y.dtype is tgrad.float16
    assert_close(y, ref_fn(xr), tgrad.float16)


@pytest.mark.parametrize("name", ["neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
                                  "sigmoid", "relu", "abs", "sign", "floor", "ceil", "round"])
def test_unary_tensor_methods(name):
    x, xr = make_pair((2, 3), tgrad.float64, 0.2, 2, requires_grad=False)
    assert_close(getattr(x, name)(), getattr(xr, name)())


# at the kinks: the spec's subgradients, and torch's choices for the rest
KINKS = {
    "relu": (tgrad.relu, torch.relu, [-1.0, 0.0, 0.0, 2.0]),
    "abs": (tgrad.abs, torch.abs, [-1.0, 0.0, 0.0, 2.0]),
    "sqrt": (tgrad.sqrt, torch.sqrt, [0.0, 1.0]),
    "leaky_relu": (lambda x: tgrad.leaky_relu(x, 0.1), lambda x: TF.leaky_relu(x, 0.1), [-1.0, 0.0, 1.0]),
    "elu": (lambda x: tgrad.elu(x, 2.0), lambda x: TF.elu(x, 2.0), [-1.0, 0.0, 1.0]),
    "gelu": (tgrad.gelu, TF.gelu, [0.0]),
    "clamp": (lambda x: x.clamp(-1, 1), lambda x: x.clamp(-1, 1), [-2.0, -1.0, 0.0, 1.0, 2.0]),
    "sign": (tgrad.sign, torch.sign, [-1.0, 0.0, 1.0]),
    "pow2": (*_pow(2), [0.0, -1.0]), "pow0": (*_pow(0), [0.0, -1.0]), "pow0.5": (*_pow(0.5), [0.0, 4.0]),
    "pow-1": (*_pow(-1), [0.0, 2.0]), "pow2.5": (*_pow(2.5), [0.0, 1.0]), "pow3": (*_pow(3), [-2.0, 0.0]),
}


@pytest.mark.parametrize("name", list(KINKS))
def test_subgradients(name):
    fn, ref_fn, values = KINKS[name]
    x = tgrad.tensor(values, dtype=tgrad.float64, requires_grad=True)
    xr = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    check(fn(x), ref_fn(xr), [x], [xr])


def test_relu_and_abs_subgradient_is_zero_at_zero():
    x = tgrad.tensor([0.0, 0.0], requires_grad=True)
    (x.relu() + x.abs()).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_round_half_to_even():
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7, -3.7, 1e17]
    for dtype in DTYPES:
        x = tgrad.tensor(values, dtype=dtype)
        assert x.round().tolist() == torch.tensor(values, dtype=dtype.torch).round().tolist()


def test_round_decimals():
    x, xr = make_pair((6,), tgrad.float64, -3, 3, requires_grad=False)
    assert_close(tgrad.round(x, decimals=2), torch.round(xr, decimals=2))


@pytest.mark.parametrize("approximate", ["bogus"])
def test_gelu_rejects_unknown_approximation(approximate):
    with pytest.raises(RuntimeError, match="approximate"):
        tgrad.gelu(tgrad.ones(2), approximate=approximate)


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        tgrad.clamp(tgrad.ones(2))


@pytest.mark.parametrize("bounds", ["both", "min", "max", "scalar_and_tensor"])
def test_clamp_tensor_bounds(bounds):
    x, xr = leaf("2x1x4", tgrad.float32, -2, 2)
    lo, lor = leaf("3x1", tgrad.float32, -1, 0, seed=1)
    hi, hir = leaf("1", tgrad.float32, 0, 1, seed=2)
    kw, kwr = {"both": ({"min": lo, "max": hi}, {"min": lor, "max": hir}),
               "min": ({"min": lo}, {"min": lor}), "max": ({"max": hi}, {"max": hir}),
               "scalar_and_tensor": ({"min": lo, "max": 0.5}, {"min": lor, "max": torch.tensor(0.5)})}[bounds]
    check(x.clamp(**kw), xr.clamp(**kwr), [x, lo, hi], [xr, lor, hir])
