"""State moves both ways between tgrad and PyTorch: ``tgrad.load`` reads ``torch.save`` files through
PyTorch's weights-only loader (its tensors become tgrad tensors without a copy, its refusals are
PyTorch's), ``tgrad.save`` writes PyTorch's zip format for .pt/.pth paths (real ``torch.load``
reads it), modules and optimizers load each other's state dicts, and a training run resumed across
the two libraries continues as it would have in PyTorch."""
import copy
import io
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

import tgrad
import tgrad.nn as nn


def _pair_of_models():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2)).double()
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    return ref, ours


def _data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(5, 3, dtype=torch.float64, generator=g), torch.randn(5, 2, dtype=torch.float64, generator=g)


def _train(model, opt, x, y, steps, lib):
    for _ in range(steps):
        opt.zero_grad()
        lib.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


# ----------------------------------------------------------------------------- torch.save files

@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_save_files_load_as_tgrad_tensors(tmp_path, zip_format):
    ref, _ = _pair_of_models()
    ref[0].weight.requires_grad_(False)
    obj = {"model": ref.state_dict(), "shape": ref[0].weight.shape, "epoch": 3, "dtype": torch.float64,
           "param": torch.nn.Parameter(torch.ones(2)), "grad": torch.ones(2, requires_grad=True)}
    obj["tied"] = obj["model"]["0.bias"]
    path = tmp_path / "ckpt.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=zip_format)
    back, theirs = tgrad.load(path), torch.load(path, weights_only=True)
    assert type(back["model"]) is type(theirs["model"]) and list(back["model"]) == list(theirs["model"])
    for k, v in theirs["model"].items():
        assert type(back["model"][k]) is tgrad.Tensor and back["model"][k].dtype is tgrad.float64
        assert torch.equal(back["model"][k].torch(), v)
    assert type(back["shape"]) is tgrad.Size and back["shape"] == (4, 3)
    assert back["epoch"] == 3 and back["dtype"] is tgrad.float64
    assert type(back["param"]) is nn.Parameter and back["param"].requires_grad
    assert type(back["grad"]) is tgrad.Tensor and back["grad"].requires_grad and back["grad"].is_leaf
    assert back["tied"] is back["model"]["0.bias"]  # one tensor saved twice is one tensor
    fresh = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    fresh.load_state_dict(tgrad.load(io.BytesIO(path.read_bytes()))["model"])
    x, _ = _data()
    assert torch.allclose(fresh(tgrad.from_torch(x)).torch(), ref(x).detach(), atol=1e-12, rtol=0)


def test_torch_load_results_are_wrapped_without_a_copy(tmp_path, monkeypatch):
    torch.save({"w": torch.arange(6.0).reshape(2, 3)}, tmp_path / "m.pt")
    seen = []
    real_load = torch.load

    def spy(*args, **kwargs):  # the library has no test hook: watch what PyTorch's loader returns
        out = real_load(*args, **kwargs)
        seen.append(out)
        return out
    monkeypatch.setattr(torch, "load", spy)
    back = tgrad.load(tmp_path / "m.pt")
    assert back["w"].data_ptr() == seen[0]["w"].data_ptr()


def test_weights_only_rules_are_pytorchs(tmp_path):
    path = tmp_path / "module.pt"
    torch.save(torch.nn.Linear(2, 3), path)  # a whole module: pickled code
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed") as theirs:
        torch.load(path)
    with pytest.raises(type(theirs.value), match="Weights only load failed"):
        tgrad.load(path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tgrad.load(path, weights_only=True)
    assert isinstance(tgrad.load(path, weights_only=False), torch.nn.Linear)  # the caller's explicit choice


def test_map_location_applies_to_torch_files(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "m.pt")
    for where in ("cpu", torch.device("cpu"), {"cpu": "cpu"}, lambda storage, loc: storage):
        assert tgrad.load(tmp_path / "m.pt", map_location=where)["w"].device == torch.device("cpu")


def test_pt_paths_are_written_in_torchs_format(tmp_path):
    _, ours = _pair_of_models()
    tied = {"a": ours[0].bias.detach(), "b": ours[0].bias.detach()}
    obj = {"model": ours.state_dict(), "param": nn.Parameter(tgrad.ones(2), requires_grad=False),
           "shape": tgrad.zeros(2, 3).shape, "dtype": tgrad.float16, "tied": tied, "step": 7}
    for name in ("ckpt.pt", "ckpt.PTH"):
        tgrad.save(obj, tmp_path / name)
        theirs = torch.load(tmp_path / name, weights_only=True)  # real PyTorch, its default loader
        assert list(theirs["model"]) == list(ours.state_dict())
        for k, v in ours.state_dict().items():
            assert type(theirs["model"][k]) is torch.Tensor and torch.equal(theirs["model"][k], v.torch())
        assert type(theirs["param"]) is torch.nn.Parameter and not theirs["param"].requires_grad
        assert type(theirs["shape"]) is torch.Size and theirs["dtype"] is torch.float16 and theirs["step"] == 7
        assert theirs["tied"]["a"].data_ptr() == theirs["tied"]["b"].data_ptr()
        back = tgrad.load(tmp_path / name)
        assert type(back["param"]) is nn.Parameter and type(back["shape"]) is tgrad.Size
    # other names, and file objects, stay safetensors unless asked
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    assert buf.getvalue()[8:9] == b"{"
    buf = io.BytesIO()
    tgrad.save(obj, buf, format="torch")
    buf.seek(0)
    assert torch.load(buf)["step"] == 7
    with pytest.raises(ValueError, match="format must be 'safetensors' or 'torch', got 'pickle'"):
        tgrad.save(obj, io.BytesIO(), format="pickle")
    with pytest.raises(TypeError, match="A whole Sequential cannot be saved"):
        tgrad.save({"m": ours}, tmp_path / "whole.pt")
    assert not (tmp_path / "whole.pt").exists()


# ----------------------------------------------------------------------------- state dicts both ways

def test_modules_load_each_others_state_dicts():
    ref, ours = _pair_of_models()
    x, _ = _data()
    ours.load_state_dict(ref.state_dict())  # torch tensors, as they come
    assert torch.allclose(ours(tgrad.from_torch(x)).torch(), ref(x).detach(), atol=1e-12, rtol=0)
    with tgrad.no_grad():
        for p in ours.parameters():
            p.mul_(0.5)
    ref.load_state_dict(tgrad.to_torch(ours.state_dict()))
    assert torch.allclose(ours(tgrad.from_torch(x)).torch(), ref(x).detach(), atol=1e-12, rtol=0)
    with pytest.raises(RuntimeError, match="size mismatch for 0.weight"):
        nn.Sequential(nn.Linear(2, 4)).load_state_dict({"0.weight": torch.zeros(4, 3), "0.bias": torch.zeros(4)})


@pytest.mark.parametrize("make", [
    lambda lib, ps: lib.optim.Adam(ps, lr=0.05, betas=(0.8, 0.99)),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    lambda lib, ps: lib.optim.AdamW(ps, lr=0.05, weight_decay=0.1, amsgrad=True),
], ids=["Adam", "SGD", "AdamW"])
def test_optimizers_load_each_others_state_dicts(make):
    x, y = _data()
    ref, ours = _pair_of_models()
    ours.load_state_dict(ref.state_dict())
    ref_opt = make(torch, ref.parameters())
    _train(ref, ref_opt, x, y, 3, torch)
    # torch -> tgrad: resume the run in tgrad from PyTorch's state dicts
    ours.load_state_dict(ref.state_dict())
    opt = make(tgrad, ours.parameters())
    opt.load_state_dict(ref_opt.state_dict())
    _train(ours, opt, tgrad.from_torch(x), tgrad.from_torch(y), 3, tgrad)
    _train(ref, ref_opt, x, y, 3, torch)
    for p, q in zip(ours.parameters(), ref.parameters()):
        assert torch.allclose(p.torch(), q.detach(), atol=1e-10, rtol=0)
    # tgrad -> torch: and back again
    other, _ = _pair_of_models()
    other.load_state_dict(tgrad.to_torch(ours.state_dict()))
    other_opt = make(torch, other.parameters())
    other_opt.load_state_dict(tgrad.to_torch(copy.deepcopy(opt.state_dict())))  # torch keeps the tensors
    _train(other, other_opt, x, y, 2, torch)
    _train(ours, opt, tgrad.from_torch(x), tgrad.from_torch(y), 2, tgrad)
    for p, q in zip(ours.parameters(), other.parameters()):
        assert torch.allclose(p.torch(), q.detach(), atol=1e-10, rtol=0)


def test_to_torch_refuses_what_is_not_data():
    with pytest.raises(TypeError, match=r"not Linear objects \(at m\)"):
        tgrad.to_torch({"m": nn.Linear(2, 2)})


_RUNNER_SCRIPT = """
import io, sys
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
model(torch.ones(4, 3)).sum().backward()
opt.step()
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "shape": model.weight.shape}, sys.argv[1])
buf = io.BytesIO()
torch.save(model.state_dict(), buf)
open(sys.argv[2], "wb").write(buf.getvalue())
back = torch.load(sys.argv[1])
print(type(back["model"]["weight"]).__module__, back["shape"], back["opt"]["state"][0]["step"])
"""


def test_checkpoints_written_under_the_runner_are_read_by_pytorch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_RUNNER_SCRIPT)
    ckpt, raw = tmp_path / "run.ckpt", tmp_path / "buffer.bin"
    proc = subprocess.run([sys.executable, "-m", "tgrad", str(script), str(ckpt), str(raw)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["torch", "torch.Size([2,", "3])", "tensor(1.)"]  # tgrad, printed as torch
    theirs = torch.load(ckpt, weights_only=True)  # real PyTorch, its default loader
    assert type(theirs["model"]["weight"]) is torch.Tensor and theirs["shape"] == (2, 3)
    ref = torch.nn.Linear(3, 2)
    ref.load_state_dict(theirs["model"])
    opt = torch.optim.Adam(ref.parameters(), lr=0.1)
    opt.load_state_dict(theirs["opt"])
    assert float(opt.state_dict()["state"][0]["step"]) == 1.0
    assert torch.equal(torch.load(raw, weights_only=True)["weight"], theirs["model"]["weight"])


def test_numpy_arrays_in_pt_files_follow_pytorchs_rule(tmp_path):
    obj = {"rng": np.arange(3)}
    tgrad.save(obj, tmp_path / "ours.pt")
    torch.save(obj, tmp_path / "theirs.pt")
    for name in ("ours.pt", "theirs.pt"):
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            torch.load(tmp_path / name)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            tgrad.load(tmp_path / name)
        assert np.array_equal(tgrad.load(tmp_path / name, weights_only=False)["rng"], np.arange(3))


def test_torch_tensors_given_to_tgrad_save_are_saved_as_tgrad_tensors(tmp_path):
    ref, _ = _pair_of_models()
    obj = {"model": ref.state_dict(), "param": ref[0].weight, "shape": ref[0].weight.shape}
    for name in ("m.safetensors", "m.pt"):
        tgrad.save(obj, tmp_path / name)
        back = tgrad.load(tmp_path / name)
        assert all(type(v) is tgrad.Tensor and torch.equal(v.torch(), ref.state_dict()[k])
                   for k, v in back["model"].items())
        assert type(back["param"]) is nn.Parameter and back["param"].requires_grad
        assert type(back["shape"]) is tgrad.Size
    with pytest.raises(TypeError, match="a torch tensor of dtype torch.complex64, which tgrad tensors do not"):
        tgrad.save({"z": torch.zeros(2, dtype=torch.complex64)}, io.BytesIO())
