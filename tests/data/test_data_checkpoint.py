"""tgrad.utils.data (datasets, DataLoader batching, seeded shuffling, drop_last, collation) and
checkpoints (tgrad.save / tgrad.load in the safetensors format): round trips of models and
optimizers, the byte layout read back by hand, atomic writes, and clear errors on damaged files."""
import io
import json
import os
import struct

import numpy as np
import pytest
import torch

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from tgrad.utils.data import DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split


def dataset(n=10):
    x = tgrad.arange(n * 3, dtype=tgrad.float32).reshape(n, 3)
    y = tgrad.arange(n) * 10
    return TensorDataset(x, y)


# ----------------------------------------------------------------------------- data

def test_tensor_dataset_items_and_errors():
    ds = dataset()
    assert len(ds) == 10
    x, y = ds[4]
    assert x.tolist() == [12.0, 13.0, 14.0] and y.item() == 40
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(tgrad.ones(3, 2), tgrad.ones(4))


@pytest.mark.parametrize("batch_size,drop_last,sizes", [(4, False, [4, 4, 2]), (4, True, [4, 4]), (5, True, [5, 5]),
                                                        (10, False, [10]), (16, False, [10])])
def test_batches_in_order(batch_size, drop_last, sizes):
    loader = DataLoader(dataset(), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == len(batches) and [len(b[1]) for b in batches] == sizes
    ys = [v for _, y in batches for v in y.tolist()]
    assert ys == list(range(0, 10 * sum(sizes), 10))
    x0, y0 = batches[0]
    assert isinstance(batches[0], list) and x0.shape == (sizes[0], 3) and x0.dtype is tgrad.float32
    assert y0.dtype is tgrad.int64 and x0.is_contiguous()
    x0.zero_()  # a batch is a copy: the dataset is untouched
    assert loader.dataset[0][0].tolist() == [0.0, 1.0, 2.0]


def test_shuffle_is_a_permutation_reproducible_from_the_seed():
    ds = dataset(23)

    def epoch(loader):
        return [v // 10 for _, y in loader for v in y.tolist()]

    a = DataLoader(ds, batch_size=5, shuffle=True, generator=tgrad.Generator().manual_seed(7))
    b = DataLoader(ds, batch_size=5, shuffle=True, generator=tgrad.Generator().manual_seed(7))
    c = DataLoader(ds, batch_size=5, shuffle=True, generator=tgrad.Generator().manual_seed(8))
    first, again = epoch(a), epoch(b)
    assert sorted(first) == list(range(23)) and first == again and first != list(range(23))
    assert epoch(c) != first
    second = epoch(a)  # every epoch draws a new order
    assert sorted(second) == list(range(23)) and second != first
    # rows stay paired with their labels
    for x, y in DataLoader(ds, batch_size=4, shuffle=True):
        assert [row[0] for row in x.tolist()] == [v // 10 * 3.0 for v in y.tolist()]
    # without a generator the order comes from tgrad's default generator
    tgrad.manual_seed(3)
    d1 = epoch(DataLoader(ds, batch_size=4, shuffle=True))
    tgrad.manual_seed(3)
    assert epoch(DataLoader(ds, batch_size=4, shuffle=True)) == d1
    dropped = list(DataLoader(ds, batch_size=5, shuffle=True, drop_last=True))
    assert [len(y) for _, y in dropped] == [5, 5, 5, 5]


class Pairs(Dataset):
    """A plain map-style dataset of mixed samples, collated by default_collate."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": tgrad.full((2,), float(i)), "label": i, "w": 0.5 * i, "name": f"s{i}",
                "arr": np.array([i, i + 1], dtype=np.float32)}


def test_default_collate_of_a_generic_dataset():
    batches = list(DataLoader(Pairs(), batch_size=2))
    assert len(batches) == 3
    b = batches[0]
    assert b["x"].tolist() == [[0.0, 0.0], [1.0, 1.0]] and b["label"].dtype is tgrad.int64
    assert b["label"].tolist() == [0, 1] and b["w"].dtype is tgrad.float64 and b["name"] == ["s0", "s1"]
    assert b["arr"].tolist() == [[0.0, 1.0], [1.0, 2.0]]
    assert default_collate([(1, 2.0), (3, 4.0)])[0].tolist() == [1, 3]
    shuffled = list(DataLoader(Pairs(), batch_size=5, shuffle=True, generator=tgrad.Generator().manual_seed(0)))
    assert sorted(shuffled[0]["label"].tolist()) == [0, 1, 2, 3, 4]
    assert list(DataLoader(Pairs(), batch_size=2, collate_fn=lambda items: len(items))) == [2, 2, 1]
    assert [s["label"] for s in DataLoader(Pairs(), batch_size=None)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        DataLoader(Pairs(), batch_size=0)


def test_subset_and_random_split():
    ds = dataset(10)
    parts = random_split(ds, [0.7, 0.3], generator=tgrad.Generator().manual_seed(1))
    assert [len(p) for p in parts] == [7, 3]
    idx = sorted(parts[0].indices + parts[1].indices)
    assert idx == list(range(10)) and isinstance(parts[0], Subset)
    assert parts[1][0][1].item() == parts[1].indices[0] * 10
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])


# ----------------------------------------------------------------------------- checkpoints

def _model():
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def _train(model, opt, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = tgrad.from_torch(torch.randn(6, 4, generator=g))
        t = tgrad.from_torch(torch.randint(0, 3, (6,), generator=g))
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), t).backward()
        opt.step()


def test_model_and_optimizer_checkpoint_round_trip(tmp_path):
    tgrad.manual_seed(0)
    model = _model()
    opt = optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    _train(model, opt, 3)
    path = tmp_path / "ckpt.safetensors"
    tgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, path)
    ckpt = tgrad.load(path)
    assert ckpt["epoch"] == 3 and list(ckpt["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert ckpt["model"][k].dtype is v.dtype and ckpt["model"][k].torch().tolist() == v.torch().tolist(), k
    assert ckpt["model"]["1.num_batches_tracked"].item() == 3
    # restore into fresh objects, then both continue identically
    tgrad.manual_seed(99)
    model2 = _model()
    opt2 = optim.Adam(model2.parameters(), lr=0.5)
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["betas"] == (0.9, 0.999)
    _train(model, opt, 2, seed=1)
    _train(model2, opt2, 2, seed=1)
    for (k, a), (_, b) in zip(model.state_dict().items(), model2.state_dict().items()):
        assert a.torch().tolist() == b.torch().tolist(), k


def test_flat_state_dict_is_plain_safetensors(tmp_path):
    """Read the file back by hand against the format: 8-byte little-endian header size, a JSON
    header of dtype/shape/data_offsets, then each tensor's raw little-endian bytes."""
    sd = {"w": tgrad.from_torch(torch.arange(6, dtype=torch.float32).reshape(2, 3)).t(),  # non-contiguous
          "n": tgrad.tensor(7), "h": tgrad.tensor([1.5, -2.0], dtype=tgrad.float16),
          "m": tgrad.tensor([True, False]), "e": tgrad.zeros(0, 4, dtype=tgrad.float64)}
    path = tmp_path / "flat.safetensors"
    tgrad.save(sd, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    metadata = header.pop("__metadata__")
    # the layout is the safetensors package's (tensors ordered by dtype alignment, then name); tgrad's
    # metadata adds the keys' insertion order and the checksum
    assert metadata["format"] == "pt" and set(metadata) == {"format", "tgrad.keys", "tgrad.crc32"}
    assert json.loads(metadata["tgrad.keys"]) == list(sd) and sorted(header) == sorted(sd)
    assert (8 + n) % 8 == 0
    assert header["w"]["dtype"] == "F32" and header["w"]["shape"] == [3, 2]
    assert header["w"]["data_offsets"][1] - header["w"]["data_offsets"][0] == 24
    assert header["n"]["dtype"] == "I64" and header["n"]["shape"] == []
    assert header["h"]["dtype"] == "F16" and header["m"]["dtype"] == "BOOL" and header["e"]["data_offsets"][0] == \
        header["e"]["data_offsets"][1]
    data = raw[8 + n:]
    b, e = header["w"]["data_offsets"]
    assert np.frombuffer(data[b:e], dtype="<f4").tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    b, e = header["h"]["data_offsets"]
    assert np.frombuffer(data[b:e], dtype="<f2").tolist() == [1.5, -2.0]
    back = tgrad.load(path)
    assert list(back) == list(sd)
    for k in sd:
        assert back[k].dtype is sd[k].dtype and back[k].shape == sd[k].shape and back[k].tolist() == sd[k].tolist()
    buf = io.BytesIO()
    tgrad.save(sd, buf)
    assert buf.getvalue() == raw  # file objects get the same bytes
    buf.seek(0)
    assert tgrad.load(buf, map_location="cpu")["w"].tolist() == sd["w"].tolist()


def test_save_is_atomic_and_refuses_objects(tmp_path):
    path = tmp_path / "model.safetensors"
    tgrad.save({"a": tgrad.ones(2)}, path)
    with pytest.raises(TypeError, match="tgrad.save stores tensors, numbers, strings, None and dicts/lists/tuples "
                                        "of them .* not Linear objects"):
        tgrad.save({"a": tgrad.zeros(2), "model": nn.Linear(2, 2)}, path)
    assert tgrad.load(path)["a"].tolist() == [1.0, 1.0]  # the old file is intact
    tgrad.save({"a": tgrad.zeros(3)}, str(path))
    assert tgrad.load(path)["a"].tolist() == [0.0, 0.0, 0.0]
    assert os.listdir(tmp_path) == ["model.safetensors"]  # no temporary file left behind


def test_damaged_files_give_clear_errors(tmp_path):
    path = tmp_path / "m.safetensors"
    tgrad.save({"w": tgrad.ones(100), "b": tgrad.ones(3)}, path)
    raw = path.read_bytes()
    # the safetensors package orders tensors of one dtype by name: "w" is the one the file ends with
    for cut, why in [(5, "fewer than the 8-byte header length"), (40, "the header needs"),
                     (len(raw) - 7, "tensor 'w' ends at byte")]:
        (tmp_path / "cut").write_bytes(raw[:cut])
        with pytest.raises(RuntimeError, match=f"not a valid tgrad/safetensors checkpoint \\(the file is truncated: "
                                               f".*{why}"):
            tgrad.load(tmp_path / "cut")
    (n,) = struct.unpack("<Q", raw[:8])
    (tmp_path / "garbled").write_bytes(raw[:8] + b"{" * n + raw[8 + n:])
    with pytest.raises(RuntimeError, match="the header is not valid JSON"):
        tgrad.load(tmp_path / "garbled")
    header = raw[8:8 + n].replace(b'"shape":[100]', b'"shape":[101]')
    (tmp_path / "shape").write_bytes(raw[:8] + header + raw[8 + n:])
    with pytest.raises(RuntimeError, match=r"tensor 'w' of shape \[101\] and dtype F32 needs 404 bytes"):
        tgrad.load(tmp_path / "shape")


def test_loading_a_checkpoint_into_a_different_model_names_the_problem(tmp_path):
    path = tmp_path / "m.safetensors"
    tgrad.save(nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2)).state_dict(), path)
    with pytest.raises(RuntimeError) as err:
        nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 2), nn.ReLU(), nn.Linear(2, 1)).load_state_dict(tgrad.load(path))
    msg = str(err.value)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:")
    assert 'Missing key(s) in state_dict: "3.weight", "3.bias".' in msg
    assert ("size mismatch for 0.weight: copying a param with shape tgrad.Size([8, 4]) from checkpoint, the shape "
            "in current model is tgrad.Size([6, 4]).") in msg
    assert "size mismatch for 1.weight" in msg and "size mismatch for 1.bias" not in msg
