"""Tensor hooks: register_hook on leaves and non-leaves (what they change, their order, removal, size
checks), hooks with retain_grad, and post-accumulate-grad hooks.

The single behaviours first, with PyTorch's exact messages; then scenarios written once and run
with ``L = torch`` and ``L = tgrad`` (support/scenarios.py): hooks on tensors used twice, on one
output of a multi-output op, under create_graph and in autograd.grad, retain_grad with in-place
hooks, post-accumulate hooks."""
import pytest
import torch

import tgrad
from support.autograd_checks import leaf as tgrad_leaf, raises, vals
from support.scenarios import Scenarios, as_torch, leaf, res, run

scen = Scenarios()


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
    x = tgrad_leaf([1., 2.])
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
    y = tgrad_leaf([1., 2.]) * 1
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


@scen
def hook_on_leaf_used_twice_runs_once(L):
    x = leaf(L, [1., 2.])
    calls = []
    x.register_hook(lambda g: calls.append(g.tolist()))
    (x * x + x * 3).sum().backward()
    return calls, res(x.grad)


@scen
def hook_on_nonleaf_used_twice_runs_once_on_the_sum(L):
    x = leaf(L, [1., 2.])
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(g.tolist()))
    (y * y + y).sum().backward()
    return calls, res(x.grad)


@scen
def nonleaf_hook_removed(L):
    x = leaf(L, [1., 2.])
    y = x * 2
    h = y.register_hook(lambda g: g * 100)
    h.remove()
    h.remove()
    (y * y).sum().backward()
    return res(x.grad)


@scen
def handle_as_context_manager(L):
    x = leaf(L, [1., 2.])
    with x.register_hook(lambda g: g * 5):
        (x * 1).sum().backward()
    (x * 1).sum().backward()
    return res(x.grad)


@scen
def hooks_run_in_autograd_grad_for_leaf_inputs(L):
    x = leaf(L, [1., 2.])
    x.register_hook(lambda g: g * 10)
    g, = L.autograd.grad((x * x).sum(), x)
    return res(g), res(x.grad)


@scen
def hooks_run_in_autograd_grad_for_nonleaf_inputs(L):
    x = leaf(L, [1., 2.])
    y = x * 3
    y.register_hook(lambda g: g * 10)
    g, = L.autograd.grad((y * y).sum(), y)
    return res(g)


@scen
def hook_on_one_output_of_a_multi_output_op(L):
    x = leaf(L, [[1., 2.], [3., 4.]])
    a, b = x.unbind(0)
    b.register_hook(lambda g: g * 7)
    (a * b).sum().backward()
    return res(x.grad)


@scen
def hook_sees_gradient_with_history_under_create_graph(L):
    x = leaf(L, [1., 2.])
    y = x * x
    seen = []
    y.register_hook(lambda g: seen.append(g.requires_grad))
    g, = L.autograd.grad((y * y).sum(), x, create_graph=True)
    return seen, res(g)


@scen
def hook_replacing_grad_under_create_graph_is_differentiated(L):
    x = leaf(L, [1., 2.])
    y = x * x
    y.register_hook(lambda g: g * y)
    g, = L.autograd.grad(y.sum(), x, create_graph=True)
    h, = L.autograd.grad(g.sum(), x)
    return res(g), res(h)


@scen
def hook_in_place_on_nonleaf(L):
    x = leaf(L, [1., 2.])
    y = x * 2
    def h(g):
        g.add_(1)
    y.register_hook(h)
    (y * 3).sum().backward()
    return res(x.grad)


@scen
def hook_registered_during_backward_of_another(L):
    x = leaf(L, [1., 2.])
    y = x * 2
    z = y * 3
    calls = []
    def outer(g):
        calls.append('outer')
        y.register_hook(lambda g2: calls.append('inner') or g2 * 2)
    z.register_hook(outer)
    z.sum().backward()
    return calls, res(x.grad)


@scen
def leaf_hook_with_retain_grad_and_grad_accumulation(L):
    x = leaf(L, [1., 2.])
    x.register_hook(lambda g: g * 2)
    (x * 1).sum().backward()
    (x * 2).sum().backward()
    return res(x.grad)


@scen
def retain_grad_then_hook_in_place(L):
    x = leaf(L, [1., 2.])
    y = x * 3
    y.retain_grad()
    def h(g):
        g.mul_(2)
    y.register_hook(h)
    (y * y).sum().backward()
    return res(y.grad), res(x.grad)


@scen
def retain_grad_under_create_graph(L):
    x = leaf(L, [1., 2.])
    y = x * x
    y.retain_grad()
    (y * y).sum().backward(create_graph=True)
    return res(y.grad), res(x.grad)


@scen
def post_acc_hook_on_nonleaf_error(L):
    x = leaf(L, [1., 2.])
    (x * 2).register_post_accumulate_grad_hook(lambda t: None)


@scen
def post_acc_hook_on_nongrad_error(L):
    L.ones(2).register_post_accumulate_grad_hook(lambda t: None)


@scen
def post_acc_hook_removed_and_order(L):
    x = leaf(L, [1., 2.])
    calls = []
    h1 = x.register_post_accumulate_grad_hook(lambda t: calls.append(('a', t.grad.tolist())))
    x.register_post_accumulate_grad_hook(lambda t: calls.append(('b', t.grad.tolist())))
    x.register_hook(lambda g: calls.append('pre') or g * 2)
    (x * 3).sum().backward()
    h1.remove()
    (x * 3).sum().backward()
    return calls


@scen
def post_acc_hook_can_modify_grad_and_not_in_autograd_grad(L):
    x = leaf(L, [1., 2.])
    calls = []
    def h(t):
        calls.append(1)
        t.grad.mul_(0.5)
    x.register_post_accumulate_grad_hook(h)
    L.autograd.grad((x * 3).sum(), x)
    (x * 4).sum().backward()
    return calls, res(x.grad)


@scen
def post_acc_hook_with_backward_inputs(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3., 4.])
    calls = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append('x'))
    w.register_post_accumulate_grad_hook(lambda t: calls.append('w'))
    (x * w).sum().backward(inputs=[w])
    return calls, res(w.grad), res(x.grad)


@scen
def post_acc_hook_return_value(L):
    x = leaf(L, [1., 2.])
    x.register_post_accumulate_grad_hook(lambda t: t * 0)
    (x * 3).sum().backward()
    return res(x.grad)


@pytest.mark.parametrize("name", list(scen))
def test_same_as_pytorch(name):
    assert as_torch(run(tgrad, scen[name])) == run(torch, scen[name])
