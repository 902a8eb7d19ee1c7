"""tgrad.optim against torch.optim: every optimizer (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta,
Adamax, NAdam, RAdam, ASGD, Rprop) and variant over 10 steps with copied parameters and identical
random gradients, in float32 and float64, PyTorch's defaults and non-default options, the state it
keeps, one fused launch per parameter group (the CPU's tuple launch bit-identical to the compiled
configuration's pointer table), state dicts, float16 parameters, errors and reprs.

Parameters include odd sizes, a 0-d tensor, a non-contiguous (transposed) leaf and one that gets no
gradient on some steps (PyTorch skips it: no update, no step count)."""
import io
from contextlib import nullcontext

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from support.launches import record_launches
from support.optimizers import STEPS, assert_same, make_params, run_both, set_grads
from support.reference import uniform64
from support.torch_audit import AtenRecorder
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.runtime.target import as_cuda
from tgrad.utils.data import DataLoader, TensorDataset

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.1)),
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_ten_steps_match_torch(name, kwargs, dtype):
    tp, gp, topt, gopt, launches = run_both(getattr(torch.optim, name), getattr(optim, name), kwargs, dtype)
    assert_same(tp, gp, atol=1e-12 if dtype is torch.float64 else 2e-6)
    assert launches == [1] * STEPS  # the whole group in one fused kernel, every step
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_the_cpu_launch_is_bit_identical_to_the_table_launch(name, kwargs, dtype):
    """The CPU's launch (the group's tensors as tuple arguments, ``optim_params_kernel``) and the
    compiled configuration's (a pointer table, ``optim_step_kernel``, interpreted inside
    ``as_cuda()``) run the same update formulas on the same numbers: equal bits, state included."""
    results = []
    for decisions in (as_cuda, nullcontext):
        _, gp = make_params(dtype)
        opt = getattr(optim, name)(gp, **kwargs)
        for step in range(4):
            set_grads(make_params(dtype)[0], gp, step, dtype)
            with decisions(), tgrad.kernels.count_launches() as c:
                opt.step()
            assert list(c) == ["optim_params_kernel" if decisions is nullcontext else "optim_step_kernel"]
        state = [v.torch() for p in gp for v in opt.state[p].values() if isinstance(v, tgrad.Tensor)]
        results.append([p.torch() for p in gp] + state)
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name,kwargs,overrides", [
    ("SGD", dict(lr=0.1, momentum=0.9), dict(lr=0.01, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.05), dict(lr=0.01, betas=(0.5, 0.9), amsgrad=True)),
    ("NAdam", dict(lr=0.05), dict(lr=0.01, betas=(0.5, 0.9))), ("Rprop", dict(lr=0.05), dict(lr=0.2)),
    ("ASGD", dict(lr=0.05), dict(lambd=0.3, t0=2)),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_param_groups_have_their_own_hyperparameters(name, kwargs, overrides, dtype):
    tp, gp, topt, gopt, launches = run_both(getattr(torch.optim, name), getattr(optim, name), kwargs, dtype,
                                            groups=overrides)
    assert_same(tp, gp, atol=1e-12 if dtype is torch.float64 else 1e-5)
    assert launches == [2] * STEPS  # one launch per group
    assert [g["lr"] for g in gopt.param_groups] == [g["lr"] for g in topt.param_groups]


@pytest.mark.parametrize("name", ["Adam", "Adamax"])
def test_float16_parameters_update_in_fp32_math(name):
    tp, gp, *_ = run_both(getattr(torch.optim, name), getattr(optim, name), dict(lr=0.01), dtype=torch.float16)
    for a, b in zip(tp, gp):
        assert b.dtype is tgrad.float16
    assert_same(tp, gp, atol=2e-3)


def test_a_large_parameter_spans_several_table_rows():
    w = uniform64((300, 300), -1, 1, 3).float()  # 90000 elements: more than one 2^16 chunk on the CPU
    a, b = w.clone().requires_grad_(), tgrad.from_torch(w.clone()).requires_grad_()
    topt, gopt = torch.optim.Adam([a], lr=0.01), optim.Adam([b], lr=0.01)
    for step in range(2):
        g = uniform64((300, 300), -1, 1, 50 + step).float()
        a.grad, b.grad = g.clone(), tgrad.from_torch(g.clone())
        topt.step()
        gopt.step()
    assert_same([a], [b], atol=1e-6)


def test_step_returns_closure_loss_and_bumps_versions():
    p = tgrad.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    v = p._version_value
    loss = opt.step(closure)
    assert loss.item() == 3.0 and p.tolist() == [0.0, 0.0, 0.0]
    assert p._version_value == v + 1  # an in-place write, seen by autograd's version checks


def test_zero_grad():
    p = tgrad.ones(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * 2).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_constructor_errors_match_torch():
    p = tgrad.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -0.1$"):
        optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match=r"^Invalid learning rate: -1$"):
        optim.Adam([p], lr=-1)
    with pytest.raises(ValueError, match=r"^Invalid beta parameter at index 1: 1.0$"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match=r"^Invalid momentum value: -0.5$"):
        optim.SGD([p], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="^Nesterov momentum requires a momentum and zero dampening$"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of Tensors "
                                        "or dicts, but got tgrad.FloatTensor$"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is "):
        optim.SGD([p, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        optim.SGD([p * 2], lr=0.1)
    q = tgrad.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        optim.SGD([{"params": [p]}, {"params": [q, p]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)
    # as in PyTorch, a tensor that does not require grad is accepted and simply never updated
    frozen = tgrad.ones(2)
    opt = optim.SGD([frozen], lr=0.1)
    opt.step()
    assert frozen.tolist() == [1.0, 1.0]
    # the messages of the other optimizers' hyperparameter checks, compared with PyTorch's own
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


def _stepped(cls, kwargs, steps=3, seed=0):
    tp, gp = make_params(torch.float32, seed)
    topt, gopt = getattr(torch.optim, cls.__name__)(tp, **kwargs), cls(gp, **kwargs)
    for step in range(steps):
        set_grads(tp, gp, step, torch.float32)
        topt.step()
        gopt.step()
    return tp, gp, topt, gopt


@pytest.mark.parametrize("cls,kwargs", [(optim.SGD, dict(lr=0.1, momentum=0.9)),
                                        (optim.Adam, dict(lr=0.1, amsgrad=True)),
                                        (optim.RMSprop, dict(lr=0.01, centered=True)), (optim.Adagrad, dict(lr=0.1))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_state_dict_has_torchs_structure_and_round_trips(cls, kwargs):
    tp, gp, topt, gopt = _stepped(cls, kwargs)
    ts, gs = topt.state_dict(), gopt.state_dict()
    assert list(gs) == ["state", "param_groups"]
    assert gs["param_groups"] == ts["param_groups"]  # same keys, values and parameter numbering
    assert list(gs["state"]) == list(ts["state"])
    for i in ts["state"]:
        assert list(gs["state"][i]) == list(ts["state"][i])
        for k, v in ts["state"][i].items():
            torch.testing.assert_close(gs["state"][i][k].torch().double(), v.double(), rtol=1e-5, atol=1e-6)
    # a fresh optimizer loaded from the state dict continues exactly like the original
    _, fresh_params = make_params(torch.float32)
    for a, b in zip(fresh_params, gp):
        a.data = b.detach().clone()
    fresh = cls(fresh_params, **kwargs)
    fresh.load_state_dict(gs)
    for step in range(3, 5):
        set_grads(tp, gp, step, torch.float32)
        for a, b in zip(fresh_params, gp):
            a.grad = None if b.grad is None else b.grad.clone()
        gopt.step()
        fresh.step()
    for a, b in zip(fresh_params, gp):
        assert a.torch().tolist() == b.torch().tolist()


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


def test_load_state_dict_checks_groups():
    p, q = tgrad.ones(2, requires_grad=True), tgrad.ones(3, requires_grad=True)
    sd = optim.SGD([p, q], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        optim.SGD([p], lr=0.1).load_state_dict(sd)


def test_repr_matches_torch():
    p = tgrad.ones(2, requires_grad=True)
    for name, kwargs in [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01)), ("RMSprop", {}),
                         ("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("ASGD", {}),
                         ("Rprop", {})]:
        ref = repr(getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], **kwargs))
        assert repr(getattr(optim, name)([p], **kwargs)) == ref


def test_optimizer_kernels_compile_for_sm90():
    """The fused kernel compiles for a CUDA target in every algorithm's configuration (the
    interpreter accepts code the compiler rejects): as the tests launch it, and with the
    loop-over-blocks configuration CUDA launches use (1K blocks of 16K-element rows)."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        with as_cuda():  # CUDA's launch: the pointer table
            for name, kwargs in [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                                 ("AdamW", dict(lr=0.1, amsgrad=True)), ("RMSprop", dict(centered=True, momentum=0.5)),
                                 ("Adagrad", dict(weight_decay=0.1))] + CASES[15::2] + [("RAdam", dict(betas=(0.6, 0.8)))]:
                _stepped(getattr(optim, name), kwargs, steps=1)
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
    assert len(kernels) >= 11
    for kernel, signature, constants, options in kernels:
        for block in ({}, {"BLOCK": 1024}):
            compiled = triton.compile(ASTSource(kernel, signature, {**constants, **block}),
                                      target=GPUTarget("cuda", 90, 32), options=options)
            assert compiled.asm["cubin"]


def test_training_steps_with_every_optimizer_compute_nothing_in_torch():
    """The storage-only audit (tests/kernels/test_no_torch_compute.py) over two steps and a state-dict
    round trip of every optimizer configuration, and a CNN training step with each of the first
    optimizers, a shuffled DataLoader batch, a scheduler step and a checkpoint round trip."""
    tp, gp = make_params(torch.float64)
    set_grads(tp, gp, 0, torch.float64)
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 3))
    data = TensorDataset(tgrad.randn(8, 1, 4, 4), tgrad.randint(0, 3, (8,)))
    with AtenRecorder() as rec:
        for name, kwargs in CASES:
            opt = getattr(optim, name)(gp, **kwargs)
            opt.step()
            opt.step()
            opt.load_state_dict(opt.state_dict())
        batches = list(DataLoader(data, batch_size=4, shuffle=True))
        for i, (cls, kwargs) in enumerate([(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)),
                                           (optim.Adam, dict(amsgrad=True)), (optim.AdamW, {}),
                                           (optim.RMSprop, dict(momentum=0.9, centered=True)), (optim.Adagrad, {})]):
            opt = cls(model.parameters(), **kwargs)
            sched = optim.lr_scheduler.StepLR(opt, step_size=1)
            x, y = batches[i % 2]
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            sched.step()
        buf = io.BytesIO()
        tgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, buf)
        buf.seek(0)
        opt.load_state_dict(tgrad.load(buf)["optimizer"])
    assert rec.ops["empty"] > 0
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
