"""The schedulers of torch.optim.lr_scheduler against PyTorch's: the exact sequences of
learning rates (and momenta where they cycle it), get_last_lr(), the state dicts' contents, a
state-dict round trip that continues identically, the step-order and get_lr() warnings, and their
errors."""
import math
import warnings

import pytest
import torch

import tgrad
import tgrad.optim as optim


def _opt(lib, cls="SGD", **kwargs):
    mod = optim if lib is tgrad else torch.optim
    ones = tgrad.ones if lib is tgrad else torch.ones
    params = [ones(1, requires_grad=True), ones(1, requires_grad=True)]
    kwargs = {"lr": 0.1, **({"momentum": 0.9} if cls == "SGD" else {}), **kwargs}
    return getattr(mod, cls)([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], **kwargs)


def _make(lib, name, kwargs, cls="SGD"):
    mod = optim if lib is tgrad else torch.optim
    opt = _opt(lib, cls)
    if name in ("SequentialLR", "ChainedScheduler"):
        sched_mod = mod.lr_scheduler
        children = [sched_mod.LinearLR(opt, start_factor=0.2, total_iters=4),
                    sched_mod.ExponentialLR(opt, gamma=0.8), sched_mod.StepLR(opt, step_size=2, gamma=0.5)]
        if name == "SequentialLR":
            return opt, sched_mod.SequentialLR(opt, children, milestones=kwargs["milestones"])
        return opt, sched_mod.ChainedScheduler(children, optimizer=opt)
    return opt, getattr(mod.lr_scheduler, name)(opt, **kwargs)


def _hyper(opt):
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def _plain(state):
    """A state dict with nested scheduler state dicts made comparable."""
    out = {}
    for k, v in state.items():
        if k == "_schedulers":
            v = [_plain(s) for s in v]
        elif isinstance(v, float) and math.isinf(v):
            v = ("inf", v > 0)
        out[k] = v
    return out


CASES = [
    ("MultiplicativeLR", dict(lr_lambda=lambda epoch: 0.9 if epoch % 2 else 1.05)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.5)),
    ("ConstantLR", dict(factor=0.25, total_iters=4)),
    ("PolynomialLR", dict(total_iters=9, power=2.0)),
    ("PolynomialLR", {}),
    ("CosineAnnealingWarmRestarts", dict(T_0=3, T_mult=2, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=[0.1, 0.3], step_size_up=3, step_size_down=2)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=2, mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=3, mode="exp_range", gamma=0.9)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.2, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
                      scale_mode="iterations", cycle_momentum=False)),
    ("OneCycleLR", dict(max_lr=[0.2, 1.0], total_steps=16)),
    ("OneCycleLR", dict(max_lr=0.3, epochs=4, steps_per_epoch=4, pct_start=0.25, anneal_strategy="linear",
                        three_phase=True, div_factor=10.0)),
    ("SequentialLR", dict(milestones=[3, 7])),
    ("ChainedScheduler", {}),
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01)),
    ("LinearLR", dict(start_factor=0.25, end_factor=1.0, total_iters=6)),
    ("LambdaLR", dict(lr_lambda=lambda epoch: 1.0 / (1 + epoch))),
]


# with SGD (momentum) throughout, and with Adam (beta1) where the momentum cycles
RUNS = [(n, k, "SGD") for n, k in CASES] + [(n, k, "Adam") for n, k in CASES if n in ("CyclicLR", "OneCycleLR")]


@pytest.mark.parametrize("name,kwargs,cls", RUNS, ids=[f"{n}{i}-{c}" for i, (n, _, c) in enumerate(RUNS)])
def test_sequences_and_state_equal_torch(name, kwargs, cls):
    seqs = []
    for lib in (torch, tgrad):
        opt, sched = _make(lib, name, kwargs, cls)
        seq = [(sched.get_last_lr(), _hyper(opt))]
        for _ in range(15):
            opt.step()
            sched.step()
            seq.append((sched.get_last_lr(), _hyper(opt)))
        state = _plain(sched.state_dict())
        seqs.append((seq, state, {k: v for k, v in opt.param_groups[1].items() if k != "params"}))
    (tseq, tstate, tgroup), (gseq, gstate, ggroup) = seqs
    assert gseq == tseq  # exact: the same formulas in the same order
    assert ggroup == tgroup  # initial_lr, max_lr, momenta ... as PyTorch leaves them
    assert list(gstate) == list(tstate)
    for key in tstate:
        if key not in ("lr_lambdas", "_scale_fn_custom"):  # functions are not state on either side
            assert gstate[key] == tstate[key], key


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.5, 0.6, 0.7, 0.8, 0.9, 0.4, 0.41, 0.42, 0.43]
    for kwargs in [dict(patience=1), dict(mode="max", factor=0.5, patience=0, threshold=0.1, threshold_mode="abs",
                                            cooldown=2, min_lr=[0.02, 0.3]),
                   dict(factor=0.2, patience=2, threshold_mode="abs", min_lr=0.05, eps=1e-3)]:
        runs = []
        for lib in (torch, tgrad):
            opt = _opt(lib)
            mod = optim if lib is tgrad else torch.optim
            sched = mod.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
            seq = [sched.get_last_lr()]
            for m in metrics:
                opt.step()
                sched.step(lib.tensor(m))  # a 0-d loss tensor, as scripts pass
                seq.append(sched.get_last_lr())
            runs.append((seq, _plain(sched.state_dict())))
        assert runs[1] == runs[0]


@pytest.mark.parametrize("name,kwargs", [CASES[1], CASES[5], CASES[7], CASES[11], CASES[13]],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_state_dict_round_trip_continues(name, kwargs):
    opt, sched = _make(tgrad, name, kwargs)
    for _ in range(5):
        opt.step()
        sched.step()
    state = sched.state_dict()
    opt2, sched2 = _make(tgrad, name, kwargs)
    opt2.load_state_dict(opt.state_dict())
    sched2.load_state_dict(state)
    for _ in range(6):
        opt.step()
        sched.step()
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
        assert _hyper(opt2) == _hyper(opt)


def test_closed_forms_with_an_epoch_match_torch():
    for name, kwargs in [CASES[1], CASES[2], CASES[3]]:
        lrs = []
        for lib in (torch, tgrad):
            opt, sched = _make(lib, name, kwargs)
            with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
                for epoch in (3, 7, 1):
                    opt.step()
                    sched.step(epoch)
            lrs.append(sched.get_last_lr())
        assert lrs[1] == lrs[0]
    # warm restarts take fractional epochs
    lrs = []
    for lib in (torch, tgrad):
        opt, sched = _make(lib, "CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=3))
        out = []
        for epoch in (0.5, 1.25, 2.0, 7.5, 9.0, 0.3):
            opt.step()
            sched.step(epoch)
            out.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
        lrs.append(out)
    assert lrs[1] == lrs[0]


def test_errors_match_torch():
    cases = [
        ("ConstantLR", dict(factor=1.5), ValueError),
        ("CosineAnnealingWarmRestarts", dict(T_0=0), ValueError),
        ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=0), ValueError),
        ("CosineAnnealingWarmRestarts", dict(T_0=2, eta_min="0"), ValueError),
        ("CyclicLR", dict(base_lr=0.1, max_lr=1.0, mode="square"), ValueError),
        ("CyclicLR", dict(base_lr=[0.1], max_lr=1.0), ValueError),
        ("OneCycleLR", dict(max_lr=1.0), ValueError),
        ("OneCycleLR", dict(max_lr=1.0, total_steps=0), ValueError),
        ("OneCycleLR", dict(max_lr=1.0, total_steps=5, pct_start=2.0), ValueError),
        ("OneCycleLR", dict(max_lr=1.0, total_steps=5, anneal_strategy="cubic"), ValueError),
        ("ReduceLROnPlateau", dict(factor=1.0), ValueError),
        ("ReduceLROnPlateau", dict(mode="best"), ValueError),
        ("ReduceLROnPlateau", dict(threshold_mode="pct"), ValueError),
        ("ReduceLROnPlateau", dict(min_lr=[0.1]), ValueError),
        ("MultiplicativeLR", dict(lr_lambda=[lambda e: 1.0]), ValueError),
        ("MultiplicativeLR", dict(lr_lambda=3), TypeError),
    ]
    for name, kwargs, exc in cases:
        with pytest.raises(exc) as ref:
            getattr(torch.optim.lr_scheduler, name)(_opt(torch), **kwargs)
        with pytest.raises(exc) as got:
            getattr(optim.lr_scheduler, name)(_opt(tgrad), **kwargs)
        assert str(got.value) == str(ref.value), name
    # momentum cycling needs an optimizer with a momentum
    for name, kwargs in [("CyclicLR", dict(base_lr=0.1, max_lr=1.0)), ("OneCycleLR", dict(max_lr=1.0, total_steps=4))]:
        with pytest.raises(ValueError, match="^optimizer must support momentum or beta1 with `cycle_momentum`"):
            getattr(optim.lr_scheduler, name)(_opt(tgrad, "Adagrad"), **kwargs)
    opt, sched = _make(tgrad, "OneCycleLR", dict(max_lr=1.0, total_steps=2))
    opt.step()
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="^Tried to step 3 times. The specified number of total steps is 2$"):
        sched.step()
    opt = _opt(tgrad)
    plateau = optim.lr_scheduler.ReduceLROnPlateau(opt)
    for name in ("SequentialLR", "ChainedScheduler"):
        args = (opt, [plateau], []) if name == "SequentialLR" else ([plateau],)
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau` scheduler"):
            getattr(optim.lr_scheduler, name)(*args)
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        optim.lr_scheduler.SequentialLR(opt, [optim.lr_scheduler.StepLR(_opt(tgrad), 2)], [])
    with pytest.raises(ValueError, match="^Sequential Schedulers expects number of schedulers provided to be one"):
        optim.lr_scheduler.SequentialLR(opt, [optim.lr_scheduler.StepLR(opt, 2)], [3])
    assert issubclass(optim.lr_scheduler._LRScheduler, optim.lr_scheduler.LRScheduler)


def test_every_scheduler_warns_on_get_lr_outside_step():
    for name, kwargs in [("StepLR", dict(step_size=2)), ("ExponentialLR", dict(gamma=0.5)),
                         ("CosineAnnealingLR", dict(T_max=3)), ("LinearLR", {}), ("LambdaLR", dict(lr_lambda=abs)),
                         ("ConstantLR", {}), ("PolynomialLR", {}), ("OneCycleLR", dict(max_lr=1.0, total_steps=4)),
                         ("MultiStepLR", dict(milestones=[2]))]:
        _, sched = _make(tgrad, name, kwargs)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()
        with warnings.catch_warnings():  # and not inside step()
            warnings.simplefilter("error")
            sched.optimizer.step()
            sched.step()


def test_state_dict_loads_into_another_scheduler_and_step_order_warns():
    opt, sched = _make(tgrad, "StepLR", dict(step_size=2, gamma=0.5))
    for _ in range(5):
        opt.step()
        sched.step()
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
