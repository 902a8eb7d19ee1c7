"""Hooks and the autograd entry points against PyTorch: tensor hooks, retain_grad, backward(inputs=...),
autograd.grad.

Each scenario below is written once and run twice, with ``L = torch`` and ``L = tgrad``: what it
returns (values, requires_grad flags, the order hooks ran in, or an error's text) must be the same,
with ``tgrad`` written where PyTorch names itself. The single behaviours are in
test_autograd.py
these are the cases around them: hooks on tensors used twice, on one output
of a multi-output op, under create_graph and in autograd.grad
retain_grad with in-place hooks;
post-accumulate hooks
``backward(inputs=...)`` on non-leaves
every argument of autograd.grad and
autograd.backward.
"""
import warnings

import pytest
import torch

import tgrad


def res(t):
    """A comparable picture of a result: tensors as (values, requires_grad), recursively."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(res(a) for a in t)
    if hasattr(t, "tolist") and hasattr(t, "shape"):
        return (t.tolist(), t.requires_grad)
    return t


def leaf(L, v):
    return L.tensor(v, dtype=L.float64, requires_grad=True)


S = {}


def scen(f):
    S[f.__name__] = f
    return f


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


@scen
def backward_inputs_nonleaf(L):
    x = leaf(L, [1., 2.])
    y = x * 2
    (y * y).sum().backward(inputs=[y])
    return res(y.grad), res(x.grad), y.retains_grad


@scen
def backward_inputs_single_tensor_and_unused(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [5.])
    (x * x).sum().backward(inputs=x)
    r1 = res(x.grad)
    try:
        (x * x).sum().backward(inputs=[w])
    except RuntimeError as e:
        return r1, str(e)
    return r1, res(w.grad)


@scen
def backward_inputs_accumulates_and_hooks(L):
    x = leaf(L, [1., 2.])
    x.register_hook(lambda g: g * 10)
    (x * x).sum().backward(inputs=[x])
    (x * x).sum().backward(inputs=[x])
    return res(x.grad)


@scen
def backward_inputs_nongrad_error(L):
    x = leaf(L, [1., 2.])
    (x * x).sum().backward(inputs=[L.ones(2)])


@scen
def backward_inputs_retain_graph(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3., 4.])
    z = (x * w * x).sum()
    z.backward(inputs=[x], retain_graph=True)
    z.backward(inputs=[w])
    return res(x.grad), res(w.grad)


@scen
def backward_inputs_create_graph(L):
    x = leaf(L, [1., 2.])
    (x ** 3).sum().backward(inputs=[x], create_graph=True)
    g, = L.autograd.grad(x.grad.sum(), x)
    return res(g), x.grad.requires_grad


@scen
def autograd_backward_with_grad_tensors(L):
    x = leaf(L, [1., 2.])
    L.autograd.backward([x * 2, (x * x).sum()], [L.tensor([1., 10.], dtype=L.float64), None])
    return res(x.grad)


@scen
def autograd_backward_single_tensor_and_gradient(L):
    x = leaf(L, [1., 2.])
    L.autograd.backward(x * 3, L.tensor([2., 5.], dtype=L.float64))
    L.autograd.backward((x * x).sum())
    return res(x.grad)


@scen
def autograd_backward_length_mismatch(L):
    x = leaf(L, [1., 2.])
    L.autograd.backward([x.sum(), x.sum()], [L.tensor(1., dtype=L.float64)])


@scen
def autograd_backward_inputs(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3., 4.])
    L.autograd.backward((x * w).sum(), inputs=[x])
    return res(x.grad), res(w.grad)


@scen
def autograd_backward_grad_tensors_shape_mismatch(L):
    x = leaf(L, [1., 2., 3.])
    L.autograd.backward(x * 2, L.ones(2, dtype=L.float64))


@scen
def grad_same_input_twice(L):
    x = leaf(L, [1., 2.])
    return res(L.autograd.grad((x * x).sum(), [x, x]))


@scen
def grad_outputs_with_none_for_scalar(L):
    x = leaf(L, [1., 2.])
    return res(L.autograd.grad([(x * x).sum(), x * 3], [x], [None, L.tensor([1., -1.], dtype=L.float64)]))


@scen
def grad_retain_graph_false_frees(L):
    x = leaf(L, [1., 2.])
    z = (x * x).sum()
    L.autograd.grad(z, x)
    L.autograd.grad(z, x)


@scen
def grad_retain_graph_true_keeps(L):
    x = leaf(L, [1., 2.])
    z = (x * x).sum()
    a = L.autograd.grad(z, x, retain_graph=True)
    b = L.autograd.grad(z, x)
    return res(a), res(b)


@scen
def grad_create_graph_false_result_is_detached(L):
    x = leaf(L, [1., 2.])
    g, = L.autograd.grad((x ** 3).sum(), x, retain_graph=True)
    return res(g), g.grad_fn is None


@scen
def grad_allow_unused_materialize_with_create_graph(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3.])
    gx, gw = L.autograd.grad((x ** 2).sum(), [x, w], create_graph=True, materialize_grads=True)
    return res(gx), res(gw)


@scen
def grad_allow_unused_true_materialize(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3.])
    return res(L.autograd.grad((x ** 2).sum(), [x, w], allow_unused=True, materialize_grads=True))


@scen
def grad_unused_input_index(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3.])
    L.autograd.grad((x * 2).sum(), [w, x])


@scen
def grad_of_a_reachable_but_independent_input(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [3.])
    y = (x * 2).sum() + (w * 0).sum()
    return res(L.autograd.grad(y, [w]))


@scen
def grad_outputs_wrong_shape(L):
    x = leaf(L, [1., 2.])
    L.autograd.grad(x * 2, x, L.ones(3, dtype=L.float64))


@scen
def grad_outputs_requiring_grad_with_create_graph(L):
    x = leaf(L, [1., 2.])
    v = leaf(L, [3., -1.])
    g, = L.autograd.grad(x * x, x, v, create_graph=True)
    return res(g), res(L.autograd.grad(g.sum(), [x, v]))


@scen
def grad_nonleaf_intermediate_and_leaf_together(L):
    x = leaf(L, [1., 2.])
    y = x.exp()
    return res(L.autograd.grad((y * x).sum(), [y, x]))


@scen
def grad_tuple_inputs_and_single_output_tuple(L):
    x = leaf(L, [1., 2.])
    w = leaf(L, [0.5, 3.])
    return res(L.autograd.grad(((x * w).sum(),), (w, x)))


@scen
def grad_output_is_input(L):
    x = leaf(L, [1., 2.])
    return res(L.autograd.grad(x, x, L.tensor([3., 4.], dtype=L.float64)))


def _run(L, name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return S[name](L)
    except Exception as e:
         # an error is a result too: its type and text
        return ("raised", type(e).__name__, str(e))


def _as_torch(r):
    if isinstance(r, str):
        return r.replace("tgrad", "torch")
    if isinstance(r, (tuple, list)):
        return type(r)(_as_torch(a) for a in r)
    return r


@pytest.mark.parametrize("name", list(S))
def test_same_as_pytorch(name):
    assert _as_torch(_run(tgrad, name)) == _run(torch, name)
