"""Pointwise ops against PyTorch autograd: forward values, input gradients under a random upstream
gradient, result dtypes and grad_fn/next_functions, for every differentiable elementwise op.

Each case runs forward and backward once (kernel launches are the cost under the interpreter) and
compares with torch in float64 on the very same numbers. Domains keep away from kinks and poles,
except the subgradients at kinks (relu'(0)=0, abs'(0)=0, ..., as PyTorch), which have their own test.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import tgrad
from support.reference import assert_close, check_vs_torch as check, make_pair, node_signature as signature, uniform64

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


# rows of the op table, with the parameters it passes them: tests/ops/test_op_table.py runs those on
# the layouts and dtypes above (the entries stay here for the tests below)
OP_TABLE_ROWS = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu",
                 "silu", "softplus_b2_t1", "leaky_relu_0.2", "elu_1.5", "sign", "floor", "ceil"}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", UNARY_LAYOUTS)
@pytest.mark.parametrize("name", [n for n in UNARY if n not in OP_TABLE_ROWS])
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


# at the kinks: PyTorch's subgradients
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
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 0.49999999999999994, 3.7, -3.7, 1e17]
    for dtype in DTYPES:
        x = tgrad.tensor(values, dtype=dtype)
        assert x.round().tolist() == torch.tensor(values, dtype=dtype.torch).round().tolist()


def test_round_decimals():
    x, xr = make_pair((6,), tgrad.float64, -3, 3, requires_grad=False)
    assert_close(tgrad.round(x, decimals=2), torch.round(xr, decimals=2))


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(RuntimeError, match="approximate"):
        tgrad.gelu(tgrad.ones(2), approximate="bogus")


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        tgrad.clamp(tgrad.ones(2))


@pytest.mark.parametrize("bounds", ["both", "min", "max", "number_max"])
def test_clamp_tensor_bounds(bounds):
    x, xr = leaf("T", tgrad.float32, -2, 2)
    lo, lor = leaf("3x1", tgrad.float32, -1, 0, seed=1)  # broadcast bounds: gradients are summed back
    hi, hir = leaf("1", tgrad.float32, 0, 1, seed=2)
    args, refs = {"both": ((lo, hi), (lor, hir)), "min": ((lo, None), (lor, None)),
                  "max": ((None, hi), (None, hir)), "number_max": ((lo, 0.5), (lor, torch.tensor(0.5)))}[bounds]
    check(x.clamp(*args), xr.clamp(*refs), [x, *args], [xr, *refs])


def test_clamp_tensor_bounds_where_max_is_below_min():
    x, xr = make_pair((6,), tgrad.float64, -2, 2)
    lo, lor = make_pair((6,), tgrad.float64, 0.5, 1, seed=1)
    hi, hir = make_pair((6,), tgrad.float64, -1, 0.4, seed=2)
    check(tgrad.clamp(x, lo, hi), torch.clamp(xr, lor, hir), [x, lo, hi], [xr, lor, hir])


# ----------------------------------------------------------------------------- binary

BINARY = {  # name -> (tgrad fn, torch fn, (low, high) of a, (low, high) of b)
    "add": (tgrad.add, torch.add, (-2, 2), (-2, 2)),
    "add_alpha": (lambda a, b: tgrad.add(a, b, alpha=0.5), lambda a, b: torch.add(a, b, alpha=0.5), (-2, 2), (-2, 2)),
    "sub": (tgrad.sub, torch.sub, (-2, 2), (-2, 2)),
    "sub_alpha": (lambda a, b: tgrad.sub(a, b, alpha=2), lambda a, b: torch.sub(a, b, alpha=2), (-2, 2), (-2, 2)),
    "mul": (tgrad.mul, torch.mul, (-2, 2), (-2, 2)),
    "div": (tgrad.div, torch.div, (-2, 2), (0.5, 2)),
    "pow": (tgrad.pow, torch.pow, (0.2, 2), (-2, 2)),
    "maximum": (tgrad.maximum, torch.maximum, (-2, 2), (-2, 2)),
    "minimum": (tgrad.minimum, torch.minimum, (-2, 2), (-2, 2)),
}
PAIRS = [("0d", "0d"), ("7", "7"), ("3x5", "3x5"), ("2x1x4", "3x1"), ("3x5", "0d"), ("0d", "3x5"),
         ("1", "7"), ("0x3", "3"), ("T", "step"), ("3x1", "3x5")]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layouts", PAIRS, ids="-".join)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, layouts, dtype):
    fn, ref_fn, (alo, ahi), (blo, bhi) = BINARY[name]
    a, ar = leaf(layouts[0], dtype, alo, ahi)
    b, br = leaf(layouts[1], dtype, blo, bhi, seed=1)
    y = fn(a, b)
    assert y.dtype is dtype
    check(y, ref_fn(ar, br), [a, b], [ar, br])


@pytest.mark.parametrize("name", ["mul", "add", "maximum"])
def test_binary_large_broadcast(name):
    fn, ref_fn, (alo, ahi), (blo, bhi) = BINARY[name]
    a, ar = make_pair((300, 700), tgrad.float32, alo, ahi)
    b, br = make_pair((700,), tgrad.float32, blo, bhi, seed=1)
    check(fn(a, b), ref_fn(ar, br), [a, b], [ar, br])


@pytest.mark.parametrize("name", ["mul", "div", "pow", "add_alpha"])
def test_non_contiguous_upstream_gradient(name):
    """Backward formulas read the upstream gradient through its strides (here a transpose)."""
    fn, ref_fn, (alo, ahi), (blo, bhi) = BINARY[name]
    a, ar = leaf("3x5", tgrad.float64, alo, ahi)
    b, br = leaf("3x1", tgrad.float64, blo, bhi, seed=1)
    gr = uniform64((5, 3), -1, 1, seed=3).t()
    y = fn(a, b).exp()
    y.backward(tgrad.from_torch(gr))
    ref_fn(ar, br).exp().backward(gr)
    assert_close(a.grad, ar.grad)
    assert_close(b.grad, br.grad)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum"])
def test_binary_float16_forward(name):
    fn, ref_fn, (alo, ahi), (blo, bhi) = BINARY[name]
    a, ar = make_pair((4, 9), tgrad.float16, alo, ahi, requires_grad=False)
    b, br = make_pair((9,), tgrad.float16, blo, bhi, requires_grad=False, seed=1)
    y = fn(a, b)
    assert y.dtype is tgrad.float16
    assert_close(y, ref_fn(ar, br), tgrad.float16)


def test_one_operand_without_grad():
    a, ar = make_pair((3, 4), tgrad.float32)
    b, br = make_pair((4,), tgrad.float32, 0.5, 2, requires_grad=False, seed=1)
    for fn, ref_fn in [(tgrad.mul, torch.mul), (tgrad.div, torch.div), (tgrad.pow, torch.pow)]:
        a.grad, ar.grad = None, None
        check(fn(b, a.abs()), ref_fn(br, ar.abs()), [a], [ar])
        assert b.grad is None


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_ties_split_the_gradient(name):
    values = [[1.0, 2.0, 3.0], [2.0, 2.0, 0.0]]
    a, b = (tgrad.tensor(v, dtype=tgrad.float64, requires_grad=True) for v in values)
    ar, br = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values)
    check(getattr(tgrad, name)(a, b), getattr(torch, name)(ar, br), [a, b], [ar, br], seed=5)
    y = getattr(tgrad, name)(a, b)
    a.grad = b.grad = None
    y.backward(tgrad.ones(3, dtype=tgrad.float64))
    assert a.grad.tolist()[1] == 0.5 and b.grad.tolist()[1] == 0.5


@pytest.mark.parametrize("layouts", [("3x5", "3x5", "3x5"), ("3x1", "2x1x4", "0d"), ("0d", "7", "0d"),
                                     ("3x5", "T", "0d")], ids="-".join)
def test_where(layouts):
    c_layout, a_layout, b_layout = layouts
    c = leaf(c_layout, tgrad.float64)[1] > 0
    a, ar = leaf(a_layout, tgrad.float32)
    b, br = leaf(b_layout, tgrad.float32, seed=1)
    cond = tgrad.from_torch(c)
    check(tgrad.where(cond, a, b), torch.where(c, ar, br), [a, b], [ar, br])


def test_where_with_a_number_and_method_form():
    c = torch.tensor([True, False, True])
    a, ar = make_pair((3,), tgrad.float64)
    check(tgrad.where(tgrad.from_torch(c), a, 2.0), torch.where(c, ar, 2.0), [a], [ar])
    assert_close(a.where(tgrad.from_torch(c), -1.0), ar.where(c, -1.0))


def test_where_needs_a_bool_condition():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        tgrad.where(tgrad.ones(2), tgrad.ones(2), tgrad.zeros(2))


SCALAR_FORMS = {  # tensor-number and number-tensor forms, including the reflected operators
    "x+2": lambda x: x + 2, "2+x": lambda x: 2 + x, "x+2.5": lambda x: x + 2.5, "x-1": lambda x: x - 1,
    "1-x": lambda x: 1 - x, "2.5-x": lambda x: 2.5 - x, "x*2": lambda x: x * 2, "2*x": lambda x: 2 * x,
    "x/2": lambda x: x / 2, "1/x": lambda x: 1 / x, "3/x": lambda x: 3 / x, "x**2": lambda x: x ** 2,
    "2**x": lambda x: 2 ** x, "0.5**x": lambda x: 0.5 ** x, "-x": lambda x: -x,
    "pow(2,x)": lambda x: (tgrad if isinstance(x, tgrad.Tensor) else torch).pow(2, x),
    "rsub": lambda x: (tgrad if isinstance(x, tgrad.Tensor) else torch).rsub(x, 2),
    "add(x,2,alpha=3)": lambda x: (tgrad if isinstance(x, tgrad.Tensor) else torch).add(x, 2, alpha=3),
    "x.sub(1,alpha=2)": lambda x: x.sub(1, alpha=2), "x.mul(3)": lambda x: x.mul(3),
    "x.div(4)": lambda x: x.div(4), "x.pow(3)": lambda x: x.pow(3),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", list(SCALAR_FORMS))
def test_scalar_forms(form, dtype):
    x, xr = leaf("3x5", dtype, 0.3, 2)
    y = SCALAR_FORMS[form](x)
    assert y.dtype is dtype
    check(y, SCALAR_FORMS[form](xr), [x], [xr])


def test_spec_node_names():
    x = tgrad.ones(2, requires_grad=True)
    assert signature(x + 2) == ("AddBackward0", (("AccumulateGrad", 0), (None, 0)))
    assert signature(1 - x) == ("RsubBackward1", (("AccumulateGrad", 0),))
    assert signature(x ** 2) == ("PowBackward0", (("AccumulateGrad", 0),))
    assert signature(1 / x)[0] == "MulBackward0" and signature(x / 2)[0] == "DivBackward0"
    assert signature(x * x) == ("MulBackward0", (("AccumulateGrad", 0), ("AccumulateGrad", 0)))
    assert (x + 2).grad_fn.next_functions[0][0] is (x * 2).grad_fn.next_functions[0][0]


# ----------------------------------------------------------------------------- comparisons, logic

COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("name", COMPARE + ["logical_and", "logical_or", "logical_xor"])
def test_comparisons_and_logic_give_bool_without_grad(name):
    # small integers in floats, so that ties (and zeros for the logical ops) occur
    ar = uniform64((3, 4), -2, 2).round().float()
    br = uniform64((4,), -2, 2, seed=1).round().float()
    a, b = tgrad.from_torch(ar).requires_grad_(), tgrad.from_torch(br)
    for got, want in [(getattr(tgrad, name)(a, b), getattr(torch, name)(ar, br)),
                      # (the logical ops take tensors only, as PyTorch's: a number is a TypeError there)
                      (getattr(tgrad, name)(a, 1.0 if name in COMPARE else tgrad.tensor(1.0)),
                       getattr(torch, name)(ar, torch.tensor(1.0))),
                      (getattr(a, name)(b), getattr(ar, name)(br))]:
        assert got.dtype is tgrad.bool and not got.requires_grad and got.grad_fn is None
        assert torch.equal(got.torch(), want)


def test_comparison_operators():
    ar, br = uniform64((5,), -2, 2).round(), uniform64((5,), -2, 2, seed=1).round()
    a, b = tgrad.from_torch(ar).requires_grad_(), tgrad.from_torch(br)
    for op in ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]:
        for other, other_r in [(b, br), (0.0, 0.0)]:
            got = getattr(a, op)(other)
            assert got.dtype is tgrad.bool and not got.requires_grad
            assert torch.equal(got.torch(), getattr(ar, op)(other_r))
    assert torch.equal((2 > a).torch(), 2 > ar) and torch.equal((a.long() == 1).torch(), ar.long() == 1)


def test_logical_ops_on_bool_tensors():
    p, q = torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])
    tp, tq = tgrad.from_torch(p), tgrad.from_torch(q)
    for got, want in [(tp & tq, p & q), (tp | tq, p | q), (tp ^ tq, p ^ q), (~tp, ~p),
                      (tgrad.logical_not(tp), torch.logical_not(p)), (tp & True, p & True),
                      (tgrad.logical_not(tgrad.tensor([0.0, 2.0])), torch.tensor([True, False]))]:
        assert got.dtype is tgrad.bool and torch.equal(got.torch(), want)


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.int64])
def test_special_value_predicates(name, dtype):
    values = [1.5, float("nan"), float("inf"), -float("inf"), 0.0, -2.0, 65504.0]
    ref = torch.tensor(values, dtype=torch.float64) if dtype.is_floating_point else torch.tensor([3, -1, 0, 7])
    ref = ref.to(getattr(torch, str(dtype).split(".")[-1])).reshape(-1, 1).expand(-1, 3).t()  # strided
    x = tgrad.from_torch(ref)
    got = getattr(x, name)()
    assert got.dtype is tgrad.bool and not got.requires_grad
    assert torch.equal(got.torch(), getattr(torch, name)(ref))
    assert torch.equal(getattr(tgrad, name)(x).torch(), getattr(torch, name)(ref))


# ----------------------------------------------------------------------------- relu at special values
# +0 for negatives and -inf, -0.0 and NaN passed through, zero gradient where the output is <= 0 even for an
# inf upstream gradient (found by the drop-in corpus: printed ``-0.`` where PyTorch prints ``0.``)

VALUES = [-1.0, 2.0, float("-inf"), float("nan"), float("inf"), -0.0, 0.0, -1e-30]
UP = [1.0, 1.0, float("inf"), 1.0, 1.0, 1.0, 2.0, float("nan")]


def test_relu_matches_torch_bitwise_on_special_values():
    for dtype, tdtype in ((tgrad.float32, torch.float32), (tgrad.float64, torch.float64)):
        x = tgrad.tensor(VALUES, dtype=dtype, requires_grad=True)
        t = torch.tensor(VALUES, dtype=tdtype, requires_grad=True)
        y, u = tgrad.relu(x), torch.relu(t)
        y.backward(tgrad.tensor(UP, dtype=dtype))
        u.backward(torch.tensor(UP, dtype=tdtype))
        np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
        np.testing.assert_array_equal(np.signbit(y.detach().numpy()), np.signbit(u.detach().numpy()))
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
