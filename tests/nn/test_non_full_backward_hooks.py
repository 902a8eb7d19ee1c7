"""The deprecated non-full module backward hooks (``Module.register_backward_hook``,
``register_module_backward_hook``) against torch.nn: each scenario runs in both libraries (float64,
random upstream gradient) and must log the same hook calls with the same gradients, leave the same
gradients, and warn the same (FutureWarning) or raise the same errors. Such a hook is a post hook on
the grad_fn of the module's output, so it sees that one node's gradients."""
import warnings

import pytest
import torch

import tgrad
import tgrad.nn.modules.hooks as tg_hooks
import tgrad.nn.modules.module as tg_module
import torch.nn.modules.module as th_module
from support.modules import lib_tensor as tensor, norm
from support.nested import assert_nested_close
from support.reference import uniform64

LIBS = {"torch": (torch, th_module), "tgrad": (tgrad, tg_module)}


@pytest.fixture(autouse=True)
def fresh_global_kind(monkeypatch):
    """Which kind the global backward hooks are is set for good by the first registration: start
    each test with none registered (and leave no hook behind)."""
    monkeypatch.setattr(th_module, "_global_is_full_backward_hook", None)
    monkeypatch.setattr(tg_hooks, "_global_is_full_backward_hook", None)


def linear(lib, n_in=3, n_out=2):
    torch.manual_seed(0)
    ref = torch.nn.Linear(n_in, n_out).double()
    if lib is torch:
        return ref
    m = tgrad.nn.Linear(n_in, n_out).double()
    m.load_state_dict({k: tgrad.from_torch(v.detach().clone()) for k, v in ref.state_dict().items()})
    return m


def both(scenario):
    out = {}
    for name, (lib, api) in LIBS.items():
        log = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                scenario(lib, api, log)
            except Exception as e:  # noqa: BLE001 - an error is a result too
                log.append(("raised", type(e).__name__, str(e).replace("torch", "tgrad")))
        log.append([(w.category.__name__, str(w.message)) for w in caught])
        out[name] = log
    assert_nested_close(out["tgrad"], out["torch"])
    return out


def _backward(lib, out, seed=7):
    g = uniform64(tuple(out.shape), seed=seed)
    out.backward(g if lib is torch else tgrad.from_torch(g.clone()))


def test_hook_on_a_one_node_module_sees_and_replaces_its_gradients():
    def scenario(lib, api, log):
        m = linear(lib)
        m.register_backward_hook(lambda mod, gi, go: log.append(("hook", norm(mod), norm(gi), norm(go))))
        m.register_backward_hook(lambda mod, gi, go: tuple(None if g is None else g * 2 for g in gi))
        x = tensor(lib, (4, 3), 1)
        _backward(lib, m(x))
        log.append(("grads", norm(x.grad), norm(m.weight.grad), norm(m.bias.grad)))
    out = both(scenario)
    assert out["torch"][-1] and out["torch"][-1][0][0] == "FutureWarning"  # the node is not the whole module


def test_hook_on_a_module_of_several_nodes_sees_only_the_last():
    def scenario(lib, api, log):
        net = lib.nn.Sequential(linear(lib), lib.nn.Tanh())
        net.register_backward_hook(lambda mod, gi, go: log.append(("hook", norm(mod), norm(gi), norm(go))))
        x = tensor(lib, (4, 3), 2)
        h = x * 1  # the input has a grad_fn: which nodes its hook misses is what the warning says
        _backward(lib, net(h))
        log.append(("x", norm(x.grad)))
    both(scenario)


def test_hook_on_a_module_whose_input_is_the_nodes_input_does_not_warn():
    def scenario(lib, api, log):
        act = lib.nn.Tanh()
        act.register_backward_hook(lambda mod, gi, go: log.append(("hook", norm(gi))))
        x = tensor(lib, (5,), 3) * 2
        _backward(lib, act(x))
    out = both(scenario)
    assert out["torch"][-1] == []


def test_outputs_of_several_nodes_and_nested_outputs_warn():
    class Two:
        def __init__(self, lib, nested):
            class M(lib.nn.Module):
                def forward(self, x):
                    a, b = x.exp(), x.sin()
                    return [a, b] if nested else (a, b)
            self.m = M()

    def scenario(lib, api, log):
        for nested in (False, True):
            m = Two(lib, nested).m
            m.register_backward_hook(lambda mod, gi, go: log.append(("hook", norm(gi), norm(go))))
            x = tensor(lib, (3,), 4)
            a, b = m(x)
            _backward(lib, a + b)
    both(scenario)


def test_a_module_takes_one_kind_of_backward_hook():
    def scenario(lib, api, log):
        m = linear(lib)
        m.register_backward_hook(lambda *a: None)
        try:
            m.register_full_backward_hook(lambda *a: None)
        except RuntimeError as e:
            log.append(str(e))
        m2 = linear(lib)
        m2.register_full_backward_hook(lambda *a: None)
        m2.register_backward_hook(lambda *a: None)
    out = both(scenario)
    assert out["torch"][-2][0] == "raised" and len(out["torch"]) == 3


def test_global_non_full_hook_runs_for_every_module_and_excludes_global_full_ones():
    def scenario(lib, api, log):
        h = api.register_module_backward_hook(lambda mod, gi, go: log.append(("global", norm(mod), norm(gi))))
        try:
            m = linear(lib)
            x = tensor(lib, (2, 3), 5)
            _backward(lib, lib.nn.functional.relu(m(x)))
            try:
                api.register_module_full_backward_hook(lambda *a: None)
            except RuntimeError as e:
                log.append(str(e))
        finally:
            h.remove()
        _backward(lib, m(x))  # removed: nothing logged, and still no full hook may be registered
        api.register_module_full_backward_hook(lambda *a: None)
    out = both(scenario)
    assert out["torch"][-2][0] == "raised"
