"""Regression tests for the classes of silent wrong answers and crashes found so far (by the fuzzers and sweeps), each
compared against PyTorch on the same program (``tests/support/differential.py``): values, dtype, shape,
requires_grad, and whether (and what type) it raised."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tgrad
from support.differential import same

NAN, INF = float("nan"), float("inf")


def grads(build, *data, dtype="float64"):
    """A program: leaves from ``data``, ``build(L, F, *leaves)`` summed against a fixed upstream
    gradient, then the leaves' gradients (and the forward result)."""
    def program(L, F):
        leaves = [L.tensor(d, dtype=getattr(L, dtype), requires_grad=True) for d in data]
        y = build(L, F, *leaves)
        g = L.tensor(np.linspace(-1.5, 2.0, y.numel()).reshape(tuple(y.shape)), dtype=y.dtype)
        y.backward(g)
        return (y.detach(),) + tuple(x.grad for x in leaves)
    return program


# ----------------------------------------------------------------------------- augmented assignment

def _augmented(op, x, other):
    def program(L, F):
        t = L.tensor(x)
        alias = t
        o = L.tensor(other) if isinstance(other, list) else other
        if op == "**=":
            alias **= o
        elif op == "//=":
            alias //= o
        elif op == "%=":
            alias %= o
        elif op == "&=":
            alias &= o
        elif op == "|=":
            alias |= o
        elif op == "^=":
            alias ^= o
        elif op == "<<=":
            alias <<= o
        elif op == ">>=":
            alias >>= o
        return t, alias is t
    return program


@pytest.mark.parametrize("op,x,other", [
    ("**=", [1.0, 2.0, -3.0], 2), ("**=", [2, 3], [3, 0]), ("//=", [5, -7, 7], 2), ("//=", [5.5, -7.0], 2.0),
    ("%=", [5, -7, 7], 3), ("%=", [5.5, -7.0], [2.0, -3.0]), ("&=", [5, 7], 3), ("|=", [False, True], [True, False]),
    ("^=", [5, 6], [3, 3]), ("<<=", [1, 3], 2), (">>=", [16, -16], [2, 3]), ("//=", [5], 2.0), ("&=", [1.0], 1),
])
def test_augmented_assignment_is_in_place(op, x, other):
    same(_augmented(op, x, other))


@pytest.mark.parametrize("expr", [
    "L.tensor([5., -7., 7.5]) % 3", "L.tensor([5, -7, 7]) % -3", "7 % L.tensor([3, -2, 5])", "7.5 % L.tensor([3., -2.])",
    "5 // L.tensor([3, -2, 2])", "5.0 // L.tensor([3., -2.])", "L.tensor([3, 1, -8]) << 2", "L.tensor([12, -5]) >> 1",
    "L.tensor([3]) >> L.tensor([70])", "L.tensor([-3]) >> 64", "L.tensor([3]) << -1", "L.tensor([True]) << 1",
    "L.tensor([12, 5]) & L.tensor([4, 7])", "L.tensor([12, 5]) | 3", "3 ^ L.tensor([12, 5])", "~L.tensor([12, -5])",
    "~L.tensor([True, False])", "~L.tensor([1.])", "L.tensor([1.5]) & 1", "L.tensor([1.5]) << 1",
    "L.tensor([True]) & 3", "L.tensor([True]) ^ 2", "L.tensor([True, False]) | L.tensor([True, True])",
    "L.bitwise_and(L.tensor([6], dtype=L.int32), 3)", "L.floor_divide(L.tensor([-7, 7]), 2)",
    "L.tensor([True]) // L.tensor([True])", "L.tensor([5]) // L.tensor([2.])",
])
def test_operators_integers_and_bits(expr):
    same(lambda L, F: eval(expr))


def test_floor_division_by_a_tensor_records_no_derivative():
    def program(L, F):
        x = L.tensor([1.5, -2.0], requires_grad=True)
        y = x // 2
        y.sum().backward()
    same(program)
    same(lambda L, F: (L.tensor([1.5, -2.0], requires_grad=True) // 2).requires_grad)


# ----------------------------------------------------------------------------- backward selects

@pytest.mark.parametrize("build", [
    lambda L, F, x: x.clamp(min=0).sqrt(),
    lambda L, F, x: F.relu(x).sqrt(),
    lambda L, F, x: L.where(x > 0, x, L.zeros_like(x)).sqrt(),
    lambda L, F, x: L.maximum(x, L.zeros_like(x)).sqrt(),
    lambda L, F, x: L.minimum(-x, L.zeros_like(x)).neg().sqrt(),
    lambda L, F, x: 1 / x.clamp(max=0),
    lambda L, F, x: F.hardtanh(x, 0.0, 9.0).sqrt(),
    lambda L, F, x: x.clamp_min(0.0).sqrt(),
    lambda L, F, x: (x.clamp(0, 9) ** 0.5),
])
def test_backward_selects_where_pytorch_gives_zero(build):
    same(grads(build, [-1.0, 4.0, 0.0, 2.5]))


@pytest.mark.parametrize("build", [
    lambda L, F, x: F.relu(x),
    lambda L, F, x: F.hardtanh(x),
    lambda L, F, x: x.clamp(-1, 1),
    lambda L, F, x: L.maximum(x, L.tensor([1.0, NAN, 2.0, 0.0], dtype=x.dtype)),
    lambda L, F, x: L.minimum(x, L.tensor([1.0, NAN, 2.0, 0.0], dtype=x.dtype)),
    lambda L, F, x: x.max().reshape(1),
    lambda L, F, x: x.min().reshape(1),
    lambda L, F, x: x.amax().reshape(1),
    lambda L, F, x: x.abs(),
])
def test_gradients_at_nan_follow_pytorch(build):
    same(grads(build, [NAN, 1.0, 3.0, -2.0]))
    same(grads(build, [NAN, 1.0, NAN, 3.0]))


# ----------------------------------------------------------------------------- special values forward

@pytest.mark.parametrize("expr", [
    "F.relu(L.tensor([-INF, -1.0, -0.0, NAN]))", "1 / F.relu(L.tensor([-1.0]))", "L.sign(L.tensor([INF, -INF, NAN, -0.0]))",
    "L.tensor([NAN, 1.0, -3.0]).clamp(0, 2)", "L.tensor([0.5, 1.0]).clamp(min=NAN)", "L.tensor([0.5, 1.0]).clamp(max=NAN)",
    "L.tensor([0.5, 1.0]).clamp(min=L.tensor([NAN, 0.0]))", "L.tensor([0.5, NAN]).clamp(max=L.tensor([1.0, 0.0]))",
    "L.tensor([NAN, 2.0]).clamp_min(1.0)", "F.hardtanh(L.tensor([NAN, 3.0]))", "F.elu(L.tensor([NAN, -INF]))",
    "1 ** L.tensor([NAN, INF])", "L.tensor([1.0, NAN]) ** NAN", "L.tensor([NAN]) ** 0", "L.tensor([-1.0, -2.0]) ** INF",
    "L.tensor([-1.0, -0.5]) ** -INF", "L.pow(L.tensor([1.0, -1.0]), L.tensor([NAN, INF]))",
    "L.tensor([-0.0, -INF, -INF, -INF, -0.0]) ** L.tensor([-1.0, 0.25, -3.0, 3.0, 3.0])",
    "L.tensor([-0.0, -INF, 0.0]) ** L.tensor(-0.5)", "L.tensor([-INF, -0.0]) ** 3",
    "L.round(L.tensor([-0.4, -0.5, 0.5, 1.5, -2.5, -0.0]))", "L.tensor([-0.5, 0.5, -0.0, 3.0]) // INF",
    "L.tensor([-0.5, 0.5, 7.0, -7.0]) // -INF", "L.tensor([7.0, -7.0, 0.0]) // 0.0", "L.tensor([-7.0, 7.5]) // 2.0",
    "L.div(L.tensor([-0.4, 7.0, -7.5]), 2.0, rounding_mode='trunc')", "L.tensor([5.0, -5.0]) % INF",
])
def test_special_values_forward(expr):
    same(lambda L, F: eval(expr), signed_zeros=True)


# ----------------------------------------------------------------------------- booleans and integers

@pytest.mark.parametrize("expr", [
    "L.tensor([True, True, False]) + L.tensor([True, False, False])", "L.tensor([True]) + 1", "-L.tensor([True])",
    "L.tensor([True]) - L.tensor([True])", "L.tensor([True]) - 1", "1 - L.tensor([True])", "L.tensor([1]) - L.tensor([True])",
    "L.tensor([True]) * L.tensor([True, False])", "L.tensor([2]) ** 62", "2 ** L.tensor([62, 3, 0])",
    "L.tensor(2) ** L.tensor([62])", "L.tensor([2]) ** -1", "2 ** L.tensor([-1, -2])", "L.tensor([1, -1, 2]) ** L.tensor([-3, -3, -1])",
    "L.tensor([3, -3]) ** 39", "L.tensor([True]) ** 2", "L.tensor([3]) ** 2.5", "L.tensor([3]) ** True",
    "L.tensor([3]) // 0", "L.tensor([3]) // L.tensor([0])", "L.tensor([3]) % 0", "L.tensor([3]).fmod(0)", "5 % L.tensor([0])",
    "L.tensor([3.]) % 0", "L.tensor([3]) // 0.0", "L.tensor([2 ** 53 + 1]) // 1", "L.tensor([-(2 ** 62) - 3]) // 7",
    "L.tensor([2 ** 62 + 1]) % 10", "L.add(L.tensor([1]), L.tensor([2]), alpha=0.5)", "L.sub(L.tensor([1]), 2, alpha=0.5)",
    "L.add(L.tensor([1.]), L.tensor([1]), alpha=0.5)", "L.add(L.tensor([1]), L.tensor([2]), alpha=3)",
    "L.tensor([True]) ^ 2", "L.tensor([True]) % 2", "L.tensor([3, 4], dtype=L.int32) // 2",
    "L.tensor([True]) ** L.tensor([True])", "L.tensor([True, False]) ** True", "L.tensor([True, False]) ** False",
    "True ** L.tensor([True])",
    "L.ones(2).sub_(True)", "L.tensor([True]).sub_(L.tensor([True]))", "L.ones(2).__isub__(True)",
    "L.tensor([1, 2]).add_(1, alpha=0.5)",
    "L.round(L.tensor([5]), decimals=-1)", "L.round(L.tensor([5, -3]))", "L.round(L.tensor([True]))",
    "L.tensor([1, 2]).trunc_()", "L.tensor([1.0, 2.0]).lerp(L.tensor([0.0, 1.0], dtype=L.float64), 0.5)",
    "L.maximum(L.tensor([1.0]), 2)", "L.logical_and(L.tensor([1.0]), 1)", "L.hypot(L.tensor([1]), 2)",
])
def test_booleans_and_integers(expr):
    same(lambda L, F: eval(expr))


def test_float_base_to_a_bool_exponent():
    same(lambda L, F: 2.0 ** L.tensor([True, False]))
    same(lambda L, F: L.tensor([2.0, 3.0]) ** L.tensor([True, False]))


# ----------------------------------------------------------------------------- promotion and scalars

@pytest.mark.parametrize("scalar", [np.float64(1.5), np.float32(1.5), np.int64(2), np.int32(-3), np.bool_(True)])
def test_numpy_scalars_on_either_side_keep_autograd(scalar):
    def program(L, F):
        x = L.tensor([1.0, -2.0], requires_grad=True)
        ys = [scalar * x, x * scalar, x + scalar, scalar + x, x - scalar, scalar - x, x / scalar]
        assert all(isinstance(y, L.Tensor) for y in ys), [type(y) for y in ys]
        L.stack(ys).sum().backward()
        return [y.detach() for y in ys], x.grad
    same(program)


@pytest.mark.parametrize("expr", [
    "L.tensor([1.0, 2.0]) + np.array([1.0, 2.0])", "L.tensor([1.0, 2.0]) * np.array([3], dtype=np.int64)",
    "L.tensor([1.0, 2.0]) * np.array(3.0)", "L.tensor([1, 2]) - np.array([0.5], dtype=np.float32)",
    "L.tensor([1, 2], dtype=L.int32) < np.array([2, 2])", "L.tensor([1, 2], dtype=L.int32) < np.int64(2)", "L.tensor([1.0], requires_grad=True) + np.array([1.0])",
])
def test_tensor_with_a_numpy_array(expr):
    """PyTorch hands these to NumPy (``__array__``): NumPy's promotion, no autograd."""
    same(lambda L, F: eval(expr))


def test_cat_promotes_over_empty_tensors_and_gives_them_a_gradient():
    same(lambda L, F: L.cat([L.tensor([1, 2]), L.tensor([], dtype=L.float64)]))

    def program(L, F):
        a = L.zeros(0, requires_grad=True)
        b = L.ones(2, 3, requires_grad=True)
        c = L.zeros(0, dtype=L.float64, requires_grad=True)
        y = L.cat([a, b, c])
        y.backward(L.ones_like(y))
        return y.dtype == L.float64, a.grad, b.grad, c.grad
    same(program)


@pytest.mark.parametrize("make", [
    lambda L: L.tensor(np.array(1.5)), lambda L: L.as_tensor(np.array(1.5)), lambda L: L.Tensor(np.array(1.5)),
    lambda L: L.FloatTensor(np.array(1.5)), lambda L: L.nn.Parameter(L.tensor(np.array(1.5))),
    lambda L: L.tensor(L.tensor(2.5).numpy()), lambda L: L.tensor(np.array(3)), lambda L: L.from_numpy(np.array(2.0)),
])
def test_zero_dim_numpy_arrays_stay_zero_dim(make):
    same(lambda L, F: make(L))


# ----------------------------------------------------------------------------- graph and layout

def test_retain_grad_follows_an_in_place_op():
    def program(L, F):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * L.tensor([1.0, -2.0])).sum().backward()
        return y.grad, x.grad
    same(program)


@pytest.mark.parametrize("expr", [
    "(L.ones(3, 4).t() * 1.0).view(-1)", "(L.ones(3, 4).t() * 1.0).stride()", "(L.ones(3, 4).t() + L.ones(4, 3)).stride()",
    "(L.ones(2, 3, 4).permute(2, 0, 1).exp()).stride()", "L.ones(3, 4).t().clone().stride()",
    "L.ones(3, 4).t().contiguous().stride()", "(L.ones(4, 6)[:, ::2] * 2).stride()", "L.ones(3, 4).t().sigmoid().is_contiguous()",
    "(L.ones(3, 4).t() * L.ones(4, 1)).stride()", "L.ones(3, 4).t().reshape(-1).stride()",
])
def test_pointwise_results_keep_the_inputs_layout(expr):
    same(lambda L, F: eval(expr))


def test_flatten_copies_where_pytorch_copies():
    def program(L, F):
        x = L.ones(3, 4).t() * 1.0
        f = x.flatten()
        f[0] = 5.0
        return x, f
    same(program)


@pytest.mark.parametrize("op", ["add_(1)", "mul_(2.0)", "exp_()", "clamp_(0)", "copy_(L.ones(3))", "sub_(L.ones(3))",
                                "fill_(1.0)", "zero_()", "masked_fill_(L.tensor([True, False, True]), 1.0)",
                                "__iadd__(1)"])
def test_in_place_writes_on_expanded_tensors(op):
    same(lambda L, F: eval("L.zeros(1, 3).expand(2, 3)." + op))


# ----------------------------------------------------------------------------- crashes and unclear errors

@pytest.mark.parametrize("features", [(0, 3), (3, 0), (0, 0)])
def test_linear_with_zero_features(features):
    def program(L, F):
        L.manual_seed(0)
        m = L.nn.Linear(*features).double()
        m.bias.data.copy_(L.arange(features[1], dtype=L.float64))
        x = L.ones(2, features[0], dtype=L.float64, requires_grad=True)
        y = m(x)
        y.backward(L.ones_like(y))
        return y, x.grad, m.weight.grad.shape, m.bias.grad
    same(program)


@pytest.mark.parametrize("expr", [
    "L.tensor(1.).movedim(0, 0)", "L.tensor(1.).movedim(0, -1)", "L.tensor(1.).movedim(0, 1)", "L.tensor(1.).narrow(0, 0, 1)",
    "L.tensor(1.).unflatten(0, (1,))", "L.tensor(1.).mT", "L.ones(3).mT", "L.where(L.tensor([True, False, True]))",
    "L.where(L.tensor([[True, False], [False, True]]))", "L.hstack([L.tensor(1.), L.tensor(2.)])",
    "L.vstack([L.tensor(1.), L.tensor(2.)])", "L.hstack([L.tensor(1.), L.ones(2)])", "L.zeros(0).unflatten(0, (-1, 2))",
    "L.tensor([1., 2., 4.]).var(False)", "L.tensor([1., 2., 4.]).std(False)", "L.inner(L.ones(2, 3, 4), L.ones(5, 4))",
    "L.inner(L.arange(6.).reshape(2, 3), L.arange(3.))", "L.inner(L.tensor(2.), L.ones(3))",
    "L.tensor([[1, 2], [3, 4]]) @ L.tensor([[1], [2]])", "L.tensor([1, 2]) @ L.tensor([[1, 2], [3, 4]])",
    "L.tensor([[1, 2], [3, 4]]) @ L.tensor([1, -1])", "L.ones(2, 2, 3, dtype=L.int32) @ L.ones(3, 2, dtype=L.int32)",
    "F.max_pool2d(L.arange(16.).reshape(1, 1, 4, 4), 2, stride=3, padding=1)",
])
def test_errors_and_edge_cases_as_pytorch(expr):
    same(lambda L, F: eval(expr))


def test_bool_mask_setitem_with_another_dtype():
    def program(L, F):
        x = L.zeros(3)
        x[L.tensor([True, False, True])] = L.tensor([1, 2])
        return x
    same(program)


def test_bce_gradient_with_respect_to_the_target_at_zero_and_one():
    same(grads(lambda L, F, x, t: F.binary_cross_entropy(x, t), [0.3, 0.6, 0.5], [0.0, 1.0, 0.25]))


def test_batch_norm_on_a_permuted_hwc_image():
    """The size-1 batch dim of ``img.permute(2, 0, 1).unsqueeze(0)`` has an unusual stride. (PyTorch
    2.13's CPU batch_norm backward is itself wrong when the upstream gradient's layout differs from
    its channels-last output, so the reference gradient is given in that layout.)"""
    def program(L, F):
        img = L.tensor(np.random.RandomState(0).randn(4, 5, 3), requires_grad=True)
        m = L.nn.BatchNorm2d(3).double()
        y = m(img.permute(2, 0, 1).unsqueeze(0))
        g = L.tensor(np.random.RandomState(1).randn(1, 3, 4, 5))
        if L is torch:
            g = g.contiguous(memory_format=torch.channels_last)
        y.backward(g)
        return y.detach(), img.grad, m.weight.grad, m.bias.grad
    same(program)


def test_found_by_the_fuzzer():
    """Single findings of tests/system/test_fuzz.py, kept as regressions."""
    same(lambda L, F: L.zeros(1, 0).expand(2, 0).abs_())  # no overlap error for 0 elements

    def remainder_divisor_grad(L, F):  # PyTorch's floor division: NaN for an infinite dividend
        b = L.tensor([1.25, 2.0], requires_grad=True)
        (L.tensor([INF, 7.0]) % b).sum().backward()
        return b.grad
    same(remainder_divisor_grad)
    same(lambda L, F: L.zeros(2).hypot_(2))  # the number's TypeError before the dtype's error
    for expr in ("L.zeros(0).amax()", "L.zeros(0, 3).amin()", "L.zeros(0, 3).amax(1)", "L.tensor([True]).argmax()",
                 "L.tensor([True, False]).argmin(0)"):
        same(lambda L, F: eval(expr))


def test_gelu_of_integers_raises_as_pytorch():
    for values, dtype in (([1, 0], tgrad.int64), ([True, False], tgrad.bool)):
        with pytest.raises(NotImplementedError, match='GeluKernelImpl" not implemented for'):
            tgrad.nn.functional.gelu(tgrad.tensor(values, dtype=dtype))
        with pytest.raises(NotImplementedError, match='GeluKernelImpl" not implemented for'):
            torch.nn.functional.gelu(torch.tensor(values, dtype=dtype.torch))


# ----------------------------------------------------------------------------- fourth session's sweeps
# Each public method was called on float, integer and bool tensors with a number or tensor of each
# dtype (and with no argument), in place and out of place, against PyTorch: the classes found.

@pytest.mark.parametrize("build", [
    lambda L, F, x: F.elu(x), lambda L, F, x: F.elu(x, alpha=0.5), lambda L, F, x: L.selu(x), lambda L, F, x: L.celu(x),
    lambda L, F, x: L.atan2(x, x * 0.0), lambda L, F, x: L.xlogy(x * 0.0, x), lambda L, F, x: L.acosh(x.abs() * 0.0 + 1.0),
])
def test_gradients_at_special_points_follow_pytorch(build):
    """NaN takes the positive branch of elu's kin; atan2 at the origin, xlogy at x = 0 and y <= 0,
    acosh at 1: PyTorch's formulas' values (0, 0, inf)."""
    same(grads(build, [NAN, -1.0, 0.0, 2.0, -0.0]))


@pytest.mark.parametrize("expr", [
    # bools and integers where PyTorch has no kernel, or computes in another dtype
    "L.tensor([True]) << L.tensor([True])", "L.tensor([True]) >> True", "L.tensor([True]).fmod(True)",
    "L.tensor([True]).remainder(L.tensor([True]))", "L.tensor([True]) % True", "True % L.tensor([True])",
    "L.tensor([True]).clamp(min=0)", "L.tensor([True, False]).clamp(True, False)", "L.tensor([True]).clamp(max=True)",
    "L.tensor([True, False]).clamp(min=L.tensor(True))", "L.tensor([True]).clamp(L.tensor(True), L.tensor(False))",
    "L.tensor([True]).clamp_min(True)", "L.tensor([True, False]).clamp_max(L.tensor([True, True]))",
    "L.tensor([True, False]).square()", "L.tensor([True]).xlogy(True)", "L.xlogy(True, L.tensor([True, False]))",
    "L.tensor([True, False]).median()", "L.tensor([True, False]).median(0)", "L.ones(2, 2, dtype=L.bool).trace()",
    "L.tensor([True, False]).topk(1)", "L.tensor([True, False, True]).mode()", "L.tensor([1.5]).bitwise_not()",
    "L.tensor([1, 2]) @ L.tensor([3, 4])", "L.dot(L.tensor([1, 2]), L.tensor([3, -4]))", "L.inner(L.tensor([1, 2]), L.tensor([3, 4]))",
    "L.mv(L.tensor([[1, 2], [3, 4]]), L.tensor([1, 1]))", "L.tensor([True]) @ L.tensor([True])",
    "L.ones(2, 2, dtype=L.bool) @ L.ones(2, 2, dtype=L.bool)", "L.ones(2, 2, 2, dtype=L.bool) @ L.ones(2, dtype=L.bool)",
    "L.bincount(L.tensor([1.0]))", "L.bincount(L.tensor([True]))", "L.histc(L.tensor([1, 2]))", "L.histc(L.tensor([True]))",
    "L.histc(L.tensor([1.0]), min=2, max=1)", "L.tensor([1, 2]).repeat_interleave(L.tensor([1.0, 2.0]))",
    "L.tensor([1, 2]).repeat_interleave(L.tensor([True, False]))", "L.tensor([1.0]).repeat_interleave(L.tensor([[2]]))",
    "L.quantile(L.tensor([1, 2]), 0.5)", "L.quantile(L.tensor([1.0, 2.0]), L.tensor([0.5], dtype=L.float64))",
    "L.quantile(L.tensor([1.0, 2.0]), 1.5)", "L.quantile(L.tensor([]), 0.5)", "L.tensor([1, 2]).mean(2)",
    "L.tensor([1.0]).mean(dtype=L.int64)",
    # lerp: a 0-d weight is a number in any dtype
    "L.tensor([1.0, 2.0]).lerp(L.tensor([3.0, 5.0]), L.tensor(2))", "L.tensor([1.0]).lerp(L.tensor([3.0]), L.tensor(0.25, dtype=L.float64))",
    "L.tensor([1.0]).lerp(L.tensor([3.0]), L.tensor([0.25], dtype=L.float64))", "L.tensor([1]).lerp(L.tensor([1]), 0.5)",
    # in place: the out-of-place op's checks, in PyTorch's order
    "L.tensor([1, 2]).fmod_(L.tensor([0, 1]))", "L.tensor([True]).fmod_(True)", "L.tensor([1.5, 2.0]).__ipow__(L.tensor(True))",
    "L.tensor([1.5, 2.0]).__ipow__(L.tensor([True, False]))", "L.tensor([True]).hypot_(L.tensor([1]))", "L.tensor([1, 2]).hypot_(L.tensor([1, 2]))",
    "F.silu(L.tensor([1, 2]), inplace=True)", "L.tensor([1]).frac_()", "L.tensor([1]).lerp_(L.tensor([1]), 0.5)",
    "L.tensor([True]).square_()", "L.tensor([1.0]).clamp_()", "L.tensor([True]).clamp_min_(True)",
    "L.tensor([True]) << 1", "L.tensor([True, False]).add_(L.tensor([True, True]))",
    # arguments PyTorch requires or refuses
    "L.tensor([1.0]).flip()", "L.tensor([1.0]).fliplr()", "L.flipud(L.tensor(1.0))", "L.tensor([1.0, 2.0]).tile(2)",
    "L.tile(L.tensor([1.0, 2.0]), 2)", "L.tensor([1.0]).tile()", "L.tensor([1.0]).repeat()", "L.tensor([1.0]).new_zeros()",
    "L.tensor([1.0]).repeat_interleave(2.5)", "L.tensor([1.0, 2.0]).broadcast_to(3)",
])
def test_dtype_and_argument_refusals_as_pytorch(expr):
    same(lambda L, F: eval(expr))


def test_cuda_without_a_cuda_build_raises_torchs_assertion():
    if torch.backends.cuda.is_built():
        pytest.skip("this torch has CUDA")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        tgrad.zeros(2).cuda()


@pytest.mark.parametrize("case", range(4))
def test_in_place_on_a_view_of_a_permuted_base(case):
    """A pointwise result keeps its input's (permuted) layout, so the base of a view may be
    non-contiguous; an in-place op needing a gradient on such a view works as in PyTorch."""
    def program(L, F):
        x = L.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=L.float64, requires_grad=True)
        w = L.tensor([0.5, -2.0], dtype=L.float64, requires_grad=True)
        y = x.t() * 1.0
        if case == 0:
            y[1].mul_(w)
        elif case == 1:
            y[:, 0].mul_(3.0)
            y[1:].mul_(w)
        elif case == 2:
            v = y[1]
            y.mul_(2.0)
            y = v * 1.0
        else:
            y.diagonal().mul_(w)
        y.backward(L.arange(y.numel(), dtype=L.float64).reshape(y.shape) + 1)
        return y.detach(), x.grad, w.grad
    same(program)


def test_in_place_on_a_view_of_a_permuted_base_twice_differentiable():
    def program(L, F):
        x = L.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=L.float64, requires_grad=True)
        y = x.t() * 1.0
        y[1].mul_(y[0])
        (g,) = L.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        return g.detach(), gg
    same(program)


@pytest.mark.parametrize("op", ["mul", "pow", "add", "div", "atan2", "hypot", "sub", "exp", "sin"])
@pytest.mark.parametrize("then", ["nothing", "add_"])
def test_what_in_place_ops_save_as_pytorch(op, then):
    """An in-place op keeps its input's old value for backward, but the written tensor saved again
    (as the other operand, or as the result) is reported when changed, as in PyTorch."""
    def program(L, F):
        x = L.tensor([0.25, 0.5], requires_grad=True)
        a = x * 1.0
        getattr(a, op + "_")(*(() if op in ("exp", "sin") else (a,)))
        if then == "add_":
            a.add_(1)
        a.sum().backward()
        return x.grad
    same(program)


@pytest.mark.parametrize("fn", ["elu", "leaky_relu", "selu", "celu"])
def test_in_place_activations_save_their_result(fn):
    def program(L, F):
        x = L.tensor([0.25, -0.5], requires_grad=True)
        a = x * 1.0
        getattr(F, fn)(a, inplace=True)
        a.add_(1)
        a.sum().backward()
        return x.grad
    same(program)


def test_pow_saves_its_result_when_the_exponent_needs_a_gradient():
    def program(L, F):
        x = L.tensor(0.25, requires_grad=True)
        e = L.tensor(0.5, requires_grad=True)
        y = x ** e
        y.mul_(2.0)
        y.backward()
        return x.grad, e.grad
    same(program)


@pytest.mark.parametrize("exponent", [0.5, 1.5, -0.5, 7.0, 2.5, -3.0])
def test_powers_at_infinities_and_signed_zeros(exponent):
    same(lambda L, F: L.tensor([INF, -INF, 4.0, -4.0, 0.0, -0.0, NAN, 1.0, -1.0]) ** exponent, signed_zeros=True)
    same(lambda L, F: L.tensor([-INF, INF]) ** L.tensor([NAN, NAN]))


def test_median_propagates_nan_and_splits_its_gradient_between_ties():
    for data in ([NAN, 1.0, NAN], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0], [3.0, 1.0, 2.0, 2.0]):
        same(grads(lambda L, F, x: x.median().reshape(1), data))
    same(grads(lambda L, F, x: x.reshape(3, 4).median(1).values, [2.0, NAN, 1.0, NAN, 3.0, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0, 5.0]))
    same(lambda L, F: L.tensor([[2.0, NAN, 1.0, NAN], [3.0, 1.0, 3.0, 1.0]]).median(1).indices)


def test_losses_and_norms_at_nan():
    same(grads(lambda L, F, x: F.smooth_l1_loss(x, x.flip(0)).reshape(1), [NAN, 1.0, 2.0]))
    same(grads(lambda L, F, x: F.smooth_l1_loss(x, x.flip(0)).reshape(1), [INF, -INF, 1.0]))
    same(grads(lambda L, F, x: x.norm(INF).reshape(1), [NAN, 1.0, 2.0]))
    same(grads(lambda L, F, x: x.norm(3).reshape(1), [INF, 1.0, -1.0]))
    same(lambda L, F: L.cdist(L.tensor([[NAN], [1.0], [INF]]), L.tensor([[NAN], [1.0], [INF]])))


@pytest.mark.parametrize("expr", [
    "L.zeros(2).scatter(0, L.tensor([3]), 5)", "L.zeros(0).scatter(0, L.tensor([0]), 5)", "L.zeros(0).diff()",
    "L.zeros(1).diff()", "L.zeros(3, 0).diff(dim=0)", "L.tensor([1, 3, 6]).diff()",
    "L.tensor([True, False, True]).scatter_add(0, L.tensor([0, 0]), L.tensor([True, True]))",
    "L.tensor([True, False]).scatter_add(0, L.tensor([1]), L.tensor([True]))",
])
def test_scatter_and_diff_edges(expr):
    same(lambda L, F: eval(expr))


@pytest.mark.parametrize("op", ["floor_", "ceil_", "trunc_", "round_", "abs_", "neg_", "sign_"])
def test_in_place_on_an_expanded_integer_tensor_is_refused(op):
    """floor_ of an integer has nothing to write, but PyTorch refuses the write all the same."""
    same(lambda L, F: getattr(L.tensor([1]).expand(3), op)())
    same(lambda L, F: getattr(L.tensor([1, -2]), op)())


@pytest.mark.parametrize("kw", [{}, {"decimals": 0}, {"decimals": 2}])
@pytest.mark.parametrize("data", [[True], [3], [1.25, -2.5]])
def test_round_with_decimals_given_has_no_integer_kernel(kw, data):
    same(lambda L, F: L.round(L.tensor(data), **kw))
    same(lambda L, F: L.tensor(data).round_(**kw))


def test_round_in_place():
    same(lambda L, F: L.tensor([1.25, 3.333, -0.4, 2.5]).round_())
    same(lambda L, F: L.tensor([1.25, 3.333]).round_(decimals=1))
    same(grads(lambda L, F, x: (x * 1).round_(), [1.4, 2.6]))


def test_hypot_saves_its_result():
    def program(L, F):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        z = L.hypot(x, L.tensor([2.0, 1.0]))
        z.mul_(2)
        z.sum().backward()
        return x.grad
    same(program)


@pytest.mark.parametrize("expr", [
    "F.smooth_l1_loss(x, x * 0)", "F.huber_loss(x, x * 0)", "F.mse_loss(x, x * 0)", "F.l1_loss(x, x * 0)",
    "F.binary_cross_entropy_with_logits(x, x * 0 + 1)", "F.cross_entropy(x, L.zeros(1, dtype=L.int64))",
    "F.nll_loss(x, L.zeros(1, dtype=L.int64))", "F.layer_norm(x, x.shape[-1:])", "F.linear(x, L.ones(2, 3, dtype=x.dtype))",
    "F.linear(x, L.ones(2, 3, dtype=x.dtype), L.ones(2, dtype=x.dtype))", "F.kl_div(x, x, reduction='batchmean')",
    "F.prelu(x, L.ones(1, dtype=x.dtype))", "F.gumbel_softmax(x)", "F.group_norm(x.reshape(1, 3, 1), 1)",
    "F.batch_norm(x.reshape(1, 3, 1), None, None, training=True)", "F.batch_norm(x.reshape(3, 1), None, None, training=True)", "F.max_pool2d(x.reshape(1, 1, 1, 3), 1)",
    "F.conv2d(x.reshape(1, 1, 1, 3), L.ones(1, 1, 1, 1, dtype=x.dtype))",
])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_nn_functions_on_integers_and_bools(expr, dtype):
    if dtype == "int64" and ("max_pool2d" in expr or "conv2d" in expr):
        pytest.skip("PyTorch computes integer pools and convolutions; tgrad has no such kernels (docs/differences.md)")
    same(lambda L, F: eval(expr, {"L": L, "F": F, "x": L.tensor([[1, 0, 2]]).to(getattr(L, dtype))}))


@pytest.mark.parametrize("data", [[-INF, 0.0, 2.0], [1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0],
                                  [2.0, 0.0, INF, 1.0], [NAN, 0.0, 1.0], [1e200, 1e200, 1e-200]])
def test_prod_gradient_with_zeros_and_infinities(data):
    same(grads(lambda L, F, x: x.prod().reshape(1), data))
    same(grads(lambda L, F, x: x.reshape(1, -1).prod(1), data))
    same(grads(lambda L, F, x: L.stack([x, x * 2]).prod(0), data))


@pytest.mark.parametrize("fn", ["logaddexp", "atan2"])
@pytest.mark.parametrize("bool_first", [False, True])
def test_backward_through_a_bool_operand_raises_where_pytorch_does(fn, bool_first):
    def program(L, F):
        x = L.tensor([0.5, 1.0], requires_grad=True)
        b = L.tensor([True, False])
        y = getattr(L, fn)(*((b, x) if bool_first else (x, b)))
        y.sum().backward()
        return y.detach(), x.grad
    same(program)


@pytest.mark.parametrize("bounds", ["min", "max", "both"])
@pytest.mark.parametrize("bound", [INF, -INF, 1.0, float("nan")])
def test_clamp_by_infinite_tensor_bounds_sends_the_gradient_to_the_bound(bounds, bound):
    """PyTorch's ClampBackward0 with only a minimum sends g to it wherever x < min, min = +inf
    too; with both, only where min < max."""
    def program(L, F):
        x = L.tensor([0.25, -INF, INF, 2.0], dtype=L.float64, requires_grad=True)
        b = L.tensor(bound, dtype=L.float64, requires_grad=True)
        other = L.tensor(INF, dtype=L.float64, requires_grad=True)
        lo, hi = {"min": (b, None), "max": (None, b), "both": (b, other)}[bounds]
        y = L.clamp(x, min=lo, max=hi)
        y.backward(L.tensor([0.5, -1.5, 2.0, 3.0], dtype=L.float64))
        return y.detach(), x.grad, b.grad, other.grad
    same(program)


@pytest.mark.parametrize("fn", ["matmul", "mm", "bmm", "mv", "dot"])
@pytest.mark.parametrize("shapes", [((1, 0), (0, 1)), ((2, 3), (3, 2)), ((0, 3), (3, 2)), ((2, 3), (3, 0)),
                                    ((0,), (0,)), ((2, 0), (0,)), ((2, 3), (3,)), ((0,), (0, 2)), ((3,), (3, 2)),
                                    ((2, 2, 0), (2, 0, 3)), ((0, 2, 3), (0, 3, 2)), ((2, 2, 3), (2, 3, 2)),
                                    ((1, 2, 0), (0, 3))])
def test_bool_matrix_products_are_false_when_empty_and_refused_otherwise(fn, shapes):
    """PyTorch has no bool matmul kernel, but an empty product (no rows, columns or terms) is all
    False before any kernel runs; dot refuses bools whatever their size."""
    same(lambda L, F: getattr(L, fn)(L.ones(*shapes[0], dtype=L.bool), L.ones(*shapes[1], dtype=L.bool)))


@pytest.mark.parametrize("view", ["expand0d", "expand_column", "expand_transposed"])
def test_an_expanded_view_used_after_an_in_place_op_on_its_base_sums_its_gradient(view):
    """The view's history, rebuilt after its base changed, scatters the gradient into the base: the
    elements of an expanded dim share one storage element, whose gradient is their sum."""
    def program(L, F):
        x = L.tensor([[1.0, 2.0], [3.0, -4.0]], dtype=L.float64, requires_grad=True)
        b = x * 1.0
        v = {"expand0d": lambda: b[0, 0].expand(3), "expand_column": lambda: b[:, :1].expand(2, 3),
             "expand_transposed": lambda: b.t().unsqueeze(0).expand(2, 2, 2)}[view]()
        b.mul_(3.0)
        y = v * 2.0
        y.backward(L.tensor(np.random.RandomState(0).uniform(-1, 1, size=tuple(y.shape))))
        return y.detach(), x.grad
    same(program)


def test_a_backward_that_raises_has_already_accumulated_the_leaves_it_reached_first():
    """PyTorch's engine runs a ready leaf's AccumulateGrad before other ready nodes: when a later
    node raises (its saved result was modified in place), that leaf's .grad is already set."""
    def program(L, F):
        x = L.tensor(0.25, requires_grad=True)
        w = L.tensor(0.5, requires_grad=True)
        earlier = w * 2.0  # w's AccumulateGrad made before the norm's node
        y = x.norm()
        y += w
        try:
            y.backward()
        except RuntimeError as exc:
            return type(exc).__name__, x.grad, w.grad, earlier.detach()
        return None, x.grad, w.grad, earlier.detach()
    same(program)


@pytest.mark.parametrize("data, zero_d", [(d, False) for d in ([1.0, 2.0], [1.0, INF], [INF, INF], [-INF, INF])] +
                         [(d, z) for d in ([INF], [-INF], [float("nan")], [3.0]) for z in (False, True)])
@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_gradient_with_no_degrees_of_freedom_left(data, zero_d, fn):
    """Over everything with N - correction <= 0, PyTorch's gradient is g * (NaN where x == mean,
    else inf): an infinite x equal to its (infinite) mean gives NaN."""
    def program(L, F):
        x = L.tensor(data[0] if zero_d else data, dtype=L.float64, requires_grad=True)
        y = getattr(x, fn)(correction=len(data))
        y.backward(L.tensor(0.5, dtype=L.float64))
        return y.detach(), x.grad
    same(program)


@pytest.mark.parametrize("divisor_needs_grad", [False, True])
@pytest.mark.parametrize("changed", ["dividend", "divisor"])
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounded_division_saves_what_its_needed_gradients_read(divisor_needs_grad, changed, mode):
    """PyTorch's DivBackward2 saves the divisor for either gradient and the dividend only for the
    divisor's: changing the dividend in place breaks backward only when the divisor needs a gradient."""
    def program(L, F):
        a = L.tensor([1.5, 2.5], requires_grad=True)
        b = L.tensor([2.0, -3.0], requires_grad=divisor_needs_grad)
        x, d = a * 1.0, b * 1.0
        y = L.div(x, d, rounding_mode=mode)
        (x if changed == "dividend" else d).mul_(2.0)
        try:
            y.sum().backward()
        except RuntimeError as exc:
            return type(exc).__name__, y.grad_fn.name()
        return a.grad, b.grad, y.grad_fn.name()
    same(program)


@pytest.mark.parametrize("weight", [True, False, 3, 0.25])
@pytest.mark.parametrize("needs", ["input", "end", "both"])
@pytest.mark.parametrize("inplace", [False, True])
def test_lerp_backward_with_a_0d_bool_weight_raises_only_for_the_input(weight, needs, inplace):
    """PyTorch's LerpBackward1 computes the input's gradient as g * (1 - weight): a bool weight
    raises there, while the end's gradient (g * weight) is computed."""
    def program(L, F):
        x = L.tensor([0.5, -1.0], dtype=L.float64, requires_grad=needs != "end")
        end = L.tensor(2.0, dtype=L.float64, requires_grad=needs != "input")
        w = L.tensor(weight)
        y = (x * 1.0).lerp_(end, w) if inplace else L.lerp(x, end, w)
        y.backward(L.tensor([0.75, -2.0], dtype=L.float64))
        return y.detach(), x.grad, end.grad
    same(program)


@pytest.mark.parametrize("exponent", [0, 0.0, False, True, 1, 2, 0.5, -1])
def test_powers_by_python_numbers_and_bools(exponent):
    """PyTorch takes x ** False through its general formula (0 * x^-1: NaN at 0), x ** 0 to zeros."""
    same(grads(lambda L, F, x: x ** exponent, [-2.75, -0.0, 0.0, 3.0]))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape_dtype", [((0,), "int64"), ((2, 0), "int64"), ((0,), "bool"), ((3,), "int64"),
                                         ((2, 3), "int64")])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_of_integers_and_empty_tensors(fn, shape_dtype, dim):
    shape, dtype = shape_dtype
    same(lambda L, F: getattr(L.zeros(*shape, dtype=getattr(L, dtype)), fn)(dim))


def test_only_what_a_needed_gradient_reads_is_saved():
    """fmod/remainder's input gradient is g alone, lerp's needs only the weight: changing the other
    operands in place afterwards does not break backward (PyTorch saves only what it reads)."""
    def fmod_divisor_changed(L, F):
        a, b = L.tensor([1.5, 2.0]), L.tensor([2.5, 0.7], requires_grad=True)
        y = L.fmod(b, a) + L.remainder(b, a)
        a.abs_()
        y.sum().backward()
        return b.grad
    same(fmod_divisor_changed)

    def lerp_end_changed(L, F):
        x, e = L.tensor([0.25, 0.5], requires_grad=True), L.tensor([1.0, 2.0])
        y = L.lerp(x, e, L.tensor([0.3, 0.6]))
        e.mul_(2)
        y.sum().backward()
        a = x * 1.0
        a.lerp_(a, 0.3)
        a.sum().backward()
        return x.grad
    same(lerp_end_changed)


def test_a_bool_exponent_refuses_the_base_gradient():
    for build in (lambda L, F, x: x ** L.tensor([True, False]), lambda L, F, x: L.tensor([True, False]) ** x,
                  lambda L, F, x: L.pow(x, L.tensor(True))):
        same(grads(build, [0.5, 2.0]))


def test_in_place_on_a_reshaped_copy_is_not_a_view():
    """reshape of what cannot be viewed is a copy (PyTorch's _unsafe_view, no base): an in-place op
    on it, here giving NaN, does not spill NaN into the gradient of the region it replaced."""
    def program(L, F):
        leaf = L.tensor([[[1.0, 2.25], [-0.75, 2.0]]], requires_grad=True)
        y = leaf.permute(0, 2, 1).flatten()
        y.clamp_(max=1.5)
        y.acos_()
        y.backward(L.ones(4))
        return y.detach(), leaf.grad, y._base is None
    same(program)


def test_xlogy_by_a_number_and_hypot_saves():
    def zero_upstream(L, F):  # PyTorch's x-gradient is xlogy(g, y): 0 where g is 0, even for y < 0
        x = L.tensor([0.25, 0.0], requires_grad=True)
        L.xlogy(x, L.tensor([-0.5, 2.0])).backward(L.tensor([0.0, 0.0]))
        return x.grad
    same(zero_upstream)
    for y in (NAN, 0.0, -1.0, 2.0, INF):
        same(grads(lambda L, F, x: L.xlogy(x, y), [0.0, 1.0, NAN]))
        same(grads(lambda L, F, x: L.xlogy(x, L.tensor(y, dtype=x.dtype)), [0.0, 1.0, NAN]))

    def hypot_other_changed(L, F):  # only b needs a gradient: PyTorch saves b and the result
        a, b = L.tensor([1.5, 2.0]), L.tensor([2.5, 0.7], requires_grad=True)
        z = L.hypot(a, b)
        a.abs_()
        z.sum().backward()
        return b.grad
    same(hypot_other_changed)
    same(grads(lambda L, F, x, y: L.hypot(x, y), [0.0, 3.0, INF, 1e-30], [0.0, 4.0, 1.0, 1e-30]))


@pytest.mark.parametrize("args", [
    "L.tensor([3]), L.tensor([5]), L.tensor(0.5)", "L.tensor(3), L.tensor(5.0), L.tensor(0.5)",
    "L.tensor([3.0]), L.tensor([5.0]), L.tensor(0.5, dtype=L.float64)", "L.tensor(3.0), L.tensor(5.0), L.tensor(0.5, dtype=L.float64)",
    "L.tensor([3.0]), L.tensor([5.0], dtype=L.float64), L.tensor(0.5)", "L.tensor(3), L.tensor(5), L.tensor(True)",
    "L.tensor([1.0, 2.0]), L.tensor([3.0, 5.0]), L.tensor(2)", "L.tensor([1.0]), L.tensor([3.0]), L.tensor([0.25], dtype=L.float64)",
])
def test_lerp_promotes_with_a_zero_dim_weight(args):
    same(lambda L, F: eval(f"L.lerp({args})"))


def test_a_view_sees_the_history_its_base_took_in_place():
    def program(L, F):
        a = L.tensor(0.25, requires_grad=True)
        b = L.tensor([0.5, 2.0])
        s, whole = b[1:], b.squeeze()
        b.fmod_(a)
        (s.sum() + whole.sum()).backward()
        return s.requires_grad, s.is_leaf, whole.requires_grad, a.grad
    same(program)


@pytest.mark.parametrize("expr", ["x.add_(x.t())", "x.add_(x)", "x[0].add_(x[1])", "x[:, 0].add_(x[:, 0])",
                                  "x.reshape(-1)[:2].add_(x.reshape(-1)[1:3])", "x.mul_(x.view(2, 2))", "x.copy_(x.t())",
                                  "x[0].copy_(x[0].flip(0))", "x[:1, :1].remainder_(x[:1, :1].t())"])
def test_in_place_reading_a_partly_overlapping_operand(expr):
    same(lambda L, F: (eval(expr, {"x": L.arange(4.0).reshape(2, 2)}), None)[1])
    def program(L, F):
        x = L.arange(4.0).reshape(2, 2)
        eval(expr, {"x": x})
        return x
    same(program)


def test_rounded_division_saves_its_operands():
    def program(L, F):
        a, b = L.tensor(7.0), L.tensor(2.0, requires_grad=True)
        y = L.div(a, b, rounding_mode="floor")
        a += 1
        y.backward()
        return b.grad
    same(program)


def test_integer_valued_exponents_multiply_exactly():
    same(lambda L, F: L.tensor([2.0, 3.0, -2.0, 0.5, -0.0], dtype=L.float64) ** L.tensor([3.0, 5.0, 3.0, -3.0, -3.0],
                                                                                         dtype=L.float64), signed_zeros=True)
    same(lambda L, F: (L.tensor([2.0, 3.0]) ** L.tensor([3.0, 2.0])).remainder(0.25))


def test_number_to_a_power_saves_its_result_and_a_lerp_weight_aliasing_the_target():
    def pow2(L, F):
        x = L.tensor(0.5, requires_grad=True)
        y = 2.0 ** x
        y.remainder_(0.3)
        y.backward()
        return x.grad
    same(pow2)

    def lerp_weight_is_target(L, F):
        e = L.tensor(2.0, dtype=L.float64, requires_grad=True)
        t = L.tensor(1.0, dtype=L.float64) * 1
        t.lerp_(e, t)
        t.backward()
        return e.grad
    same(lerp_weight_is_target)


@pytest.mark.parametrize("fn", ["tan", "acosh", "asinh", "atanh", "sinh", "cosh", "expm1", "asin", "acos", "atan"])
def test_float32_elementary_functions_as_exact_as_pytorchs(fn):
    """Computed in fp64 inside and rounded once, so chains that amplify an ulp (tan of tan) agree."""
    xs = np.concatenate([np.linspace(-10, 10, 401), np.linspace(1, 30, 301)]).astype(np.float32)
    t = torch.from_numpy(xs)
    ref = getattr(torch, fn)(t.double())
    ours = getattr(tgrad, fn)(tgrad.from_torch(t)).torch().double()
    theirs = getattr(torch, fn)(t).double()
    finite = ref.isfinite() & (ref.abs() > 1e-30) & theirs.isfinite()
    err = lambda r: ((r - ref).abs() / ref.abs())[finite].max().item()  # noqa: E731
    assert err(ours) <= 1.5 * err(theirs) + 1e-9
    assert torch.equal(ours.isnan(), theirs.isnan())


def test_division_edges_found_last():
    for expr in ("L.zeros(0, dtype=L.long) // 0", "L.zeros(0, dtype=L.long) % 0", "L.zeros(0, dtype=L.long).fmod(0)",
                 "5 % L.zeros(0, dtype=L.long)", "L.div(L.zeros(0, dtype=L.long), 0, rounding_mode='trunc')"):
        same(lambda L, F: eval(expr))

    def floor_by_a_number_saves_nothing(L, F):
        x = L.tensor(0.25, requires_grad=True)
        a = x + x
        q = a // 3.0
        a %= q + 1
        a.backward()
        return x.grad
    same(floor_by_a_number_saves_nothing)


def test_clamp_by_a_number_keeps_x_on_a_signed_zero_tie():
    for expr in ("L.clamp_min(L.tensor([-0.0, 0.0]), 0.0)", "L.clamp_min(L.tensor([-0.0, 0.0]), -0.0)",
                 "L.clamp_max(L.tensor([-0.0, 0.0]), 0.0)", "L.tensor([-0.0]).clamp_min_(0.0)", "L.tensor([0.0]).clamp_max_(-0.0)"):
        same(lambda L, F: eval(expr), signed_zeros=True)


@pytest.mark.parametrize("bounds", [(-0.7, 0.7), (0.7, -0.7), (-0.7, None), (None, 0.7), (float("nan"), 1.0)])
def test_half_clamp_gradient_compares_x_with_the_bounds_rounded_to_its_dtype(bounds):
    # fp16(0.7) = 0.7002 > 0.7: PyTorch's ClampBackward1 compares in fp16, so x == fp16(0.7) passes
    # the gradient (first seen on an H200, where the CUDA tests compare half results with PyTorch's)
    lo, hi = bounds

    def clamp_half(L, F):
        x = L.tensor([0.7002, -0.7002, 0.5, 0.71, -5.0, 0.6997], dtype=L.float16, requires_grad=True)
        y = x.clamp(lo, hi)
        y.backward(L.ones_like(y))
        return y, x.grad
    same(clamp_half)


@pytest.mark.parametrize("inplace", [False, True])
def test_half_threshold_compares_in_float32_as_pytorch(inplace):
    # PyTorch's threshold kernel compares fp16 in fp32: x = fp16(0.7) = 0.7002 > 0.7 is kept
    def threshold_half(L, F):
        x = L.tensor([0.7002, -0.7002, 0.5, 0.6997, float("nan")], dtype=L.float16, requires_grad=True)
        y = F.threshold(x * 1, 0.7, -3.0, inplace)
        y.backward(L.ones_like(y))
        return y, x.grad
    same(threshold_half)
