"""Optimizer hooks against torch.optim: step pre/post hooks (per optimizer and global), state-dict
and load-state-dict hooks, recorded in tgrad and in PyTorch on the same parameters (float64),
must be called in the same order with the same arguments, and what they return must have the same
effect (replacement args, state dicts); removed hooks never run again."""
import pytest
import torch

import tgrad
import tgrad.optim.optimizer as tg_optimizer
import torch.optim.optimizer as th_optimizer
from support.nested import assert_nested_close
from support.reference import to_torch, uniform64

LIBS = {"torch": (torch, th_optimizer), "tgrad": (tgrad, tg_optimizer)}


def params(lib):
    ps = []
    for i, shape in enumerate([(3, 2), (4,)]):
        data = uniform64(shape, seed=i)
        ps.append((data.clone() if lib is torch else tgrad.from_torch(data.clone())).requires_grad_())
    return ps


def set_grads(lib, ps, seed):
    for i, p in enumerate(ps):
        g = uniform64(tuple(p.shape), seed=100 * seed + i)
        p.grad = g.clone() if lib is torch else tgrad.from_torch(g.clone())


def describe(v):
    """Arguments a hook saw, comparable across libraries."""
    if isinstance(v, (torch.optim.Optimizer, tgrad.optim.Optimizer)):
        return "optimizer:" + type(v).__name__
    if isinstance(v, (torch.Tensor, tgrad.Tensor)):
        return to_torch(v).tolist()
    if isinstance(v, (tuple, list)):
        return type(v)(describe(x) for x in v)
    if isinstance(v, dict):
        return {k: describe(x) for k, x in v.items()}
    if callable(v):
        return "callable"
    return v


def both(scenario):
    logs = {}
    for name, (lib, api) in LIBS.items():
        log = []
        scenario(lib, api, log)
        logs[name] = log
    assert_nested_close(logs["tgrad"], logs["torch"], rtol=1e-12, atol=1e-14)
    return logs["torch"]



def test_step_hooks_order_arguments_replacement_and_removal():
    def scenario(lib, api, log):
        ps = params(lib)
        opt = lib.optim.SGD(ps, lr=0.1, momentum=0.9)
        hs = [api.register_optimizer_step_pre_hook(lambda o, a, kw: log.append(("global pre", describe(a)))),
              api.register_optimizer_step_post_hook(lambda o, a, kw: log.append(("global post", describe(kw))))]
        try:
            opt.register_step_pre_hook(lambda o, a, kw: log.append(("pre", describe(o), describe(a), describe(kw))))

            def closure():
                log.append("closure")
                return lib.tensor(5.0)
            # a pre-hook replacing the arguments: the step then runs with the closure
            h = opt.register_step_pre_hook(lambda o, a, kw: (a, {"closure": closure}))
            opt.register_step_post_hook(lambda o, a, kw: log.append(("post", describe(kw))))
            set_grads(lib, ps, 1)
            log.append(("loss", describe(opt.step())))
            h.remove()
            set_grads(lib, ps, 2)
            log.append(("loss", describe(opt.step())))
        finally:
            for handle in hs:
                handle.remove()
        set_grads(lib, ps, 3)
        opt.step()
        log.append(("params", describe(ps)))

    log = both(scenario)
    assert log[0][0] == "global pre" and "closure" in log


def test_step_hooks_of_each_optimizer_class_and_with_a_scheduler():
    def scenario(lib, api, log):
        ps = params(lib)
        adam = lib.optim.Adam(ps[:1], lr=0.05)
        rms = lib.optim.RMSprop(ps[1:], lr=0.01)
        sched = lib.optim.lr_scheduler.StepLR(adam, step_size=1, gamma=0.5)
        for opt in (adam, rms):
            opt.register_step_post_hook(lambda o, a, kw: log.append(("post", describe(o))))
        for step in range(2):
            set_grads(lib, ps, step)
            adam.step()
            rms.step()
            sched.step()
        log.append(("params", describe(ps), adam.param_groups[0]["lr"]))

    both(scenario)


def test_a_bad_step_pre_hook_result_raises():
    for lib in (torch, tgrad):
        opt = lib.optim.SGD(params(lib), lr=0.1)
        opt.register_step_pre_hook(lambda o, a, kw: a)
        with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, new_kwargs\), but got"):
            opt.step()


def test_state_dict_hooks_as_pytorch():
    def scenario(lib, api, log):
        ps = params(lib)
        opt = lib.optim.SGD(ps, lr=0.1, momentum=0.9)
        set_grads(lib, ps, 1)
        opt.step()
        opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
        opt.register_state_dict_pre_hook(lambda o: log.append("pre first"), prepend=True)

        def post(o, sd):
            log.append(("post", sorted(sd)))
            sd["extra"] = 1  # edited in place
        opt.register_state_dict_post_hook(post)
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "replaced": True})
        sd = opt.state_dict()
        log.append(sorted(sd))

        def load_pre(o, sd):
            log.append(("load pre", sorted(sd)))
            new = dict(sd)
            new["param_groups"] = [dict(g, lr=0.5) for g in sd["param_groups"]]
            return new
        h = opt.register_load_state_dict_pre_hook(load_pre)
        opt.register_load_state_dict_post_hook(lambda o: log.append(("load post", o.param_groups[0]["lr"])))
        opt.register_load_state_dict_post_hook(lambda o: log.append("load post first"), prepend=True)
        opt.load_state_dict(sd)
        h.remove()
        opt.load_state_dict(sd)
        log.append(("lr", opt.param_groups[0]["lr"]))
        set_grads(lib, ps, 2)
        opt.step()
        log.append(("params", describe(ps)))

    both(scenario)
