"""Integer and bool operands, Python and NumPy numbers, type promotion, and the dtypes and arguments
PyTorch refuses, on every operator and public method: each program run on both libraries and
compared (values, dtype, shape, requires_grad, whether and what it raised:
``tests/support/differential.py``). The classes found by calling each public method on float,
integer and bool tensors with a number or tensor of each dtype, in place and out of place."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tgrad
from support.differential import grads, same

NAN, INF = float("nan"), float("inf")


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


def test_a_bool_exponent_refuses_the_base_gradient():
    for build in (lambda L, F, x: x ** L.tensor([True, False]), lambda L, F, x: L.tensor([True, False]) ** x,
                  lambda L, F, x: L.pow(x, L.tensor(True))):
        same(grads(build, [0.5, 2.0]))


@pytest.mark.parametrize("exponent", [0, 0.0, False, True, 1, 2, 0.5, -1])
def test_powers_by_python_numbers_and_bools(exponent):
    """PyTorch takes x ** False through its general formula (0 * x^-1: NaN at 0), x ** 0 to zeros."""
    same(grads(lambda L, F, x: x ** exponent, [-2.75, -0.0, 0.0, 3.0]))


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


@pytest.mark.parametrize("args", [
    "L.tensor([3]), L.tensor([5]), L.tensor(0.5)", "L.tensor(3), L.tensor(5.0), L.tensor(0.5)",
    "L.tensor([3.0]), L.tensor([5.0]), L.tensor(0.5, dtype=L.float64)", "L.tensor(3.0), L.tensor(5.0), L.tensor(0.5, dtype=L.float64)",
    "L.tensor([3.0]), L.tensor([5.0], dtype=L.float64), L.tensor(0.5)", "L.tensor(3), L.tensor(5), L.tensor(True)",
    "L.tensor([1.0, 2.0]), L.tensor([3.0, 5.0]), L.tensor(2)", "L.tensor([1.0]), L.tensor([3.0]), L.tensor([0.25], dtype=L.float64)",
])
def test_lerp_promotes_with_a_zero_dim_weight(args):
    same(lambda L, F: eval(f"L.lerp({args})"))


@pytest.mark.parametrize("fn", ["matmul", "mm", "bmm", "mv", "dot"])
@pytest.mark.parametrize("shapes", [((1, 0), (0, 1)), ((2, 3), (3, 2)), ((0, 3), (3, 2)), ((2, 3), (3, 0)),
                                    ((0,), (0,)), ((2, 0), (0,)), ((2, 3), (3,)), ((0,), (0, 2)), ((3,), (3, 2)),
                                    ((2, 2, 0), (2, 0, 3)), ((0, 2, 3), (0, 3, 2)), ((2, 2, 3), (2, 3, 2)),
                                    ((1, 2, 0), (0, 3))])
def test_bool_matrix_products_are_false_when_empty_and_refused_otherwise(fn, shapes):
    """PyTorch has no bool matmul kernel, but an empty product (no rows, columns or terms) is all
    False before any kernel runs; dot refuses bools whatever their size."""
    same(lambda L, F: getattr(L, fn)(L.ones(*shapes[0], dtype=L.bool), L.ones(*shapes[1], dtype=L.bool)))


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


def test_gelu_of_integers_raises_as_pytorch():
    for values, dtype in (([1, 0], tgrad.int64), ([True, False], tgrad.bool)):
        with pytest.raises(NotImplementedError, match='GeluKernelImpl" not implemented for'):
            tgrad.nn.functional.gelu(tgrad.tensor(values, dtype=dtype))
        with pytest.raises(NotImplementedError, match='GeluKernelImpl" not implemented for'):
            torch.nn.functional.gelu(torch.tensor(values, dtype=dtype.torch))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape_dtype", [((0,), "int64"), ((2, 0), "int64"), ((0,), "bool"), ((3,), "int64"),
                                         ((2, 3), "int64")])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_of_integers_and_empty_tensors(fn, shape_dtype, dim):
    shape, dtype = shape_dtype
    same(lambda L, F: getattr(L.zeros(*shape, dtype=getattr(L, dtype)), fn)(dim))


@pytest.mark.parametrize("kw", [{}, {"decimals": 0}, {"decimals": 2}])
@pytest.mark.parametrize("data", [[True], [3], [1.25, -2.5]])
def test_round_with_decimals_given_has_no_integer_kernel(kw, data):
    same(lambda L, F: L.round(L.tensor(data), **kw))
    same(lambda L, F: L.tensor(data).round_(**kw))


def test_round_in_place():
    same(lambda L, F: L.tensor([1.25, 3.333, -0.4, 2.5]).round_())
    same(lambda L, F: L.tensor([1.25, 3.333]).round_(decimals=1))
    same(grads(lambda L, F, x: (x * 1).round_(), [1.4, 2.6]))


@pytest.mark.parametrize("op", ["floor_", "ceil_", "trunc_", "round_", "abs_", "neg_", "sign_"])
def test_in_place_on_an_expanded_integer_tensor_is_refused(op):
    """floor_ of an integer has nothing to write, but PyTorch refuses the write all the same."""
    same(lambda L, F: getattr(L.tensor([1]).expand(3), op)())
    same(lambda L, F: getattr(L.tensor([1, -2]), op)())


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


@pytest.mark.parametrize("make", [
    lambda L: L.tensor(np.array(1.5)), lambda L: L.as_tensor(np.array(1.5)), lambda L: L.Tensor(np.array(1.5)),
    lambda L: L.FloatTensor(np.array(1.5)), lambda L: L.nn.Parameter(L.tensor(np.array(1.5))),
    lambda L: L.tensor(L.tensor(2.5).numpy()), lambda L: L.tensor(np.array(3)), lambda L: L.from_numpy(np.array(2.0)),
])
def test_zero_dim_numpy_arrays_stay_zero_dim(make):
    same(lambda L, F: make(L))


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
