"""Freed and retained graphs (retain_graph), differentiable gradients (create_graph) and second
derivatives against PyTorch, and autograd.grad's results and errors.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on the
prefix. The same entry points compared case by case with PyTorch: test_autograd_entry_points.py."""
import pytest

import tgrad
from support.autograd_checks import FREED, NO_GRAD, NOT_SCALAR, leaf, raises, vals, warns


# ============================================================================ retain_graph, create_graph, grad

def test_second_backward_through_a_freed_graph():
    x = leaf([1., 2.])
    z = (x * x).sum()
    z.backward()
    with raises(RuntimeError, FREED):
        z.backward()
    m = x * x
    m.sum().backward()
    with raises(RuntimeError, FREED):
        m.grad_fn._saved_self


def test_saved_tensors_are_readable_before_backward():
    x, c = leaf([1., 2.]), tgrad.tensor([3., 4.])
    node = (x * c).grad_fn
    assert node._saved_other is c
    assert vals(x.exp().grad_fn._saved_result) == pytest.approx([2.7182817, 7.3890562])


def test_custom_function_saved_tensors_after_free():
    class Square(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return 2 * a * g

    x = leaf([1., 2.])
    y = Square.apply(x).sum()
    y.backward()
    assert vals(x.grad) == [2., 4.]
    with raises(RuntimeError, FREED):
        y.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = leaf([1., 2.])
    z = (x * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert vals(x.grad) == [4., 8.]


def test_quirk_a_graph_that_saved_nothing_backwards_twice():
    x = leaf([1., 2.])
    z = (x + 1).sum()
    z.backward()
    z.backward()
    assert vals(x.grad) == [2., 2.]


def test_create_graph_gives_differentiable_gradients():
    x = tgrad.tensor(3., requires_grad=True)
    g, = tgrad.autograd.grad(x ** 3, x, create_graph=True)
    assert repr(g) == "tensor(27., grad_fn=<MulBackward0>)"
    assert repr(tgrad.autograd.grad(g, x)) == "(tensor(18.),)"


def test_retain_graph_defaults_to_create_graph():
    x = tgrad.tensor(3., requires_grad=True)
    y = x.exp() * x
    g, = tgrad.autograd.grad(y, x, create_graph=True)
    g2, = tgrad.autograd.grad(y, x)  # the graph was retained
    assert g.item() == pytest.approx(g2.item())


def test_without_create_graph_grads_do_not_require_grad():
    x = tgrad.tensor(3., requires_grad=True)
    g, = tgrad.autograd.grad(x ** 3, x)
    assert g.requires_grad is False and g.grad_fn is None


def test_backward_create_graph_warns_and_grad_has_history():
    x = tgrad.tensor(3., requires_grad=True)
    with warns(UserWarning, "Using backward() with create_graph=True will create a reference cycle between the "
                            "parameter and its gradient which can cause a memory leak. We recommend using "
                            "autograd.grad when creating the graph to avoid this. If you have to use this function, "
                            "make sure to reset the .grad fields of your parameters to None after use to break the "
                            "cycle and avoid the leak."):
        (x ** 3).backward(create_graph=True)
    assert x.grad.requires_grad is True
    assert repr(x.grad) == "tensor(27., grad_fn=<CopyBackwards>)"
    second, = tgrad.autograd.grad(x.grad, x)
    assert second.item() == 18.


def test_second_derivatives_through_common_ops():
    # d/dx of the gradient of sum(f(x)) weighted by w, against values worked out by hand
    x = leaf([0.5, 1.5])
    w = tgrad.tensor([0.3, -0.7])
    y = (x.exp() * x.sin()).sum() + (x * x).tanh().sum() + (x ** 3 / (1 + x)).sum()
    g, = tgrad.autograd.grad(y, x, create_graph=True)
    h, = tgrad.autograd.grad((g * w).sum(), x)
    import math

    def d2(v):  # second derivative of e^v sin v + tanh(v^2) + v^3/(1+v)
        t = math.tanh(v * v)
        sech2 = 1 - t * t
        return (2 * math.exp(v) * math.cos(v) + 2 * sech2 - 8 * v * v * t * sech2
                + (6 * v * (1 + v) ** 2 - 6 * v * v * (1 + v) + 2 * v ** 3) / (1 + v) ** 3)
    assert vals(h) == pytest.approx([0.3 * d2(0.5), -0.7 * d2(1.5)], rel=1e-4)


SECOND_ORDER = {
    "pow": lambda L, x: x ** 3, "exp": lambda L, x: x.exp(), "log": lambda L, x: x.abs().log(),
    "sqrt": lambda L, x: x.abs().sqrt(), "rsqrt": lambda L, x: x.abs().rsqrt(), "1/x": lambda L, x: 1 / x,
    "sin": lambda L, x: x.sin(), "cos": lambda L, x: x.cos(), "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(), "relu": lambda L, x: x.relu() * x, "abs": lambda L, x: x.abs() * x,
    "x*x*x": lambda L, x: x * x * x, "div": lambda L, x: x / (x * x + 1), "pow_tensor": lambda L, x: x.abs() ** x,
    "sum": lambda L, x: x.sum(1) ** 2, "mean": lambda L, x: x.mean(0) ** 2, "max": lambda L, x: x.max() * x,
    "mm": lambda L, x: (x @ x.t()) ** 2, "softmax": lambda L, x: x.softmax(1) * x,
    "log_softmax": lambda L, x: x.log_softmax(1) * x, "clamp": lambda L, x: x.clamp(-1, 1) * x,
    "where": lambda L, x: L.where(x > 0, x * x, x * 3) ** 2, "maximum": lambda L, x: L.maximum(x * x, x) ** 2,
    "x[0]": lambda L, x: x[0] ** 3 + x.sum() ** 2, "x[:, ::2]": lambda L, x: x[:, ::2] ** 3,
    "unbind": lambda L, x: x.unbind(1)[1] ** 3, "cat": lambda L, x: L.cat([x, x * x]) ** 2,
    "var": lambda L, x: x.var(1) * x.sum(), "norm": lambda L, x: x.norm() * x,
}


def _setitem(L, x):
    y = x * 1
    y[0] = x[1] ** 2
    return y ** 3


SECOND_ORDER["y[0]=v"] = _setitem


@pytest.mark.parametrize("op", list(SECOND_ORDER))
def test_second_derivatives_match_pytorch(op):
    import torch
    f = SECOND_ORDER[op]
    data = [[0.7, -1.3, 2.1], [0.4, 1.5, 0.9]]
    weights = [[0.3, -0.2, 0.5], [1.1, 0.6, -0.4]]

    def hessian_vector(L):
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        y = f(L, x)
        g, = L.autograd.grad((y * 0.37).sum(), x, create_graph=True)
        h, = L.autograd.grad((g * L.tensor(weights, dtype=L.float64)).sum(), x)
        return g.detach().reshape(-1).tolist(), h.reshape(-1).tolist()
    ours, theirs = hessian_vector(tgrad), hessian_vector(torch)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-9, abs=1e-12)
    assert ours[1] == pytest.approx(theirs[1], rel=1e-9, abs=1e-12)


def test_grad_returns_a_tuple_and_leaves_grad_alone():
    x = leaf([1., 2.])
    y = x * 2
    r = tgrad.autograd.grad((y * y).sum(), y)  # a non-leaf input
    assert isinstance(r, tuple) and len(r) == 1 and vals(r[0]) == [4., 8.]
    assert x.grad is None


def test_grads_from_several_outputs_are_summed():
    x = leaf([1., 2.])
    g, = tgrad.autograd.grad([(x * x).sum(), (x * 3).sum()], [x])
    assert vals(g) == [5., 7.]
    g, = tgrad.autograd.grad(x * 2, x, grad_outputs=tgrad.tensor([1., 10.]))
    assert vals(g) == [2., 20.]


def test_unused_inputs():
    a, b = leaf([1., 2.]), leaf([1., 2.])
    with raises(RuntimeError, "The differentiated Tensor at index 1 appears to not have been used in the graph. "
                              "Set allow_unused=True if this is the desired behavior."):
        tgrad.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = tgrad.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert vals(ga) == [2., 2.] and gb is None
    ga, gb = tgrad.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
    assert vals(gb) == [0., 0.]
    with raises(ValueError, "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                            "allow_unused=False."):
        tgrad.autograd.grad((a * 2).sum(), [a, b], allow_unused=False, materialize_grads=True)


def test_autograd_grad_errors():
    a = leaf([1., 2.])
    with raises(RuntimeError, "One of the differentiated Tensors does not require grad"):
        tgrad.autograd.grad((a * 2).sum(), [a, tgrad.ones(2)])
    with raises(RuntimeError, NO_GRAD):
        tgrad.autograd.grad(tgrad.ones(2).sum(), [a])
    with raises(RuntimeError, NOT_SCALAR):
        tgrad.autograd.grad(a * 2, [a])
    with raises(RuntimeError, "got 2 tensors and 1 gradients"):
        tgrad.autograd.grad([(a * 2).sum(), (a * 3).sum()], [a], grad_outputs=[tgrad.tensor(1.)])
