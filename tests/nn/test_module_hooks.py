"""Module hooks against torch.nn: the same modules, with the same hooks recording what they see, run
in tgrad and in PyTorch (float64, random upstream gradients) must log the same calls in the same
order with the same values, and what a hook returns must change the same things. Covers forward
(pre-)hooks with ``with_kwargs``/``prepend``/``always_call``, full backward (pre-)hooks, the
module-global hooks, state-dict hooks, registration hooks and ``RemovableHandle``."""
import warnings

import pytest
import torch

import tgrad
import tgrad.nn.modules.module as tg_module
import torch.nn.modules.module as th_module
from support.modules import lib_tensor as tensor, norm
from support.nested import assert_nested_close
from support.reference import uniform64

LIBS = {"torch": (torch, th_module), "tgrad": (tgrad, tg_module)}


def build(lib):
    """A module holding a block: the block takes a tensor, an optional tensor and a keyword, and
    returns two tensors and a non-tensor; weights come from a seeded torch copy."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)

        def forward(self, x, y=None, scale=1.0):
            h = self.lin(x).tanh() * scale
            return h, (h * y if y is not None else h), 7

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = nn.Linear(4, 2)

        def forward(self, x, y):
            a, b, _ = self.block(x, y, scale=2.0)
            return self.head(a + b)

    torch.manual_seed(0)
    net = Net().double()
    if lib is tgrad:
        net.load_state_dict({k: tgrad.from_torch(v.detach().clone()) for k, v in build(torch).state_dict().items()})
    return net


def both(scenario):
    """Run ``scenario(lib, module_api, log)`` in each library; return {name: (log, result)}."""
    out = {}
    for name, (lib, api) in LIBS.items():
        log = []
        result = scenario(lib, api, log)
        out[name] = (log, result)
    assert_nested_close(out["tgrad"][0], out["torch"][0])
    return out


# ----------------------------------------------------------------------------- forward

def test_forward_hooks_order_kwargs_replacements_and_removal():
    def scenario(lib, api, log):
        net = build(lib)
        blk = net.block
        hs = [api.register_module_forward_pre_hook(lambda m, a: log.append(("global pre", norm(m)))),
              api.register_module_forward_hook(lambda m, a, o: log.append(("global fwd", norm(m))))]
        try:
            blk.register_forward_pre_hook(lambda m, a: log.append(("pre", norm(a))))
            # prepended: runs before the hook above, and doubles x
            blk.register_forward_pre_hook(lambda m, a: (log.append(("pre first", norm(a))), (a[0] * 2,) + a[1:])[1],
                                          prepend=True)
            blk.register_forward_pre_hook(
                lambda m, a, kw: (log.append(("pre kw", norm(kw))), (a, {**kw, "scale": 0.5}))[1], with_kwargs=True)
            h_single = blk.register_forward_pre_hook(lambda m, a: a[0])  # a non-tuple is wrapped: drops y
            h_single.remove()
            blk.register_forward_hook(lambda m, a, kw, o: log.append(("fwd kw", norm(kw), norm(o))), with_kwargs=True)
            blk.register_forward_hook(lambda m, a, o: (o[0] + 1, o[1], o[2]))
            x, y = tensor(lib, (5, 3), 1), tensor(lib, (5, 4), 2)
            log.append(("out", norm(net(x, y))))
        finally:
            for h in hs:
                h.remove()
        log.append(("after removal", norm(net(x, y))))
        return None

    both(scenario)


def test_a_single_returned_value_is_wrapped_into_the_args():
    def scenario(lib, api, log):
        lin = build(lib).head
        lin.register_forward_pre_hook(lambda m, a: a[0] * 3)
        log.append(norm(lin(tensor(lib, (2, 4), 3))))

    both(scenario)


def test_always_call_forward_hooks_run_when_forward_raises():
    def scenario(lib, api, log):
        class Bad(lib.nn.Module):
            def forward(self, x):
                log.append("forward")
                raise ValueError("bad forward")

        m = Bad()
        m.register_forward_hook(lambda m, a, o: log.append(("plain", norm(o))))
        m.register_forward_hook(lambda m, a, kw, o: log.append(("always kw", norm(kw), norm(o))), with_kwargs=True,
                                always_call=True)

        def raising(m, a, o):
            log.append("raising")
            raise KeyError("hook")
        m.register_forward_hook(raising, always_call=True)
        h = api.register_module_forward_hook(lambda m, a, o: log.append(("global always", norm(o))), always_call=True)
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with pytest.raises(ValueError, match="bad forward"):
                    m(tensor(lib, (2,), 0))
            log.append([str(x.message) for x in w])
        finally:
            h.remove()
        # a hook that raises outside the exception path propagates
        with pytest.raises(KeyError):
            type(m).forward = lambda self, x: x
            m(tensor(lib, (2,), 0))

    both(scenario)


def test_bad_pre_hook_result_raises_pytorchs_error():
    for lib in (torch, tgrad):
        lin = lib.nn.Linear(2, 2)
        lin.register_forward_pre_hook(lambda m, a, kw: a, with_kwargs=True)
        with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, "):
            lin(tensor(lib, (1, 2), 0))


# ----------------------------------------------------------------------------- backward

def _record_backward(lib, api, log, net, scale_grad_output=True, replace_grad_input=True):
    blk = net.block

    def pre(m, go):
        log.append(("pre", norm(go)))
        return (go[0] * 3, go[1], go[2]) if scale_grad_output else None

    def full(m, gi, go):
        log.append(("full", norm(gi), norm(go)))
        return (gi[0] * -2, gi[1]) if replace_grad_input else None

    blk.register_full_backward_pre_hook(pre)
    blk.register_full_backward_hook(full)
    blk.register_full_backward_hook(lambda m, gi, go: log.append(("full first", norm(gi))), prepend=True)
    net.head.register_full_backward_hook(lambda m, gi, go: log.append(("head", norm(gi), norm(go))))


def test_full_backward_hooks_see_and_replace_gradients_as_pytorch():
    def scenario(lib, api, log):
        net = build(lib)
        _record_backward(lib, api, log, net)
        hs = [api.register_module_full_backward_pre_hook(lambda m, go: log.append(("global pre", norm(m)))),
              api.register_module_full_backward_hook(lambda m, gi, go: log.append(("global full", norm(m))))]
        try:
            x, y = tensor(lib, (5, 3), 1), tensor(lib, (5, 4), 2)
            out = net(x, y)
            log.append(("grad_fn", out.grad_fn.name()))
            g = uniform64((5, 2), seed=7)
            out.backward(g if lib is torch else tgrad.from_torch(g.clone()))
        finally:
            for h in hs:
                h.remove()
        log.append(("grads", norm(x.grad), norm(y.grad), norm({k: p.grad for k, p in net.named_parameters()})))

    both(scenario)


def test_backward_hooks_with_an_input_that_needs_no_grad_and_an_unused_output():
    def scenario(lib, api, log):
        net = build(lib)
        _record_backward(lib, api, log, net, scale_grad_output=False)
        x, y = tensor(lib, (5, 3), 1), tensor(lib, (5, 4), 2, requires_grad=False)
        a, b, seven = net.block(x, y)
        log.append(("seven", seven, b.requires_grad))
        g = uniform64((5, 4), seed=8)
        a.backward(g if lib is torch else tgrad.from_torch(g.clone()))  # b's gradient never arrives: None
        log.append(("x grad", norm(x.grad)))

    both(scenario)


def test_full_backward_hook_fires_at_the_outputs_when_no_input_requires_grad():
    def scenario(lib, api, log):
        net = build(lib)
        net.head.register_full_backward_hook(lambda m, gi, go: log.append(("head", norm(gi), norm(go))))
        x = tensor(lib, (5, 4), 1, requires_grad=False)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            net.head(x).sum().backward()
        log.append([str(m.message)[:60] for m in w])
        net.head.register_full_backward_hook(lambda m, gi, go: (go[0],))
        out = net.head(x).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError) as e:
                out.backward()
        log.append(str(e.value))

    both(scenario)


def test_hooks_returning_the_wrong_number_of_gradients():
    def scenario(lib, api, log):
        lin = build(lib).head
        h = lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError) as e:
            lin(tensor(lib, (2, 4), 1)).sum().backward()
        log.append(str(e.value))
        h.remove()
        lin.register_full_backward_pre_hook(lambda m, go: ())
        with pytest.raises(RuntimeError) as e:
            lin(tensor(lib, (2, 4), 1)).sum().backward()
        log.append(str(e.value))

    both(scenario)


def test_removed_backward_hooks_do_not_run_and_no_grad_skips_the_wrapper():
    def scenario(lib, api, log):
        lin = build(lib).head
        h1 = lin.register_full_backward_hook(lambda m, gi, go: log.append("full"))
        h2 = lin.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
        x = tensor(lib, (2, 4), 1)
        lin(x).sum().backward()
        h1.remove()
        h2.remove()
        out = lin(x)
        log.append(out.grad_fn.name())
        out.sum().backward()
        lin.register_full_backward_hook(lambda m, gi, go: log.append("again"))
        with lib.no_grad():
            log.append(lin(x).grad_fn is None)
        log.append(norm(x.grad))

    both(scenario)


def test_full_backward_hooks_under_create_graph_and_a_second_derivative():
    def scenario(lib, api, log):
        class M(lib.nn.Module):
            def forward(self, x):
                return x.tanh() * x

        m = M()
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", norm(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("full", norm(gi))))
        x = tensor(lib, (3,), 1)
        (g,) = lib.autograd.grad(m(x).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)  # through the hook's identity nodes again: no hook runs twice
        log.append(("derivatives", norm(g), norm(h)))

    both(scenario)


def test_hooks_on_a_linear_relu_pair_of_a_sequential_all_run():
    """Sequential fuses Linear + ReLU into one launch only when no hook could see the difference."""
    def scenario(lib, api, log):
        torch.manual_seed(1)
        seq = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU()).double()
        if lib is tgrad:
            torch.manual_seed(1)
            ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU()).double()
            seq.load_state_dict({k: tgrad.from_torch(v.detach().clone()) for k, v in ref.state_dict().items()})
        seq[0].register_full_backward_hook(lambda m, gi, go: log.append(("linear", norm(gi), norm(go))))
        h = api.register_module_forward_hook(lambda m, a, o: log.append(("fwd", norm(m))))
        try:
            x = tensor(lib, (2, 3), 4)
            seq(x).sum().backward()
        finally:
            h.remove()
        log.append(norm(x.grad))

    both(scenario)


# ----------------------------------------------------------------------------- state dicts

def test_state_dict_hooks_as_pytorch():
    def scenario(lib, api, log):
        net = build(lib)
        net.block.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append(("pre", prefix, keep_vars)))

        def post(m, sd, prefix, meta):
            log.append(("post", prefix, sorted(sd), meta))
        net.block.register_state_dict_post_hook(post)

        def private(m, sd, prefix, meta):
            sd[prefix + "extra"] = 1
            return sd
        net._register_state_dict_hook(private)
        sd = net.state_dict(keep_vars=True)
        log.append(sorted(sd))
        with pytest.raises(RuntimeError, match="Cannot register the same function as the state dict post hook"):
            net._register_state_dict_hook(post)
        net.head.register_state_dict_post_hook(lambda m, sd, prefix, meta: sd)
        with pytest.raises(RuntimeError, match="^state_dict post-hook must return None$"):
            net.state_dict()

    both(scenario)


def test_load_state_dict_hooks_as_pytorch():
    def scenario(lib, api, log):
        net = build(lib)
        sd = {k: v for k, v in net.state_dict().items() if k != "head.bias"}

        def pre(m, state, prefix, meta, strict, missing, unexpected, errors):
            log.append(("pre", norm(m), prefix, sorted(state), meta, strict, list(missing)))
        net.head.register_load_state_dict_pre_hook(pre)
        h = net.block.lin.register_load_state_dict_pre_hook(lambda m, *a: log.append("removed"))
        h.remove()

        def post(m, keys):
            log.append(("post", norm(m), list(keys.missing_keys), list(keys.unexpected_keys)))
            if norm(m) == "Net":
                keys.missing_keys.clear()  # edited in place: load_state_dict then raises nothing
        net.head.register_load_state_dict_post_hook(post)
        net.register_load_state_dict_post_hook(post)
        result = net.load_state_dict(sd)
        log.append(("result", list(result.missing_keys), list(result.unexpected_keys)))
        net.head.register_load_state_dict_post_hook(lambda m, keys: keys)
        with pytest.raises(AssertionError, match="are not expected to return new values"):
            net.load_state_dict(dict(net.state_dict()))  # tgrad state dicts have no _metadata

    both(scenario)


# ----------------------------------------------------------------------------- registration, handles

def test_registration_hooks_can_replace_what_is_registered():
    def scenario(lib, api, log):
        hs = [api.register_module_buffer_registration_hook(
                  lambda m, name, b: log.append(("buffer", name)) or (None if b is None else b * 2)),
              api.register_module_parameter_registration_hook(lambda m, name, p: log.append(("param", name))),
              api.register_module_module_registration_hook(lambda m, name, sub: log.append(("module", name)))]
        try:
            m = lib.nn.Module()
            m.register_buffer("b", tensor(lib, (2,), 0, requires_grad=False))
            m.b = tensor(lib, (2,), 1, requires_grad=False)
            m.w = lib.nn.Parameter(tensor(lib, (2,), 2, requires_grad=False))
            m.sub = lib.nn.Linear(1, 1)
            m.add_module("other", None)
            log.append(norm(m.b))
        finally:
            for h in hs:
                h.remove()
        m.register_buffer("c", tensor(lib, (2,), 3, requires_grad=False))
        log.append(norm(m.c))

    both(scenario)


def test_removable_handle_is_pytorchs():
    from tgrad.utils.hooks import RemovableHandle
    lin = tgrad.nn.Linear(2, 2)
    h = lin.register_forward_hook(lambda m, a, o: None, with_kwargs=True, always_call=True)
    assert isinstance(h, RemovableHandle) and h.id in lin._forward_hooks
    assert h.id in lin._forward_hooks_with_kwargs and h.id in lin._forward_hooks_always_called
    with h:
        pass
    assert not lin._forward_hooks and not lin._forward_hooks_with_kwargs and not lin._forward_hooks_always_called
    h.remove()  # twice is fine
    t = tgrad.ones(2, requires_grad=True)
    h2 = t.register_hook(lambda g: g)
    assert isinstance(h2, RemovableHandle) and h2.id > h.id
    assert tgrad.utils.hooks.RemovableHandle is RemovableHandle
