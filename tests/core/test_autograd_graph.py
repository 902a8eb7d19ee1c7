"""The autograd graph as PyTorch builds it: leaves, requires_grad, grad_fn names, next_functions and
output_nr, the legacy Variable, the repr of custom nodes, and a backward through a very long chain.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on the
prefix."""
import re

import pytest

import tgrad
from support.autograd_checks import leaf, raises, vals, warns
from tgrad.autograd import Variable


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
