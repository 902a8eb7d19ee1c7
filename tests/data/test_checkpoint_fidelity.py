"""A checkpoint file is written as a careful program writes a file, and a load gives back what was
saved, checked against torch.save/torch.load: the mode of a replaced file is kept (else the
umask's), a symlink's target is replaced and the link kept, PyTorch's exception for a missing
directory; Parameters come back as Parameters, requires_grad is kept, one tensor saved twice is one
tensor, tied weights share memory, Size stays Size, and float and tuple dict keys round trip."""
import io
import math
import os
import stat

import pytest
import torch

import tgrad
import tgrad.nn as nn


def _tgrad_round_trip(obj):
    buf = io.BytesIO()
    tgrad.save(obj, buf)
    buf.seek(0)
    return tgrad.load(buf)


def _torch_round_trip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# ----------------------------------------------------------------------------- the file

@pytest.mark.parametrize("mode", [0o644, 0o600, 0o664])
def test_replacing_a_file_keeps_its_mode(tmp_path, mode):
    for lib, obj, name in ((torch, {"w": torch.ones(2)}, "t.pt"), (tgrad, {"w": tgrad.ones(2)}, "g.safetensors")):
        path = tmp_path / name
        path.write_bytes(b"old")
        os.chmod(path, mode)
        lib.save(obj, path)
        assert _mode(path) == mode, lib.__name__


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_new_file_gets_the_umasks_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        torch.save({"w": torch.ones(2)}, tmp_path / "t.pt")
        tgrad.save({"w": tgrad.ones(2)}, tmp_path / "g.safetensors")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "g.safetensors") == _mode(tmp_path / "t.pt") == 0o666 & ~umask


def test_saving_through_a_symlink_replaces_its_target(tmp_path):
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "epoch3.safetensors"
    tgrad.save({"w": tgrad.zeros(2)}, target)
    os.chmod(target, 0o640)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(os.path.join("runs", "epoch3.safetensors"))
    chain = tmp_path / "best.safetensors"  # a link to a link
    chain.symlink_to(link)
    tgrad.save({"w": tgrad.ones(2)}, chain)
    assert chain.is_symlink() and link.is_symlink() and not target.is_symlink()
    assert tgrad.load(target)["w"].tolist() == [1.0, 1.0] == tgrad.load(link)["w"].tolist()
    assert _mode(target) == 0o640
    assert sorted(os.listdir(tmp_path / "runs")) == ["epoch3.safetensors"]  # no temporary left behind
    # a dangling link: its target is created, as open(link, "wb") would
    dangling = tmp_path / "next.safetensors"
    dangling.symlink_to(tmp_path / "runs" / "epoch4.safetensors")
    tgrad.save({"w": tgrad.ones(1)}, dangling)
    assert dangling.is_symlink() and (tmp_path / "runs" / "epoch4.safetensors").is_file()


def test_a_missing_directory_raises_as_in_torch(tmp_path):
    path = tmp_path / "nowhere" / "m.safetensors"
    with pytest.raises(RuntimeError, match="Parent directory .*nowhere does not exist") as theirs:
        torch.save({}, path)
    with pytest.raises(RuntimeError, match="Parent directory .*nowhere does not exist") as ours:
        tgrad.save({}, path)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError, match="is a directory"):
        tgrad.save({}, tmp_path)
    assert not (tmp_path / "nowhere").exists()


# ----------------------------------------------------------------------------- what comes back

def test_parameters_and_requires_grad_come_back():
    w = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    ref = {"p": torch.nn.Parameter(w.clone()), "frozen": torch.nn.Parameter(w.clone(), requires_grad=False),
           "leaf": w.clone().requires_grad_(), "plain": w.clone()}
    ref["nonleaf"] = ref["leaf"] * 2
    ours = {"p": nn.Parameter(tgrad.from_torch(w.clone())),
            "frozen": nn.Parameter(tgrad.from_torch(w.clone()), requires_grad=False),
            "leaf": tgrad.from_torch(w.clone()).requires_grad_(), "plain": tgrad.from_torch(w.clone())}
    ours["nonleaf"] = ours["leaf"] * 2
    theirs, back = _torch_round_trip(ref), _tgrad_round_trip(ours)
    for k in ref:
        assert type(back[k]).__name__ == type(theirs[k]).__name__, k
        assert (back[k].requires_grad, back[k].is_leaf) == (theirs[k].requires_grad, theirs[k].is_leaf), k
        assert torch.equal(back[k].detach().torch(), theirs[k].detach()), k
    assert isinstance(back["p"], nn.Parameter) and back["p"].grad is None


def test_one_tensor_saved_twice_is_one_tensor_and_tied_weights_share_memory():
    w = tgrad.randn(3, 4)
    back = _tgrad_round_trip({"enc": w, "dec": w, "list": [w, w.detach()]})
    theirs = _torch_round_trip({"enc": w.torch(), "dec": w.torch(), "list": [w.torch(), w.torch().detach()]})
    assert (back["enc"] is back["dec"] is back["list"][0]) and theirs["enc"] is theirs["dec"] is theirs["list"][0]
    assert back["list"][1] is not back["enc"]
    back["list"][1].fill_(2.0)  # w.detach(): another tensor over the same memory, in both libraries
    theirs["list"][1].fill_(2.0)
    assert back["enc"].tolist() == [[2.0] * 4] * 3 and torch.equal(theirs["enc"], torch.full((3, 4), 2.0))
    # a state dict with tied weights: two detached tensors over one memory still share after loading
    m = nn.Linear(4, 4)
    tied = nn.Sequential(m, nn.Linear(4, 4))
    tied[1].weight = m.weight
    sd = _tgrad_round_trip(tied.state_dict())
    assert list(sd) == list(tied.state_dict())
    assert sd["0.weight"] is not sd["1.weight"] and sd["0.weight"].data_ptr() == sd["1.weight"].data_ptr()
    assert not sd["0.weight"].requires_grad
    # an untied model's tensors do not
    sd = _tgrad_round_trip(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)).state_dict())
    assert sd["0.weight"].data_ptr() != sd["1.weight"].data_ptr()


def test_size_and_dtypes_stay_themselves():
    x = tgrad.zeros(2, 3)
    back = _tgrad_round_trip({"shape": x.shape, "shapes": [x.shape, tgrad.Size([])], "tuple": (2, 3)})
    theirs = _torch_round_trip({"shape": torch.zeros(2, 3).shape})
    assert type(back["shape"]) is tgrad.Size and type(theirs["shape"]) is torch.Size
    assert back["shape"] == theirs["shape"] == (2, 3)
    assert [type(s) for s in back["shapes"]] == [tgrad.Size, tgrad.Size] and type(back["tuple"]) is tuple
    # dtypes, which torch.load(weights_only=True) allows too
    assert _tgrad_round_trip([tgrad.float16, tgrad.int64]) == [tgrad.float16, tgrad.int64]
    assert _torch_round_trip([torch.float16, torch.int64]) == [torch.float16, torch.int64]


def test_float_and_tuple_keys_round_trip():
    obj = {0.5: tgrad.ones(1), 2.0: "two", 3: "int", (1, "a"): [1], (0, (1.5, None)): 3, True: 1,
           math.inf: "inf", tgrad.Size([2]): "size"}
    back = _tgrad_round_trip(obj)
    theirs = _torch_round_trip({k: (v.torch() if isinstance(v, tgrad.Tensor) else v) for k, v in obj.items()
                                if not isinstance(k, tgrad.Size)})
    assert list(back) == list(obj) and [type(k) for k in back] == [type(k) for k in obj]
    assert [k for k in back if not isinstance(k, tgrad.Size)] == list(theirs)
    assert back[2.0] == "two" and back[3] == "int" and back[(0, (1.5, None))] == 3 and back[0.5].tolist() == [1.0]
    nan = _tgrad_round_trip({math.nan: 1})
    assert len(nan) == 1 and math.isnan(next(iter(nan)))
    with pytest.raises(TypeError, match="dict keys must be str, int, float, bool, None or tuples of them, got "
                                        "frozenset"):
        tgrad.save({frozenset([1]): 1}, io.BytesIO())
