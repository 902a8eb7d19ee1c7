"""Autograd's semantics as PyTorch defines them, one behaviour per test: the graph (leaves,
grad_fn names, next_functions), backward() and its gradient argument, how .grad accumulates and is
assigned, retain_graph / create_graph and autograd.grad, detach / .data / the grad modes, in-place
ops and version counters, broadcasting and dtypes, tensor hooks, the legacy Variable and reprs.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on the
prefix. Custom ``autograd.Function`` is tested in test_autograd_function.py, hooks and entry points
against PyTorch in test_hooks.py."""
import contextlib
import re
import warnings

import pytest

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from tgrad.autograd import Variable

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
         "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
         "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
         "you need to access saved tensors after calling backward.")
NO_GRAD = "element 0 of tensors does not require grad and does not have a grad_fn"
NOT_SCALAR = "grad can be implicitly created only for scalar outputs"
NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                 "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                 "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                 "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                 "github.com/pytorch/pytorch/pull/30531 for more information.")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def modified_inplace(tag, op, version, expected=0):
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[tgrad.FloatTensor {tag}], which is output 0 of {op}, is at version {version}; expected version "
            f"{expected} instead. Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with tgrad.autograd.set_detect_anomaly(True, check_nan=False).")


@contextlib.contextmanager
def raises(exc_type, message=None, prefix=None):
    """The exception type and its exact ``str()`` (or its beginning)."""
    with pytest.raises(exc_type) as info:
        yield
    text = str(info.value)
    if message is not None:
        assert text == message
    if prefix is not None:
        assert text.startswith(prefix), text


@contextlib.contextmanager
def warns(category, prefix):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    texts = [str(w.message) for w in caught if issubclass(w.category, category)]
    assert any(t.startswith(prefix) for t in texts), texts


@contextlib.contextmanager
def no_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert not caught, [str(w.message) for w in caught]


def vals(t):
    return t.tolist()


def leaf(values):
    return tgrad.tensor(values, requires_grad=True)


# ============================================================================ graph, leaves, grad_fn

def test_factory_tensors_are_leaves_without_grad():
    t = tgrad.ones(2)
    assert (t.requires_grad, t.is_leaf, t.grad_fn) == (False, True, None)
    w = tgrad.ones(2, requires_grad=True)
    assert (w.requires_grad, w.is_leaf, w.grad_fn) == (True, True, None)


def test_result_requires_grad_iff_an_input_does():
    p, x = tgrad.ones(2), tgrad.ones(2, requires_grad=True)
    assert (p + p).is_leaf is True and (p + p).requires_grad is False
    assert (x + 2).is_leaf is False and (x + 2).requires_grad is True
    assert (p * x).requires_grad is True


NAMES = {
    "x+2": ("AddBackward0", lambda x, m, w: x + 2), "x+x": ("AddBackward0", lambda x, m, w: x + x),
    "x-1": ("SubBackward0", lambda x, m, w: x - 1), "1-x": ("RsubBackward1", lambda x, m, w: 1 - x),
    "x*2": ("MulBackward0", lambda x, m, w: x * 2), "2*x": ("MulBackward0", lambda x, m, w: 2 * x),
    "x*w": ("MulBackward0", lambda x, m, w: x * x), "x/2": ("DivBackward0", lambda x, m, w: x / 2),
    "1/x": ("MulBackward0", lambda x, m, w: 1 / x), "-x": ("NegBackward0", lambda x, m, w: -x),
    "x**2": ("PowBackward0", lambda x, m, w: x ** 2),
    "sum()": ("SumBackward0", lambda x, m, w: x.sum()), "sum(0)": ("SumBackward1", lambda x, m, w: x.sum(0)),
    "mean()": ("MeanBackward0", lambda x, m, w: x.mean()), "mean(0)": ("MeanBackward1", lambda x, m, w: x.mean(0)),
    "max()": ("MaxBackward1", lambda x, m, w: x.max()),
    "exp": ("ExpBackward0", lambda x, m, w: x.exp()), "log": ("LogBackward0", lambda x, m, w: x.log()),
    "sqrt": ("SqrtBackward0", lambda x, m, w: x.sqrt()), "tanh": ("TanhBackward0", lambda x, m, w: x.tanh()),
    "sigmoid": ("SigmoidBackward0", lambda x, m, w: x.sigmoid()), "relu": ("ReluBackward0", lambda x, m, w: x.relu()),
    "abs": ("AbsBackward0", lambda x, m, w: x.abs()), "floor": ("FloorBackward0", lambda x, m, w: x.floor()),
    "@": ("MmBackward0", lambda x, m, w: m @ w), "mm": ("MmBackward0", lambda x, m, w: m.mm(w)),
    "matmul": ("MmBackward0", lambda x, m, w: tgrad.matmul(m, w)), "t()": ("TBackward0", lambda x, m, w: m.t()),
    "transpose": ("TransposeBackward0", lambda x, m, w: m.transpose(0, 1)),
    "permute": ("PermuteBackward0", lambda x, m, w: m.permute(1, 0)),
    "unsqueeze": ("UnsqueezeBackward0", lambda x, m, w: x.unsqueeze(0)),
    "squeeze": ("SqueezeBackward0", lambda x, m, w: m[None].squeeze()),
    "expand": ("ExpandBackward0", lambda x, m, w: x.expand(3, 2)),
    "view": ("ViewBackward0", lambda x, m, w: m.view(4)), "reshape": ("ViewBackward0", lambda x, m, w: m.reshape(4)),
    "x[0]": ("SelectBackward0", lambda x, m, w: x[0]), "clone": ("CloneBackward0", lambda x, m, w: x.clone()),
    "cat": ("CatBackward0", lambda x, m, w: tgrad.cat([x, x])),
    "stack": ("StackBackward0", lambda x, m, w: tgrad.stack([x, x])),
    "softmax": ("SoftmaxBackward0", lambda x, m, w: x.softmax(0)),
    "log_softmax": ("LogSoftmaxBackward0", lambda x, m, w: x.log_softmax(0)),
}


@pytest.mark.parametrize("expr", list(NAMES))
def test_grad_fn_names(expr):
    name, fn = NAMES[expr]
    x = leaf([1.5, 2.5])
    m, w = tgrad.ones(2, 2, requires_grad=True), tgrad.ones(2, 2, requires_grad=True)
    g = fn(x, m, w).grad_fn
    assert type(g).__name__ == g.name() == name


def test_inplace_on_a_view_of_a_non_leaf_is_CopySlices():
    y = leaf([1., 2.]) * 2
    y[0] = 5.
    assert y.grad_fn.name() == "CopySlices"


def test_contiguous_on_a_contiguous_tensor_returns_self():
    x = tgrad.ones(2, 2, requires_grad=True)
    assert x.contiguous() is x


def test_next_functions_one_edge_per_differentiable_argument():
    x = tgrad.ones(2, 2, requires_grad=True)
    (acc, nr), const = (x + 2).grad_fn.next_functions
    assert type(acc).__name__ == "AccumulateGrad" and nr == 0 and const == (None, 0)
    edges = ((x + 2) * (x + 2) * 3).mean().grad_fn.next_functions
    assert len(edges) == 1 and edges[0][0].name() == "MulBackward0" and edges[0][1] == 0
    assert (x * tgrad.ones(2, 2)).grad_fn.next_functions[1] == (None, 0)  # a non-grad tensor argument
    assert len(tgrad.cat([x, x, x]).grad_fn.next_functions) == 3


def test_accumulate_grad_node_is_shared_by_every_use_of_a_leaf():
    x = tgrad.ones(2, requires_grad=True)
    a = (x * 2).grad_fn.next_functions[0][0]
    b = (x + 3).grad_fn.next_functions[0][0]
    assert a is b
    assert a.variable is x and a.next_functions == () and a.name() == "torch::autograd::AccumulateGrad"


def test_output_nr_is_the_index_of_the_output():
    m = tgrad.ones(2, 3, requires_grad=True)
    first, second = m.unbind(0)
    assert (first.output_nr, second.output_nr) == (0, 1)
    node, nr = (second * 1).grad_fn.next_functions[0]
    assert node.name() == "UnbindBackward0" and nr == 1
    (second * 2).sum().backward()
    assert vals(m.grad) == [[0., 0., 0.], [2., 2., 2.]]


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


# ============================================================================ detach, .data (grad modes: tests/core/test_modes.py)

def test_detach_is_a_leaf_sharing_storage_and_version():
    x = leaf([1., 2.])
    y = x * 2
    d = y.detach()
    assert d.is_leaf and d.requires_grad is False and d.data_ptr() == y.data_ptr()
    d.zero_()
    assert y._version == 1 and vals(y) == [0., 0.]


def test_inplace_through_detach_is_caught_by_backward():
    x = leaf([1., 2.])
    y = x.exp()
    y.detach().zero_()
    with raises(RuntimeError, modified_inplace("[2]", "Exp", 1)):
        y.sum().backward()


def test_data_does_not_share_the_version_counter():
    x = leaf([1., 2.])
    y = x.exp()
    assert y.data.requires_grad is False
    y.data.zero_()
    assert y._version == 0
    y.sum().backward()  # silently wrong, as in PyTorch
    assert vals(x.grad) == [0., 0.]


def test_assigning_data_replaces_the_contents():
    x = leaf([1., 2.])
    x.data = tgrad.tensor([5., 6., 7.])
    assert repr(x) == "tensor([5., 6., 7.], requires_grad=True)" and x.is_leaf


def test_detach_in_place():
    y = leaf([1., 2.]) * 2
    assert y.detach_() is y
    assert (y.grad_fn, y.requires_grad, y.is_leaf) == (None, False, True)
    v = (leaf([1., 2.]) * 2).view(2)
    with raises(RuntimeError, prefix="Can't detach views in-place. Use detach() instead."):
        v.detach_()


def test_requires_grad_():
    t = tgrad.ones(2)
    assert t.requires_grad_() is t and t.requires_grad
    y = leaf([1., 2.]) * 2
    msg = ("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
           "subgraph that doesn't require differentiation use var_no_grad = var.detach().")
    with raises(RuntimeError, msg):
        y.requires_grad_(False)
    with raises(RuntimeError, msg):
        y.requires_grad = False
    assert y.requires_grad_(True) is y and y.grad_fn.name() == "MulBackward0"
    n = y.detach().requires_grad_()
    assert n.is_leaf and n.requires_grad


# ============================================================================ in-place and versions

def test_inplace_on_a_leaf_that_requires_grad():
    x = leaf([1., 2.])
    for op in (lambda: x.add_(1), lambda: x.zero_()):
        with raises(RuntimeError, LEAF_INPLACE):
            op()
    with raises(RuntimeError, LEAF_INPLACE):
        x += 1


def test_inplace_on_a_view_of_such_a_leaf():
    x = leaf([1., 2.])

    def setitem():
        x[0] = 5.
    for op in (setitem, lambda: x[0].mul_(2), lambda: x.view(2).mul_(2)):
        with raises(RuntimeError, VIEW_OF_LEAF_INPLACE):
            op()
    assert vals(x) == [1., 2.]


def test_inplace_on_a_non_leaf_rebases_its_history():
    x = leaf([1., 2.])
    y = (x * 2).add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    z = x * 2
    z[0] = 0
    assert repr(z) == "tensor([0., 4.], grad_fn=<CopySlices>)"
    z.sum().backward()
    assert vals(x.grad) == [0., 2.]


def test_version_counter():
    t = tgrad.zeros(2)
    seen = [t._version]
    t.add_(1)
    seen.append(t._version)
    t[0] = 3
    seen.append(t._version)
    t.mul_(2)
    seen.append(t._version)
    assert seen == [0, 1, 2, 3]


def test_modified_saved_tensor_is_caught_naming_its_shape_and_version():
    for shape, tag, writes in [((2,), "[2]", 1), ((2,), "[2]", 2), ((2, 2), "[2, 2]", 1)]:
        x = tgrad.ones(*shape, requires_grad=True)
        y = x * 2
        z = y * y
        for _ in range(writes):
            y.add_(1)
        with raises(RuntimeError, modified_inplace(tag, "Add", writes)):
            z.sum().backward()


def test_saved_output_names_its_producer():
    x = leaf([1., 2.])
    y = x.sigmoid()
    y.mul_(2)
    with raises(RuntimeError, modified_inplace("[2]", "Sigmoid", 1)):
        y.sum().backward()


def test_inplace_on_a_tensor_nothing_saved_is_fine():
    x = leaf([1., 2.])
    y = x * 2
    z = y + y
    w = y * 3  # MulBackward0 keeps only the constant
    y.add_(1)
    (z.sum() + w.sum()).backward()
    assert vals(x.grad) == [10., 10.]


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


# ============================================================================ hooks

def test_leaf_hook_replaces_what_accumulates_and_can_be_removed():
    x3 = tgrad.ones(3, requires_grad=True)
    h = x3.register_hook(lambda g: g * 2)
    assert type(h).__name__ == "RemovableHandle"
    (x3 * 1).sum().backward()
    assert vals(x3.grad) == [2., 2., 2.]
    h.remove()
    x3.grad = None
    (x3 * 1).sum().backward()
    assert vals(x3.grad) == [1., 1., 1.]


def test_non_leaf_hook_changes_what_flows_on():
    x = leaf([1., 2.])
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert vals(x.grad) == [80., 160.]


def test_hooks_run_in_registration_order():
    x = tgrad.ones(1, requires_grad=True)
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 1).sum().backward()
    assert vals(x.grad) == [20.]


def test_hook_returning_none_keeps_the_gradient_and_inplace_changes_count():
    x = tgrad.ones(2, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(vals(g)))

    def triple(g):
        g.mul_(3)
    x.register_hook(triple)
    (x * 1).sum().backward()
    assert seen == [[1., 1.]] and vals(x.grad) == [3., 3.]


def test_hook_changing_the_size():
    x = tgrad.ones(2, requires_grad=True)
    x.register_hook(lambda g: g.sum())
    with raises(RuntimeError, "hook '<lambda>' has changed the size of value"):
        (x * 1).sum().backward()

    def my_hook(g):
        return tgrad.ones(3)
    y = leaf([1., 2.]) * 1
    y.register_hook(my_hook)
    with raises(RuntimeError, "hook 'my_hook' has changed the size of value"):
        y.sum().backward()


def test_hook_on_a_non_grad_tensor():
    with raises(RuntimeError, "cannot register a hook on a tensor that doesn't require gradient"):
        tgrad.ones(2).register_hook(lambda g: g)


def test_post_accumulate_grad_hook_sees_the_updated_grad():
    x = tgrad.ones(2, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(vals(t.grad)))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[3., 3.], [6., 6.]]


# ============================================================================ legacy Variable

def test_variable_is_a_detached_alias():
    t = tgrad.ones(2, requires_grad=True)
    v = Variable(t)
    assert type(v) is tgrad.Tensor and v is not t
    assert v.requires_grad is False and v.data_ptr() == t.data_ptr()
    w = Variable(tgrad.ones(2), requires_grad=True)
    assert w.is_leaf and w.requires_grad
    assert isinstance(tgrad.ones(2), Variable) and isinstance(t * 2, Variable)
    assert repr(Variable()) == "tensor([])"


def test_variable_errors_and_warnings():
    with raises(TypeError, "Variable data has to be a tensor, but got list"):
        Variable([1., 2.])
    with warns(UserWarning, "volatile was removed and now has no effect. Use `with tgrad.no_grad():` instead."):
        Variable(tgrad.ones(2), volatile=True)
    with warns(UserWarning, "volatile was removed (Variable.volatile is always False)"):
        assert tgrad.ones(2).volatile is False


def test_creator_is_a_deprecated_alias_of_grad_fn():
    # a departure on purpose (seed 000 reads .creator); PyTorch raises AttributeError
    y = leaf([1., 2.]) * 2
    with warns(DeprecationWarning, ""):
        assert y.creator is y.grad_fn
    with warns(DeprecationWarning, ""):
        assert tgrad.ones(2).creator is None


# ============================================================================ repr of custom nodes

def test_custom_function_and_node_repr():
    class F(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    y = F.apply(tgrad.ones(2, requires_grad=True))
    assert repr(y) == "tensor([2., 2.], grad_fn=<FBackward>)"
    assert re.fullmatch(r"<AddBackward0 object at 0x[0-9a-f]+>", repr((y + 1).grad_fn))


# ============================================================================ the engine at scale

def test_backward_through_a_50000_node_chain_has_no_recursion():
    # views launch no kernel, so the chain is cheap to build; backward must not recurse per node
    x = tgrad.ones(3, requires_grad=True)
    y = x
    for _ in range(50_000):
        y = y.view(-1)
    y.sum().backward()
    assert vals(x.grad) == [1., 1., 1.]
