"""tgrad.optim against torch.optim: every optimizer and variant over 10 steps with copied parameters
and identical random gradients, the state it keeps, one fused launch per parameter group, state
dicts, errors, and the learning-rate schedulers' sequences.

Parameters include odd sizes, a 0-d tensor, a non-contiguous (transposed) leaf and one that gets no
gradient on some steps (PyTorch skips it: no update, no step count)."""
import math
import warnings

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.optim as optim
from support.launches import record_launches
from support.optimizers import STEPS, assert_same, make_params, run_both, set_grads
from support.reference import uniform64
from support.torch_audit import AtenRecorder
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.utils.data import DataLoader, TensorDataset

CASES = [
    (torch.optim.SGD, optim.SGD, dict(lr=0.1)),
    (torch.optim.SGD, optim.SGD, dict(lr=0.1, momentum=0.9)),
    (torch.optim.SGD, optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    (torch.optim.SGD, optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    (torch.optim.SGD, optim.SGD, dict(lr=0.1, momentum=0.5, maximize=True)),
    (torch.optim.Adam, optim.Adam, dict(lr=0.05)),
    (torch.optim.Adam, optim.Adam, dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    (torch.optim.Adam, optim.Adam, dict(lr=0.01, eps=1e-6, maximize=True)),
    (torch.optim.AdamW, optim.AdamW, dict(lr=0.05)),
    (torch.optim.AdamW, optim.AdamW, dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    (torch.optim.RMSprop, optim.RMSprop, dict(lr=0.01)),
    (torch.optim.RMSprop, optim.RMSprop, dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.1)),
    (torch.optim.Adagrad, optim.Adagrad, dict(lr=0.1)),
    (torch.optim.Adagrad, optim.Adagrad, dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.1)),
]


@pytest.mark.parametrize("torch_cls,tgrad_cls,kwargs", CASES,
                         ids=[f"{c[1].__name__}-{'-'.join(c[2])}" for c in CASES])
def test_ten_steps_match_torch_float32(torch_cls, tgrad_cls, kwargs):
    tp, gp, topt, gopt, launches = run_both(torch_cls, tgrad_cls, kwargs)
    assert_same(tp, gp, atol=1e-5)
    assert launches == [1] * STEPS  # the whole group in one fused kernel, every step
    # the state PyTorch keeps, value for value
    for a, b in zip(tp, gp):
        ts, gs = topt.state[a], gopt.state[b]
        assert set(ts) == set(gs)
        for key in ts:
            torch.testing.assert_close(gs[key].torch().double(), ts[key].double(), rtol=1e-5, atol=1e-5, msg=key)


@pytest.mark.parametrize("torch_cls,tgrad_cls,kwargs", [CASES[3], CASES[6], CASES[11], CASES[13]],
                         ids=["sgd-nesterov", "adam-amsgrad", "rmsprop-centered", "adagrad-decay"])
def test_ten_steps_match_torch_float64(torch_cls, tgrad_cls, kwargs):
    tp, gp, *_ = run_both(torch_cls, tgrad_cls, kwargs, dtype=torch.float64)
    assert_same(tp, gp, atol=1e-12)


@pytest.mark.parametrize("torch_cls,tgrad_cls,kwargs,overrides", [
    (torch.optim.SGD, optim.SGD, dict(lr=0.1, momentum=0.9), dict(lr=0.01, nesterov=True, weight_decay=0.1)),
    (torch.optim.Adam, optim.Adam, dict(lr=0.05), dict(lr=0.01, betas=(0.5, 0.9), amsgrad=True)),
], ids=["sgd", "adam"])
def test_param_groups_have_their_own_hyperparameters(torch_cls, tgrad_cls, kwargs, overrides):
    tp, gp, topt, gopt, launches = run_both(torch_cls, tgrad_cls, kwargs, groups=overrides)
    assert_same(tp, gp, atol=1e-5)
    assert launches == [2] * STEPS  # one launch per group
    assert [g["lr"] for g in gopt.param_groups] == [g["lr"] for g in topt.param_groups]


def test_float16_parameters_update_in_fp32_math():
    tp, gp, *_ = run_both(torch.optim.Adam, optim.Adam, dict(lr=0.01), dtype=torch.float16)
    for a, b in zip(tp, gp):
        assert b.dtype is tgrad.float16
        torch.testing.assert_close(b.torch().double(), a.detach().double(), rtol=0, atol=2e-3)


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
                         ("Adagrad", {})]:
        ref = repr(getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], **kwargs))
        assert repr(getattr(optim, name)([p], **kwargs)) == ref


# ----------------------------------------------------------------------------- schedulers

def _lrs(opt_module, sched_name, kwargs, steps=14, sched_module=None):
    params = [tgrad.ones(1, requires_grad=True), tgrad.ones(1, requires_grad=True)] if opt_module is optim else \
        [torch.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)]
    opt = opt_module.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1)
    sched = getattr(opt_module.lr_scheduler, sched_name)(opt, **kwargs)
    seq = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
    return seq, sched


@pytest.mark.parametrize("name,kwargs", [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("LinearLR", dict(start_factor=0.25, end_factor=1.0, total_iters=6)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 1.0 / (1 + epoch))),
])
def test_scheduler_lr_sequences_equal_torch(name, kwargs):
    ours, sched = _lrs(optim, name, kwargs)
    ref, _ = _lrs(torch.optim, name, kwargs)
    assert ours == ref  # exact: the same float formulas in the same order
    assert sched.state_dict()["last_epoch"] == 14


def test_scheduler_state_dict_round_trip_and_order_warning():
    _, sched = _lrs(optim, "StepLR", dict(step_size=2, gamma=0.5), steps=5)
    state = sched.state_dict()
    p = tgrad.ones(1, requires_grad=True)
    other = optim.lr_scheduler.StepLR(optim.SGD([p, tgrad.ones(1, requires_grad=True)], lr=0.1), step_size=9)
    other.load_state_dict(state)
    assert other.last_epoch == 5 and other.step_size == 2 and other.get_last_lr() == sched.get_last_lr()
    opt = optim.SGD([p], lr=0.1)
    s = optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        s.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        s.step()
    assert math.isclose(s.get_last_lr()[0], 0.025)


def test_optimizer_kernels_compile_for_sm90():
    """The fused kernel compiles for a CUDA target in the configurations the tests launch (the
    interpreter accepts code the compiler rejects)."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        for cls, kwargs in [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
                            (optim.AdamW, dict(lr=0.1, amsgrad=True)),
                            (optim.RMSprop, dict(centered=True, momentum=0.5)),
                            (optim.Adagrad, dict(weight_decay=0.1))]:
            _stepped(cls, kwargs, steps=1)
    finally:
        launch_observers.remove(observer)
    kernels = [v for k, v in launches.items() if k[0] == "optim_step_kernel"]
    assert len(kernels) == 4
    # and the loop-over-blocks configuration CUDA launches use (1K blocks of 16K-element rows)
    kernel, signature, constants, options = kernels[1]
    kernels.append((kernel, signature, {**constants, "BLOCK": 1024}, options))
    for kernel, signature, constants, options in kernels:
        compiled = triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                                  options=options)
        assert compiled.asm["cubin"]


def test_training_steps_with_every_optimizer_compute_nothing_in_torch():
    """The storage-only audit (tests/kernels/test_no_torch_compute.py) over a CNN training step with each
    optimizer, a shuffled DataLoader batch, a scheduler step and a checkpoint round trip."""
    import io

    import tgrad.nn as nn
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 3))
    data = TensorDataset(tgrad.randn(8, 1, 4, 4), tgrad.randint(0, 3, (8,)))
    with AtenRecorder() as rec:
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
