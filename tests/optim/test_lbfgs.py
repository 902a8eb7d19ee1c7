"""LBFGS against torch.optim.LBFGS on a small regularised regression in float64 (copied parameters, the
same closure): PyTorch's defaults, a history that wraps, tolerances that stop early, the
strong-Wolfe line search, float32, the state it keeps and its errors."""
import pytest
import torch

import tgrad
import tgrad.optim as optim
from support.reference import uniform64
from support.torch_audit import AtenRecorder


def problem(lib, dtype):
    """(params, closure, the losses it returned) for a 4 -> 3 linear layer fitted to 7 targets with a
    smooth penalty (well conditioned: trajectories do not amplify rounding)."""
    w0, b0 = uniform64((3, 4), -1, 1, 1), uniform64((3,), -1, 1, 2)
    x, y = uniform64((7, 4), -2, 2, 3), uniform64((7, 3), -1, 1, 4)
    if lib is torch:
        w, b = w0.to(dtype).requires_grad_(), b0.to(dtype).requires_grad_()
        x, y = x.to(dtype), y.to(dtype)
    else:
        w, b = tgrad.from_torch(w0.to(dtype)).requires_grad_(), tgrad.from_torch(b0.to(dtype)).requires_grad_()
        x, y = tgrad.from_torch(x.to(dtype)), tgrad.from_torch(y.to(dtype))
    params = [w, b]
    calls = []

    def closure():
        for p in params:
            p.grad = None
        loss = ((x @ w.t() + b - y) ** 2).mean() + 0.05 * (lib.tanh(w) ** 4).sum()
        loss.backward()
        calls.append(float(loss.detach()))
        return loss
    return params, closure, calls


def run(lib, kwargs, steps, dtype=torch.float64):
    params, closure, calls = problem(lib, dtype)
    opt = (torch.optim if lib is torch else optim).LBFGS(params, **kwargs)
    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return params, losses, calls, opt


@pytest.mark.parametrize("kwargs,steps", [
    ({}, 2),  # PyTorch's defaults: 20 iterations, a history of 100, no line search
    (dict(lr=0.5, max_iter=4, history_size=2), 4),  # the history wraps
    (dict(max_iter=50, tolerance_change=1e-3, tolerance_grad=1e-3), 2),  # stops on a tolerance
    (dict(line_search_fn="strong_wolfe", max_iter=8, history_size=3), 3),
    (dict(line_search_fn="strong_wolfe", lr=3.0, max_iter=6, max_eval=9), 2),  # an evaluation budget
], ids=["defaults", "history-wraps", "tolerances", "strong-wolfe", "strong-wolfe-budget"])
def test_lbfgs_matches_torch(kwargs, steps):
    tp, tl, tcalls, topt = run(torch, kwargs, steps)
    gp, gl, gcalls, gopt = run(tgrad, kwargs, steps)
    assert len(gcalls) == len(tcalls)  # the same number of closure evaluations
    torch.testing.assert_close(torch.tensor(gcalls), torch.tensor(tcalls), rtol=1e-9, atol=1e-12)
    for a, b in zip(tp, gp):
        torch.testing.assert_close(b.torch(), a.detach(), rtol=1e-8, atol=1e-10)
    ts, gs = topt.state[tp[0]], gopt.state[gp[0]]
    assert set(gs) == set(ts)
    assert gs["func_evals"] == ts["func_evals"] and gs["n_iter"] == ts["n_iter"]
    assert len(gs["old_dirs"]) == len(ts["old_dirs"])
    torch.testing.assert_close(gs["d"].torch(), ts["d"], rtol=1e-7, atol=1e-10)


def test_lbfgs_float32_matches_torch():
    tp, _, tcalls, _ = run(torch, dict(max_iter=6, history_size=3), 2, torch.float32)
    gp, _, gcalls, _ = run(tgrad, dict(max_iter=6, history_size=3), 2, torch.float32)
    assert len(gcalls) == len(tcalls)
    for a, b in zip(tp, gp):
        torch.testing.assert_close(b.torch(), a.detach(), rtol=2e-5, atol=2e-6)


def test_lbfgs_state_dict_round_trip_continues():
    """A fresh LBFGS on copies of the trained parameters, loaded from the state dict, takes the
    same next step as PyTorch's loaded the same way (the history survives the round trip)."""
    kwargs = dict(max_iter=3, history_size=4)
    finals = []
    for lib, module in ((torch, torch.optim), (tgrad, optim)):
        trained, _, _, opt = run(lib, kwargs, 1)
        params, closure, _ = problem(lib, torch.float64)
        with lib.no_grad():
            for a, b in zip(params, trained):
                a.copy_(b)
        fresh = module.LBFGS(params, **kwargs)
        fresh.load_state_dict(opt.state_dict())
        assert len(fresh.state[params[0]]["old_dirs"]) > 0
        fresh.step(closure)
        finals.append(params)
    for a, b in zip(*finals):
        torch.testing.assert_close(b.torch(), a.detach(), rtol=1e-8, atol=1e-10)


def test_lbfgs_errors_match_torch():
    p, q = tgrad.ones(2, requires_grad=True), tgrad.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match=r"^LBFGS doesn't support per-parameter options \(parameter groups\)$"):
        optim.LBFGS([{"params": [p]}, {"params": [q]}])
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        optim.LBFGS([p], lr=-1)
    opt = optim.LBFGS([p], line_search_fn="wolfe")

    def closure():
        p.grad = None
        loss = (p * p).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        opt.step(closure)
    # an already optimal point: one evaluation, no update
    z = tgrad.zeros(3, requires_grad=True)
    opt = optim.LBFGS([z])

    def zero_closure():
        z.grad = None
        loss = (z * z).sum()
        loss.backward()
        return loss
    assert float(opt.step(zero_closure)) == 0.0
    assert z.tolist() == [0.0, 0.0, 0.0] and opt.state[z]["func_evals"] == 1


def test_lbfgs_step_computes_nothing_in_torch():
    params, closure, _ = problem(tgrad, torch.float64)
    opt = optim.LBFGS(params, max_iter=4, history_size=2, line_search_fn="strong_wolfe")
    with AtenRecorder() as rec:
        opt.step(closure)
        opt.step(closure)
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
