"""tgrad.amp.GradScaler against torch.amp.GradScaler on the same model, data and injected overflows."""
import pickle
import warnings

import pytest
import torch

import tgrad
import tgrad.nn as gnn


def _pair(seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(3, 2).double()
    ours = gnn.Linear(3, 2).double()
    with tgrad.no_grad():
        ours.weight.copy_(tgrad.tensor(theirs.weight.detach().numpy()))
        ours.bias.copy_(tgrad.tensor(theirs.bias.detach().numpy()))
    return ours, theirs


@pytest.mark.parametrize("overflow_steps", [(), (1,), (0, 3, 4)])
def test_scale_skip_and_growth_follow_torch(overflow_steps):
    ours, theirs = _pair()
    opt_o = tgrad.optim.SGD(ours.parameters(), lr=0.1)
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.1)
    kw = dict(init_scale=2.0 ** 10, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    sc_o, sc_t = tgrad.amp.GradScaler("cpu", **kw), torch.amp.GradScaler("cpu", **kw)
    x = torch.randn(5, 3, dtype=torch.float64)
    for step in range(6):
        bad = float("inf") if step in overflow_steps else 1.0
        for model, opt, sc, lib, xx in ((ours, opt_o, sc_o, tgrad, tgrad.tensor(x.numpy())),
                                        (theirs, opt_t, sc_t, torch, x)):
            opt.zero_grad()
            loss = (model(xx) ** 2).sum() * bad
            sc.scale(loss).backward()
            if step % 2:
                sc.unscale_(opt)  # explicit unscale (e.g. before clipping), then step
            result = sc.step(opt)
            sc.update()
        assert result is None
        assert sc_o.get_scale() == sc_t.get_scale()
        assert sc_o.state_dict() == sc_t.state_dict()
        torch.testing.assert_close(ours.weight.torch(), theirs.weight.detach(), rtol=1e-12, atol=0)
        torch.testing.assert_close(ours.bias.torch(), theirs.bias.detach(), rtol=1e-12, atol=0)


def test_misuse_raises_as_torch():
    for lib, model in ((tgrad, _pair()[0]), (torch, _pair()[1])):
        opt = lib.optim.SGD(model.parameters(), lr=0.1)
        sc = lib.amp.GradScaler("cpu")
        sc.scale(model(lib.ones(1, 3, dtype=lib.float64)).sum()).backward()
        sc.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called on this optimizer"):
            sc.unscale_(opt)
        sc.step(opt)
        with pytest.raises(RuntimeError, match="after step"):
            sc.unscale_(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
            sc.step(opt)
        with pytest.raises(RuntimeError, match="Closure"):
            lib.amp.GradScaler("cpu").step(opt, closure=lambda: 0)
        with pytest.raises(AssertionError, match="growth factor"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(RuntimeError, match="source state dict is empty"):
            lib.amp.GradScaler("cpu").load_state_dict({})
        with pytest.raises(ValueError, match="iterable of Tensors"):
            lib.amp.GradScaler("cpu").scale(3)
        with pytest.raises(AssertionError, match="update but _scale is None"):
            lib.amp.GradScaler("cpu").update()
        fresh = lib.amp.GradScaler("cpu")
        fresh.scale(lib.ones(1))
        with pytest.raises(AssertionError, match="No inf checks"):
            fresh.update()
        with pytest.raises(AssertionError, match="only be pickled"):
            pickle.dumps(sc)
        sc.update()
        clone = pickle.loads(pickle.dumps(sc))
        assert clone.state_dict() == sc.state_dict()


def test_scale_keeps_the_container_and_state_dicts_load_across():
    sc = tgrad.amp.GradScaler("cpu", init_scale=8.0)
    a, b = tgrad.ones(2), tgrad.full((1,), 3.0)
    pair = sc.scale((a, b))
    assert isinstance(pair, tuple) and pair[1].tolist() == [24.0]
    assert [t.tolist() for t in sc.scale([a])] == [[8.0, 8.0]]
    theirs = torch.amp.GradScaler("cpu", init_scale=32.0, growth_interval=7)
    sc.load_state_dict(theirs.state_dict())
    assert sc.state_dict() == theirs.state_dict()


def test_cuda_scaler_without_cuda_disables_itself_with_torchs_warning():
    if torch.cuda.is_available():
        pytest.skip("CUDA is present: the scaler stays enabled")
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.amp.GradScaler("cuda")
    with pytest.warns(UserWarning, match="CUDA is not available") as ours:
        sc = tgrad.amp.GradScaler("cuda")
    assert str(ours[0].message) == str(theirs[0].message)
    assert not sc.is_enabled() and sc.get_scale() == 1.0 and sc.state_dict() == {}
    t = tgrad.ones(2)
    assert sc.scale(t) is t
