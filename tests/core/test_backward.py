"""backward() and its gradient argument, how .grad accumulates, is assigned and retained, and the
gradients backward gives across broadcasting, dtypes and subgradients, as PyTorch defines them.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on the
prefix."""
import numpy as np
import pytest
import torch

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from support.autograd_checks import NO_GRAD, NON_LEAF_GRAD, leaf, no_warnings, raises, vals, warns


# ============================================================================ backward()

def test_scalar_backward():
    x = tgrad.ones(2, 2, requires_grad=True)
    ((x + 2) * (x + 2) * 3).mean().backward()
    assert vals(x.grad) == [[4.5, 4.5], [4.5, 4.5]]


def test_any_numel_1_tensor_and_a_leaf_itself():
    a, b = tgrad.ones(1, requires_grad=True), tgrad.ones(1, 1, requires_grad=True)
    (a * 3).backward()
    (b * 2).backward()
    assert vals(a.grad) == [3.] and vals(b.grad) == [[2.]]
    s = tgrad.tensor(2., requires_grad=True)
    s.backward()
    assert repr(s.grad) == "tensor(1.)"


def test_vector_jacobian_product():
    x = leaf([1., 2., 3.])
    (x * 2).backward(tgrad.tensor([1., .1, .01]))
    assert vals(x.grad) == pytest.approx([2., .2, .02])


def test_gradient_of_another_dtype_is_accepted():
    x = leaf([1., 2., 3.])
    (x * 2).backward(tgrad.ones(3, dtype=tgrad.float64))
    (x * 2).backward(tgrad.tensor([1, 1, 1]))
    assert vals(x.grad) == [4., 4., 4.] and x.grad.dtype is tgrad.float32


def test_a_non_differentiable_output_gives_the_same_error():
    class Halves(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            flag = (a > 1).to(a.dtype)
            ctx.mark_non_differentiable(flag)
            return a * 0.5, flag

        @staticmethod
        def backward(ctx, g, _):
            return g * 0.5

    half, flag = Halves.apply(leaf([1., 2.]))
    assert half.requires_grad and not flag.requires_grad
    with raises(RuntimeError, NO_GRAD):
        flag.sum().backward()


def test_backward_inputs_restricts_accumulation():
    w, v = leaf([1., 2.]), leaf([3., 4.])
    (w * v).sum().backward(inputs=[w])
    assert vals(w.grad) == [3., 4.] and v.grad is None
    with raises(RuntimeError, "`inputs` argument to `backward()` cannot be empty."):
        (w * v).sum().backward(inputs=[])


def test_autograd_backward_sums_several_roots():
    w = leaf([1., 2.])
    tgrad.autograd.backward([(w * w).sum(), (w * 3).sum()])
    assert vals(w.grad) == [5., 7.]


# ============================================================================ .grad

def test_gradients_accumulate_into_the_same_grad_object():
    w = leaf([1., 2.])
    seen = []
    for _ in range(3):
        (w * w).sum().backward()
        seen.append((vals(w.grad), w.grad))
    assert [v for v, _ in seen] == [[2., 4.], [4., 8.], [6., 12.]]
    assert all(g is seen[0][1] for _, g in seen)
    assert w.grad.requires_grad is False


def test_diamond_sums_both_paths():
    x = tgrad.tensor(2., requires_grad=True)
    (x * 3 + x * x).backward()
    assert x.grad.item() == 7.


def _meeting_gradients(lib, keep):
    """A graph whose gradients meet in one node's input buffer four times, against PyTorch."""
    rng = np.random.default_rng(3)
    x0, a0, up0 = rng.standard_normal(6), rng.standard_normal(6), rng.standard_normal(6)
    x = lib.tensor(x0, requires_grad=True)
    a, up = lib.tensor(a0), lib.tensor(up0)
    y = x.exp()
    parts = [y * a, y * 2.0, y.sin(), y / 3.0, y.tanh()]
    # the newest part runs first: its gradient is the first in y's buffer, the one others add to
    parts[-1].grad_fn.register_hook(lambda grad_inputs, grad_outputs: keep.append(grad_inputs[0]))
    sum(parts).backward(up)
    return x.grad.numpy()


def test_gradients_meeting_in_a_buffer_sum_as_pytorchs():
    """Where gradients meet, the engine sums into the buffer in place when nothing else holds it;
    a gradient a hook kept is not summed into (it is held elsewhere), as in PyTorch."""
    kept, kept_torch = [], []
    got, want = _meeting_gradients(tgrad, kept), _meeting_gradients(torch, kept_torch)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(kept[0].numpy(), kept_torch[0].numpy(), rtol=1e-12, atol=1e-15)


def test_reset_grad():
    w = leaf([1., 2.])
    (w * w).sum().backward()
    w.grad.zero_()
    assert vals(w.grad) == [0., 0.]
    w.grad = None
    assert w.grad is None
    c = tgrad.ones(2)
    (w * c).sum().backward()
    assert c.grad is None and vals(w.grad) == [1., 1.]


def test_zero_grad_defaults_to_set_to_none():
    model = nn.Linear(2, 1)
    model(tgrad.ones(1, 2)).sum().backward()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model(tgrad.ones(1, 2)).sum().backward()
    opt = optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_assigning_grad_is_checked():
    w = leaf([1., 2.])
    with raises(RuntimeError, "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. Please "
                              "ensure that the gradient and the tensor are the same size"):
        w.grad = tgrad.ones(3)
    with raises(TypeError, "assigned grad expected to be a Tensor or None but got grad of type float"):
        w.grad = 1.0
    with raises(RuntimeError, prefix="attempting to assign a gradient with dtype 'double' to a tensor with "
                                     "grad_dtype 'Float'."):
        w.grad = tgrad.ones(2, dtype=tgrad.float64)
    w.grad = tgrad.full((2,), 5.)
    assert vals(w.grad) == [5., 5.]


def test_non_leaf_grad_warns_and_is_none():
    w = leaf([1., 2.])
    y = w * 2
    with warns(UserWarning, NON_LEAF_GRAD):
        assert y.grad is None


def test_no_warning_for_leaves_retained_and_no_grad_results():
    w = leaf([1., 2.])
    r = w * 2
    r.retain_grad()
    with tgrad.no_grad():
        n = w * 2
    with no_warnings():
        assert w.grad is None and r.grad is None and n.grad is None


def test_retain_grad():
    x = leaf([1., 2.])
    y = x * 3
    assert y.retains_grad is False
    y.retain_grad()
    (y * y).sum().backward(retain_graph=True)
    assert vals(y.grad) == [6., 12.] and y.retains_grad is True
    (y * y).sum().backward()  # accumulates
    assert vals(y.grad) == [12., 24.]
    x.retain_grad()  # a leaf: nothing to do
    assert x.retains_grad is False


def test_retained_grad_is_the_value_after_hooks():
    x = leaf([1., 2.])
    y = x * 3
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    assert vals(y.grad) == [61., 121.] and vals(x.grad) == [183., 363.]


def test_retain_grad_on_a_non_grad_tensor():
    with raises(RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"):
        tgrad.ones(2).retain_grad()


# ============================================================================ broadcasting and dtypes

def test_broadcast_gradients_are_summed_back():
    a, b = tgrad.ones(2, 3, requires_grad=True), tgrad.ones(3, requires_grad=True)
    c, s = tgrad.ones(2, 1, requires_grad=True), tgrad.tensor(1., requires_grad=True)
    (a * b + c * s).sum().backward()
    assert vals(a.grad) == [[1.] * 3] * 2
    assert vals(b.grad) == [2., 2., 2.] and b.grad.shape == (3,)
    assert vals(c.grad) == [[3.], [3.]] and c.grad.shape == (2, 1)
    assert repr(s.grad) == "tensor(6.)"
    e = tgrad.ones(1, 3, requires_grad=True)
    e.expand(4, 3).sum().backward()
    assert vals(e.grad) == [[4., 4., 4.]]


def test_integer_results_silently_do_not_require_grad():
    x = leaf([1., 3., 2.])
    for r in (x.argmax(), x > 1, x.long()):
        assert r.requires_grad is False and r.grad_fn is None


def test_subgradients():
    z = leaf([0., 1.])
    assert vals(tgrad.autograd.grad(z.relu().sum(), z)[0]) == [0., 1.]
    assert vals(tgrad.autograd.grad(z.abs().sum(), z)[0]) == [0., 1.]
    assert vals(tgrad.autograd.grad(z.sqrt().sum(), z)[0]) == [float("inf"), 0.5]
    t = leaf([1., 3., 3.])
    t.max().backward()
    assert vals(t.grad) == [0., .5, .5]
    t.grad = None
    t.max(0).values.backward()
    assert vals(t.grad) == [0., 1., 0.]
