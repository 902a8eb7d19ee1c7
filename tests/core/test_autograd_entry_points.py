"""The autograd entry points against PyTorch: backward(inputs=...) on leaves and non-leaves,
autograd.backward, and every argument of autograd.grad, each scenario written once and run with
``L = torch`` and ``L = tgrad`` (support/scenarios.py). Their single behaviours, with PyTorch's
exact messages, are in test_backward.py and test_autograd_grad.py."""
import pytest
import torch

import tgrad
from support.scenarios import Scenarios, as_torch, leaf, res, run

scen = Scenarios()


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


@pytest.mark.parametrize("name", list(scen))
def test_same_as_pytorch(name):
    assert as_torch(run(tgrad, scen[name])) == run(torch, scen[name])
