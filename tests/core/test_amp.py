"""tgrad.amp.GradScaler against torch.amp.GradScaler on the same model, data and injected overflows."""
import pickle
import threading
import warnings

import numpy as np

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


# ------------------------------------------------------------------------------ autocast

def _autocast_pair(seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(shape).astype(np.float32) for k, shape in
            (("x", (4, 3)), ("w", (5, 3)), ("b", (5,)), ("img", (1, 2, 6, 6)), ("k", (3, 2, 3, 3)),
             ("q", (1, 2, 4, 8)), ("t", (4, 5)))}


CASES = {
    "linear": lambda L, d: L.nn.functional.linear(d["x"], d["w"], d["b"]),
    "conv2d": lambda L, d: L.nn.functional.conv2d(d["img"], d["k"], padding=1),
    "sdpa": lambda L, d: L.nn.functional.scaled_dot_product_attention(d["q"], d["q"] * 0.5, d["q"]),
    "prelu": lambda L, d: L.nn.functional.prelu(d["x"], d["b"][:1]),
    "matmul_operator": lambda L, d: d["x"] @ d["w"].T,
    "mm": lambda L, d: L.mm(d["x"], d["w"].T),
    "bmm": lambda L, d: L.bmm(d["q"][0], d["q"][0].transpose(1, 2)),
    "addmm": lambda L, d: L.addmm(d["b"], d["x"], d["w"].T),
    "baddbmm": lambda L, d: L.baddbmm(d["q"][0, :, :, :4], d["q"][0], d["q"][0].transpose(1, 2)[:, :, :4]),
    "cdist_float32": lambda L, d: L.cdist(d["x"].half(), d["w"].half()),
    "mse_of_linear": lambda L, d: L.nn.functional.mse_loss(L.nn.functional.linear(d["x"], d["w"]), d["t"]),
    "cross_entropy_of_linear": lambda L, d: L.nn.functional.cross_entropy(L.nn.functional.linear(d["x"], d["w"]),
                                                                          d["t"].argmax(1)),
    "bce_with_logits": lambda L, d: L.nn.functional.binary_cross_entropy_with_logits(
        L.nn.functional.linear(d["x"], d["w"]), d["t"].sigmoid()),
    "soft_margin_of_linear": lambda L, d: L.nn.functional.soft_margin_loss(L.nn.functional.linear(d["x"], d["w"]),
                                                                           d["t"].sign().detach()),
    "multi_margin_of_linear": lambda L, d: L.nn.functional.multi_margin_loss(L.nn.functional.linear(d["x"], d["w"]),
                                                                             d["t"].argmax(1)),
    "multilabel_soft_margin_keeps_dtype": lambda L, d: L.nn.functional.multilabel_soft_margin_loss(
        L.nn.functional.linear(d["x"], d["w"]), d["t"].sigmoid()),
    "ctc_of_linear": lambda L, d: L.nn.functional.ctc_loss(
        L.nn.functional.linear(d["x"], d["w"]).log_softmax(-1).unsqueeze(1), L.tensor([[1, 2]]), [4], [2]),
    "grid_sample_float32": lambda L, d: L.nn.functional.grid_sample(
        d["img"].half(), (d["img"][:, :, :3, :4].permute(0, 2, 3, 1) * 0.5).half(), align_corners=False),
    "relu_keeps_dtype": lambda L, d: L.nn.functional.relu(L.nn.functional.linear(d["x"], d["w"])),
    "float64_untouched": lambda L, d: L.nn.functional.linear(d["x"].double(), d["w"].double()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cpu_float16_autocast_casts_as_torch(case):
    """Under autocast("cpu", float16) each op's output dtype is PyTorch's, its values agree to fp16
    precision, and the float32 leaves get float32 gradients of the same values."""
    data = _autocast_pair()
    ours = {k: tgrad.tensor(v).requires_grad_() for k, v in data.items()}
    theirs = {k: torch.tensor(v).requires_grad_() for k, v in data.items()}
    with tgrad.autocast("cpu", dtype=tgrad.float16):
        y_o = CASES[case](tgrad, ours)
    with torch.autocast("cpu", dtype=torch.float16):
        y_t = CASES[case](torch, theirs)
    assert str(y_o.dtype).split(".")[1] == str(y_t.dtype).split(".")[1]
    torch.testing.assert_close(y_o.torch().float(), y_t.detach().float(), rtol=2e-2, atol=2e-2)
    y_o.float().sum().backward()
    y_t.float().sum().backward()
    for k in data:
        if theirs[k].grad is not None:
            assert ours[k].grad.dtype is tgrad.float32
            torch.testing.assert_close(ours[k].grad.torch(), theirs[k].grad, rtol=3e-2, atol=3e-2)


def test_autocast_nests_decorates_and_stays_in_its_thread():
    x, w = tgrad.randn(2, 3), tgrad.randn(4, 3)
    with tgrad.autocast("cpu", dtype=tgrad.float16):
        assert tgrad.nn.functional.linear(x, w).dtype is tgrad.float16
        with tgrad.autocast("cpu", enabled=False):
            assert tgrad.nn.functional.linear(x, w).dtype is tgrad.float32
            assert not tgrad.is_autocast_enabled("cpu")
        assert tgrad.is_autocast_enabled("cpu") and tgrad.get_autocast_dtype("cpu") is tgrad.float16
        seen = []
        worker = threading.Thread(target=lambda: seen.append(tgrad.nn.functional.linear(x, w).dtype))
        worker.start()
        worker.join()
        assert seen == [tgrad.float32]  # autocast state is per thread, as PyTorch's

    @tgrad.autocast("cpu", dtype=tgrad.float16)
    def project(a):
        return tgrad.nn.functional.linear(a, w)
    assert project(x).dtype is tgrad.float16 and not tgrad.is_autocast_enabled("cpu")


def test_autocast_arguments_and_warnings_as_torch():
    for lib in (torch, tgrad):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(3)
        with pytest.raises(RuntimeError):
            lib.autocast("no_such_device")
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
            lib.autocast("cpu", dtype=lib.float32)
        if not torch.cuda.is_available():
            with pytest.warns(UserWarning, match="CUDA is not available"):
                lib.autocast("cuda")
        with pytest.warns(FutureWarning, match="torch.cpu.amp.GradScaler"):
            lib.cpu.amp.GradScaler()
    with pytest.raises(RuntimeError, match="cannot compute bfloat16"):
        tgrad.autocast("cpu")  # PyTorch's CPU default is bfloat16, which the interpreter cannot run
    with tgrad.autocast("cpu", enabled=False):
        pass
