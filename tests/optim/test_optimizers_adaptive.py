"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop and LBFGS against torch.optim: 10 steps with copied
parameters and identical random gradients (odd sizes, a 0-d tensor, a transposed leaf, one that
gets no gradient on some steps), PyTorch's defaults and non-default options, one fused launch per
parameter group, state dicts, and constructor errors."""
import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.optim as optim
from support.launches import record_launches
from support.optimizers import assert_same, make_params, run_both, set_grads
from support.torch_audit import AtenRecorder
from tgrad.kernels.runtime.launch import launch_observers

F = (torch.float32, torch.float64)

CASES = [
    ("Adadelta", {}),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True, foreach=False)),
    ("Adamax", {}),
    ("Adamax", dict(lr=0.05, betas=(0.3, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", {}),
    ("NAdam", dict(lr=0.05, momentum_decay=0.02, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True, maximize=True, foreach=True)),
    ("RAdam", {}),
    ("RAdam", dict(lr=0.05, betas=(0.6, 0.8), weight_decay=0.1)),  # rectified from step 6 on
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.7), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", {}),
    ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", {}),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(0.01, 0.08), maximize=True)),
]
IDS = [f"{name}-{'-'.join(kw) or 'defaults'}" for name, kw in CASES]


@pytest.mark.parametrize("dtype", F, ids=str)
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_ten_steps_match_torch(name, kwargs, dtype):
    tp, gp, topt, gopt, launches = run_both(getattr(torch.optim, name), getattr(optim, name), kwargs, dtype)
    assert_same(tp, gp, atol=1e-12 if dtype is torch.float64 else 2e-6)
    assert launches == [1] * 10  # one fused launch per group (one group, one dtype)
    # the state PyTorch keeps, under its names, with its values
    ts, gs = topt.state_dict(), gopt.state_dict()
    assert gs["param_groups"] == ts["param_groups"]
    assert list(gs["state"]) == list(ts["state"])
    for i, st in ts["state"].items():
        assert list(gs["state"][i]) == list(st)
        for k, v in st.items():
            got = gs["state"][i][k]
            assert got.dtype.torch == v.dtype and tuple(got.shape) == tuple(v.shape), k
            torch.testing.assert_close(got.torch(), v, rtol=1e-10 if dtype is torch.float64 else 1e-5, atol=1e-7)


@pytest.mark.parametrize("name,overrides", [("NAdam", dict(lr=0.01, betas=(0.5, 0.9))), ("Rprop", dict(lr=0.2)),
                                            ("ASGD", dict(lambd=0.3, t0=2))])
def test_param_groups_have_their_own_hyperparameters(name, overrides):
    tp, gp, _, _, launches = run_both(getattr(torch.optim, name), getattr(optim, name), dict(lr=0.05),
                                      torch.float64, groups=overrides)
    assert_same(tp, gp, atol=1e-12)
    assert launches == [2] * 10


@pytest.mark.parametrize("name,kwargs", [("NAdam", dict(lr=0.05)), ("ASGD", dict(lr=0.05, t0=1)),
                                         ("Rprop", {}), ("Adadelta", {})])
def test_state_dict_round_trip_continues_like_torch(name, kwargs):
    tp, gp = make_params(torch.float64)
    topt, gopt = getattr(torch.optim, name)(tp, **kwargs), getattr(optim, name)(gp, **kwargs)
    for step in range(3):
        set_grads(tp, gp, step, torch.float64)
        topt.step()
        gopt.step()
    # a fresh optimizer on both sides loads the state dict (PyTorch casts 0-d state to the
    # parameter's dtype on load; tgrad follows)
    tfresh = getattr(torch.optim, name)(tp, **kwargs)
    tfresh.load_state_dict(topt.state_dict())
    gfresh = getattr(optim, name)(gp, **kwargs)
    gfresh.load_state_dict(gopt.state_dict())
    for step in range(3, 7):
        set_grads(tp, gp, step, torch.float64)
        tfresh.step()
        gfresh.step()
    assert_same(tp, gp, atol=1e-12)


def test_float16_parameters_update_in_fp32_math():
    tp, gp, *_ = run_both(torch.optim.Adamax, optim.Adamax, dict(lr=0.01), torch.float16)
    assert_same(tp, gp, atol=2e-3)


def test_constructor_errors_match_torch():
    p = tgrad.ones(2, requires_grad=True)
    cases = [
        (optim.Adadelta, dict(rho=1.5), "Invalid rho value: 1.5"),
        (optim.Adadelta, dict(lr=-1.0), "Invalid learning rate: -1.0"),
        (optim.Adamax, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
        (optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
        (optim.RAdam, dict(eps=-1e-3), "Invalid epsilon value: -0.001"),
        (optim.ASGD, dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
        (optim.Rprop, dict(etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    ]
    for cls, kwargs, message in cases:
        with pytest.raises(ValueError) as ref:
            getattr(torch.optim, cls.__name__)([torch.ones(2, requires_grad=True)], **kwargs)
        assert str(ref.value) == message
        with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
            cls([p], **kwargs)
    with pytest.raises(NotImplementedError, match="capturable=True"):
        optim.NAdam([p], capturable=True)


def test_repr_matches_torch():
    p = tgrad.ones(2, requires_grad=True)
    for name in ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"]:
        assert repr(getattr(optim, name)([p])) == repr(getattr(torch.optim, name)([torch.ones(2, requires_grad=True)]))


def test_kernel_compiles_for_sm90():
    """The fused kernel compiles for a CUDA target in every algorithm's configuration (the
    interpreter accepts code the compiler rejects), with the loop-over-blocks CUDA uses."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        for name, kwargs in CASES[1::2] + [("RAdam", dict(betas=(0.6, 0.8)))]:
            tp, gp = make_params(torch.float32)
            set_grads(tp, gp, 0, torch.float32)
            getattr(optim, name)(gp, **kwargs).step()
        p = tgrad.ones(5, requires_grad=True)  # LBFGS's axpy rows

        def closure():
            p.grad = None
            loss = (p * p).sum()
            loss.backward()
            return loss
        optim.LBFGS([p], max_iter=2).step(closure)
    finally:
        launch_observers.remove(observer)
    kernels = [v for k, v in launches.items() if k[0] == "optim_step_kernel"]
    assert len(kernels) >= 7
    for kernel, signature, constants, options in kernels:
        compiled = triton.compile(ASTSource(kernel, signature, {**constants, "BLOCK": 1024}),
                                  target=GPUTarget("cuda", 90, 32), options=options)
        assert compiled.asm["cubin"]


def test_steps_compute_nothing_in_torch():
    tp, gp = make_params(torch.float64)
    set_grads(tp, gp, 0, torch.float64)
    with AtenRecorder() as rec:
        for name, kwargs in CASES:
            opt = getattr(optim, name)(gp, **kwargs)
            opt.step()
            opt.step()
            opt.load_state_dict(opt.state_dict())
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
