"""Hooks on graph nodes (``y.grad_fn.register_prehook`` / ``register_hook``), as PyTorch's.

A pre-hook gets the gradients of the node's outputs after the hooks of the tensors it produced (and
after retain_grad kept them) and may return a tuple replacing them; a post hook gets
``(grad_inputs, grad_outputs)`` after the node ran, ``grad_inputs`` lined up with
``next_functions``, and may return a tuple replacing ``grad_inputs`` (a None in it drops that
gradient). Each scenario is written once and run with ``L = torch`` and ``L = tgrad``
(support/scenarios.py): the order hooks ran in, what they saw, the gradients, and errors' types
and texts must be the same."""
import pytest
import torch

import tgrad
from support.scenarios import Scenarios, as_torch, leaf, res, run

scen = Scenarios()


@scen
def order_and_what_each_hook_sees(L):
    x, w = leaf(L, [1., 2., 3.]), leaf(L, [2., 3., 4.])
    y = x * w
    z = y.exp().sum()
    log = []
    y.register_hook(lambda g: log.append(("tensor", res(g))))
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", res(go))))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", res(gi), res(go))))
    y.grad_fn.register_prehook(lambda go: log.append(("pre 2", len(go))))
    z.backward()
    return log, res(y.grad), res(x.grad)


@scen
def replacements_flow_on_and_none_drops_a_gradient(L):
    x, w = leaf(L, [1., 2., 3.]), leaf(L, [2., 3., 4.])
    y = x * w
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, None))
    (y * y).sum().backward()
    return res(x.grad), res(w.grad), res(y.grad)  # retain_grad keeps what came before the pre-hook


@scen
def removed_hooks_do_not_run(L):
    x = leaf(L, [1., 2.])
    y = x * 3
    log = []
    h1 = y.grad_fn.register_prehook(lambda go: log.append("pre") or (go[0] * 0,))
    h2 = y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    y.sum().backward(retain_graph=True)
    first = res(x.grad)
    h1.remove()
    h2.remove()
    x.grad = None
    y.sum().backward()
    return log, first, res(x.grad), type(h1).__name__


@scen
def inputs_without_grad_and_non_tensor_arguments(L):
    a, b = leaf(L, [1., 2.]), L.ones(2, dtype=L.float64)
    seen = []
    y = (a * b).sum(0)  # the sum's dim is no edge: grad_inputs has one entry
    y.grad_fn.register_hook(lambda gi, go: seen.append(("sum", res(gi), res(go))))
    (a * b).grad_fn.register_hook(lambda gi, go: seen.append(("mul", res(gi))))
    p = a * b
    p.grad_fn.register_hook(lambda gi, go: seen.append(("mul", res(gi))))
    (y + p.sum()).backward()
    return seen


@scen
def a_multi_output_node_sees_none_for_unused_outputs(L):
    a = leaf(L, [1., 2., 3., 4.])
    p, q = a.split(2)
    seen = []
    p.grad_fn.register_prehook(lambda go: seen.append(("pre", res(go))))
    p.grad_fn.register_hook(lambda gi, go: seen.append(("post", res(gi), res(go))))
    (p * 2).sum().backward()
    return seen, res(a.grad)


@scen
def accumulate_grad_node(L):
    x = leaf(L, [1., 2.])
    acc = (x * 2).grad_fn.next_functions[0][0]
    log = []
    x.register_hook(lambda g: log.append(("tensor", res(g))) or g + 1)
    acc.register_prehook(lambda go: log.append(("pre", res(go))) or (go[0] * 100,))
    acc.register_hook(lambda gi, go: log.append(("post", res(gi), res(go), res(x.grad))))
    (x * 2).sum().backward()
    return log, res(x.grad), type(acc).__name__


@scen
def autograd_grad_runs_no_hook_of_a_node_it_stops_at(L):
    a = leaf(L, [1., 2.])
    m = a * 2
    o = m * 3
    log = []
    m.grad_fn.register_prehook(lambda go: log.append("m pre"))
    m.grad_fn.register_hook(lambda gi, go: log.append("m post"))
    o.grad_fn.register_prehook(lambda go: log.append("o pre") or (go[0] * 2,))
    (g,) = L.autograd.grad(o.sum(), m)
    return log, res(g)


def _bad(kind, ret):
    """x * w with a hook returning ``ret(grad_outputs, n)`` for ``n`` gradients (1 before the node, 2 after)."""
    def scenario(L):
        x, w = leaf(L, [1., 2., 3.]), leaf(L, [2., 3., 4.])
        y = x * w
        if kind == "pre":
            y.grad_fn.register_prehook(lambda go: ret(go, 1))
        else:
            y.grad_fn.register_hook(lambda gi, go: ret(go, 2))
        y.sum().backward()
        return res(x.grad)
    return scenario


BAD_RETURNS = {
    "not_a_tuple": lambda go, n: go[0],
    "a_list": lambda go, n: [go[0]] * n,
    "too_many": lambda go, n: (go[0],) * (n + 1),
    "other_size": lambda go, n: (go[0][:2],) * n,
    "other_dtype": lambda go, n: (go[0].float(),) * n,
    "not_a_tensor": lambda go, n: ("a",) * n,
}
for _name, _ret in BAD_RETURNS.items():
    scen[f"pre_hook_returns_{_name}"] = _bad("pre", _ret)
    scen[f"post_hook_returns_{_name}"] = _bad("post", _ret)


@scen
def post_hook_cannot_fill_a_none_gradient(L):
    a, b = leaf(L, [1., 2.]), L.ones(2, dtype=L.float64)
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0]))
    y.sum().backward()


@pytest.mark.parametrize("name", list(scen))
def test_same_as_pytorch(name):
    expected = run(torch, scen[name])
    assert as_torch(run(tgrad, scen[name])) == expected


def test_error_scenarios_do_raise():
    """The bad returns above are refused by PyTorch (so each comparison compares two errors)."""
    for name in scen:
        if "returns" in name or "cannot" in name:
            assert run(torch, scen[name])[0] == "raised", name
