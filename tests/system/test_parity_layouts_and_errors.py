"""Layouts (permuted images, flatten's copies, results keeping their input's strides), empty and
out-of-range shapes, and the errors of edge-case calls, as in PyTorch: each program run on both
libraries and compared (values, dtype, shape, requires_grad, whether and what it raised:
``tests/support/differential.py``)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tgrad
from support.differential import grads, same

NAN, INF = float("nan"), float("inf")


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


def test_bool_mask_setitem_with_another_dtype():
    def program(L, F):
        x = L.zeros(3)
        x[L.tensor([True, False, True])] = L.tensor([1, 2])
        return x
    same(program)


@pytest.mark.parametrize("expr", [
    "L.zeros(2).scatter(0, L.tensor([3]), 5)", "L.zeros(0).scatter(0, L.tensor([0]), 5)", "L.zeros(0).diff()",
    "L.zeros(1).diff()", "L.zeros(3, 0).diff(dim=0)", "L.tensor([1, 3, 6]).diff()",
    "L.tensor([True, False, True]).scatter_add(0, L.tensor([0, 0]), L.tensor([True, True]))",
    "L.tensor([True, False]).scatter_add(0, L.tensor([1]), L.tensor([True]))",
])
def test_scatter_and_diff_edges(expr):
    same(lambda L, F: eval(expr))


def test_bce_gradient_with_respect_to_the_target_at_zero_and_one():
    same(grads(lambda L, F, x, t: F.binary_cross_entropy(x, t), [0.3, 0.6, 0.5], [0.0, 1.0, 0.25]))


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


def test_cuda_without_a_cuda_build_raises_torchs_assertion():
    if torch.backends.cuda.is_built():
        pytest.skip("this torch has CUDA")
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        tgrad.zeros(2).cuda()


@pytest.mark.parametrize("expr", [
    "L.zeros(0, 3).index_select(0, L.tensor([0]))", "L.zeros(3, 0).index_select(1, L.tensor([0, 1]))",
    "L.zeros(0, 3).index_select(0, L.tensor([], dtype=L.int64))", "L.zeros(0, 3).index_select(1, L.tensor([2]))",
    "L.zeros(0, 3).gather(0, L.zeros(0, 3, dtype=L.int64))", "L.inner(L.zeros(2, 0), L.zeros(3, 0))",
    "L.inner(L.zeros(2, 1, 0), L.zeros(3, 0))", "L.zeros(2, 3, 0) @ L.zeros(0, 4)", "L.zeros(0) @ L.zeros(2, 0, 4)",
    "L.tensordot(L.zeros(2, 0), L.zeros(0, 3), 1)", "L.einsum('ij,jk->ik', L.zeros(2, 0), L.zeros(0, 3))",
])
def test_zero_size_operands_of_index_select_gather_and_products(expr):
    same(lambda L, F: eval(expr))


@pytest.mark.parametrize("expr", [
    "L.zeros(2, 3).index_select(1, L.tensor([3]))", "L.zeros(2, 3).index_select(0, L.tensor([-1]))",
    "L.zeros(2, 3, 4).index_select(2, L.tensor([4]))", "L.zeros(0).index_select(0, L.tensor([0]))",
    "L.zeros(2, 3, 0).index_select(1, L.tensor([3]))", "L.zeros(2, 0, 4).index_select(2, L.tensor([-1]))",
    "L.zeros(2, 0).index_select(1, L.tensor([], dtype=L.int64))", "L.tensor(1.).index_select(0, L.tensor([0, 0]))",
    "L.tensor(1.).index_select(0, L.tensor([1]))",
])
def test_index_select_out_of_range_raises_as_pytorchs_path_does(expr):
    """PyTorch checks the indices on one of three paths (an empty x, dim 1 of a 2+-d x, the rest),
    raising RuntimeError on the first two and IndexError on the third (found by the fuzzer)."""
    same(lambda L, F: eval(expr))
