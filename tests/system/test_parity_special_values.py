"""NaN, +-inf, signed zeros, ties and the points where a formula changes branch: forward values and
gradients as PyTorch gives them, each program run on both libraries and compared (values, dtype,
shape, requires_grad, whether and what it raised: ``tests/support/differential.py``). Each test
pins a class of wrong answers the fuzzers or a sweep found."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tgrad
from support.differential import grads, same

NAN, INF = float("nan"), float("inf")


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


@pytest.mark.parametrize("build", [
    lambda L, F, x: F.elu(x), lambda L, F, x: F.elu(x, alpha=0.5), lambda L, F, x: L.selu(x), lambda L, F, x: L.celu(x),
    lambda L, F, x: L.atan2(x, x * 0.0), lambda L, F, x: L.xlogy(x * 0.0, x), lambda L, F, x: L.acosh(x.abs() * 0.0 + 1.0),
])
def test_gradients_at_special_points_follow_pytorch(build):
    """NaN takes the positive branch of elu's kin; atan2 at the origin, xlogy at x = 0 and y <= 0,
    acosh at 1: PyTorch's formulas' values (0, 0, inf)."""
    same(grads(build, [NAN, -1.0, 0.0, 2.0, -0.0]))


@pytest.mark.parametrize("exponent", [0.5, 1.5, -0.5, 7.0, 2.5, -3.0])
def test_powers_at_infinities_and_signed_zeros(exponent):
    same(lambda L, F: L.tensor([INF, -INF, 4.0, -4.0, 0.0, -0.0, NAN, 1.0, -1.0]) ** exponent, signed_zeros=True)
    same(lambda L, F: L.tensor([-INF, INF]) ** L.tensor([NAN, NAN]))


def test_integer_valued_exponents_multiply_exactly():
    same(lambda L, F: L.tensor([2.0, 3.0, -2.0, 0.5, -0.0], dtype=L.float64) ** L.tensor([3.0, 5.0, 3.0, -3.0, -3.0],
                                                                                         dtype=L.float64), signed_zeros=True)
    same(lambda L, F: (L.tensor([2.0, 3.0]) ** L.tensor([3.0, 2.0])).remainder(0.25))


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


@pytest.mark.parametrize("data", [[-INF, 0.0, 2.0], [1.0, 2.0, 3.0], [0.0, 2.0, 3.0], [0.0, 0.0, 3.0],
                                  [2.0, 0.0, INF, 1.0], [NAN, 0.0, 1.0], [1e200, 1e200, 1e-200]])
def test_prod_gradient_with_zeros_and_infinities(data):
    same(grads(lambda L, F, x: x.prod().reshape(1), data))
    same(grads(lambda L, F, x: x.reshape(1, -1).prod(1), data))
    same(grads(lambda L, F, x: L.stack([x, x * 2]).prod(0), data))


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


def test_clamp_by_a_number_keeps_x_on_a_signed_zero_tie():
    for expr in ("L.clamp_min(L.tensor([-0.0, 0.0]), 0.0)", "L.clamp_min(L.tensor([-0.0, 0.0]), -0.0)",
                 "L.clamp_max(L.tensor([-0.0, 0.0]), 0.0)", "L.tensor([-0.0]).clamp_min_(0.0)", "L.tensor([0.0]).clamp_max_(-0.0)"):
        same(lambda L, F: eval(expr), signed_zeros=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_clamp_on_a_signed_zero_tie_keeps_x_unless_one_tensor_bound_is_given(dtype):
    """-0.0 against 0.0 and back: clamp/clip by numbers, or by a tensor minimum and maximum, keep x;
    by one tensor bound PyTorch's clamp is its clamp_min/clamp_max, whose vectorized loop body gives
    the bound (64 elements: all of them in the body; its scalar tail, under one vector or the
    remainder, keeps x: docs/differences.md) and so does tgrad's."""
    def program(L, F):
        x = L.tensor([-0.0, 0.0] * 32, dtype=getattr(L, dtype))
        zero, negative_zero = L.tensor(0.0, dtype=x.dtype), L.tensor(-0.0, dtype=x.dtype)
        return (x.clamp(0.0), x.clamp(max=-0.0), x.clip(-0.0, 0.0), L.clamp(x, 0.0, -0.0),
                x.clamp(zero, zero), x.clamp(negative_zero, negative_zero), x.clone().clamp_(zero, negative_zero),
                x.clamp(min=zero), x.clamp(max=negative_zero), L.clip(x, None, zero), x.clone().clamp_(min=negative_zero),
                L.clamp_min(x, zero), L.clamp_max(x, negative_zero))
    same(program, signed_zeros=True)


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


def test_binary_cross_entropy_target_gradient_at_certain_predictions():
    """d loss / d target is the unclamped log-odds: +-inf where the prediction is 0 or 1 (only the
    loss's own logs are clamped at -100)."""
    def program(L, F):
        p = L.tensor([0.0, 1.0, 0.5, 0.2], dtype=L.float64)
        t = L.tensor([0.3, 0.6, 0.5, 1.0], dtype=L.float64, requires_grad=True)
        loss = F.binary_cross_entropy(p, t)
        loss.backward()
        return loss.detach(), t.grad
    same(program)
