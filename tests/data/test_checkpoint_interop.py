"""Checkpoints against the safetensors package and PyTorch: tgrad files are safetensors files that
``safetensors.torch.load_file`` reads, safetensors files from other writers load as flat dicts,
NumPy arrays round trip as arrays (as torch.save/torch.load keep them), whole modules and
optimizers are refused with the advice to save a state_dict (PyTorch 2.6+ refuses to load them by
default too), and files that are neither tgrad checkpoints nor torch.save files (pickles,
.npy/.npz, text, ...) are named for what they are (torch.save files: test_torch_interop.py)."""
from __future__ import annotations

import gzip
import io
import json
import pickle
import struct
import zlib

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from support.checkpoints import same_tree as _same, saved_bytes as _bytes

PREFIX = r"not a valid tgrad/safetensors checkpoint \("


def _torch_round_trip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


# ----------------------------------------------------------------------------- the safetensors package

def test_tgrad_files_are_read_by_safetensors(tmp_path):
    g = torch.Generator().manual_seed(0)
    sd = {"w": tgrad.from_torch(torch.randn(3, 5, generator=g)), "b": tgrad.from_torch(torch.randn(5, generator=g)),
          "h": tgrad.tensor([1.5, -2.0], dtype=tgrad.float16), "bf": tgrad.tensor([0.5, 3.0], dtype=tgrad.bfloat16),
          "n": tgrad.tensor(7), "m": tgrad.tensor([True, False, True])}
    tgrad.save(sd, tmp_path / "flat.safetensors")
    theirs = safetensors.torch.load_file(tmp_path / "flat.safetensors")
    assert sorted(theirs) == sorted(sd)
    for k, v in sd.items():
        assert theirs[k].dtype == v.torch().dtype and torch.equal(theirs[k], v.torch()), k
    # a nested checkpoint: the tensors under their paths, the skeleton in the metadata
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(tgrad.ones(4, 3)).sum().backward()
    opt.step()
    tgrad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, tmp_path / "tree.safetensors")
    theirs = safetensors.torch.load_file(tmp_path / "tree.safetensors")
    assert torch.equal(theirs["model/weight"], model.weight.torch())
    assert torch.equal(theirs["optimizer/state/0/exp_avg"], opt.state_dict()["state"][0]["exp_avg"].torch())
    with safetensors.safe_open(tmp_path / "tree.safetensors", "pt") as f:
        meta = f.metadata()
    assert meta["format"] == "pt" and {"tgrad.tree", "tgrad.crc32"} <= set(meta)


def test_plain_safetensors_files_load_as_flat_dicts(tmp_path):
    """Files from other writers (torch and NumPy flavours, with foreign or no metadata) load as a
    flat dict of tgrad tensors in the file's order, unchecked (they carry no tgrad checksum)."""
    g = torch.Generator().manual_seed(1)
    tensors = {"z.weight": torch.randn(4, 3, generator=g), "a.bias": torch.randn(3, generator=g).double(),
               "emb": torch.randint(-5, 5, (2, 3), generator=g, dtype=torch.int32),
               "half": torch.randn(5, generator=g).half(), "bf": torch.randn(2, generator=g).bfloat16(),
               "mask": torch.tensor([True, False]), "byte": torch.tensor([0, 255], dtype=torch.uint8),
               "i8": torch.tensor([-128, 127], dtype=torch.int8), "empty": torch.zeros(0, 2),
               "scalar": torch.tensor(2.5)}
    for metadata in (None, {"format": "pt", "producer": "someone"}):
        path = tmp_path / "theirs.safetensors"
        safetensors.torch.save_file(tensors, path, metadata=metadata)
        raw = path.read_bytes()
        order = [k for k in json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]]) if k != "__metadata__"]
        back = tgrad.load(path)
        assert list(back) == order and sorted(back) == sorted(tensors)
        for k, v in tensors.items():
            assert isinstance(back[k], tgrad.Tensor) and back[k].torch().dtype == v.dtype, k
            assert torch.equal(back[k].torch(), v), k
    arrays = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.array([1, -2], dtype=np.int64)}
    safetensors.numpy.save_file(arrays, tmp_path / "np.safetensors")
    back = tgrad.load(tmp_path / "np.safetensors")
    assert {k: v.numpy().tolist() for k, v in back.items()} == {k: v.tolist() for k, v in arrays.items()}


def test_foreign_dtypes_are_named(tmp_path):
    safetensors.torch.save_file({"u": torch.tensor([1, 2], dtype=torch.uint16)}, tmp_path / "u16.safetensors")
    with pytest.raises(RuntimeError, match=r"tensor 'u' has dtype U16, which tgrad tensors do not support"):
        tgrad.load(tmp_path / "u16.safetensors")


def test_saves_are_deterministic_and_keep_key_order():
    sd = {"z": tgrad.ones(2), "a": tgrad.zeros(3, dtype=tgrad.float64), "m": tgrad.tensor([1, 2])}
    raws = {_bytes(sd) for _ in range(8)}  # the library writes its metadata in hash order; tgrad sorts it
    assert len(raws) == 1
    assert list(tgrad.load(io.BytesIO(raws.pop()))) == ["z", "a", "m"]
    tree = {"b": [tgrad.ones(1), {"k": 2}], "a": (None, "s", 1.5)}
    assert len({_bytes(tree) for _ in range(8)}) == 1


def test_shared_memory_and_colliding_paths_round_trip():
    """Tied weights (one tensor under two names) and views of one buffer, which
    safetensors.torch.save_file refuses, and two paths that name the same tensor."""
    w = tgrad.randn(3, 4)
    buf = tgrad.arange(10, dtype=tgrad.float32)
    sd = {"enc.weight": w, "dec.weight": w, "lo": buf[:5], "hi": buf[5:], "all": buf}
    with pytest.raises(RuntimeError, match="share memory"):
        safetensors.torch.save({k: v.torch() for k, v in sd.items()})
    assert _same(tgrad.load(io.BytesIO(_bytes(sd))), sd)
    tree = {"a/b": tgrad.ones(2), "a": {"b": tgrad.zeros(3)}, "c": [w, w]}
    assert _same(tgrad.load(io.BytesIO(_bytes(tree))), tree)


def _legacy_file(obj_tensors: dict, tree=None) -> bytes:
    """A checkpoint as tgrad wrote them before it used the safetensors package: tensors in insertion
    order, the checksum over the metadata and entries (compact JSON, file order) and the data."""
    metadata = {"format": "pt"} if tree is None else {"format": "pt", "tgrad.tree": json.dumps(tree)}
    entries, blobs, offset = {}, [], 0
    for name, t in obj_tensors.items():
        blob = t.numpy().tobytes()
        entries[name] = {"dtype": {torch.float32: "F32", torch.int64: "I64"}[t.dtype], "shape": list(t.shape),
                         "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    data = b"".join(blobs)
    crc = zlib.crc32(json.dumps([metadata, entries], separators=(",", ":")).encode())
    metadata["tgrad.crc32"] = f"{zlib.crc32(data, crc):08x}"
    text = json.dumps({"__metadata__": metadata, **entries}, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def test_checkpoints_from_the_earlier_writer_still_load():
    w, n = torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor([7, 8])
    flat = _legacy_file({"z": w, "a": n})
    back = tgrad.load(io.BytesIO(flat))
    assert list(back) == ["z", "a"] and torch.equal(back["z"].torch(), w) and torch.equal(back["a"].torch(), n)
    tree = {"__dict__": [["model", {"__dict__": [["w", {"__tensor__": "model/w"}]]}], ["epoch", 3]]}
    back = tgrad.load(io.BytesIO(_legacy_file({"model/w": w}, tree)))
    assert back["epoch"] == 3 and torch.equal(back["model"]["w"].torch(), w)
    damaged = bytearray(flat)
    damaged[-1] ^= 1
    with pytest.raises(RuntimeError, match=PREFIX + "the file is corrupted: its checksum is"):
        tgrad.load(io.BytesIO(bytes(damaged)))


def test_map_location():
    back = tgrad.load(io.BytesIO(_bytes({"w": tgrad.ones(2)})), map_location="cpu")
    assert back["w"].device.type == "cpu" and back["w"].tolist() == [1.0, 1.0]


# ----------------------------------------------------------------------------- NumPy arrays

def _numpy_checkpoint():
    rng = np.random.default_rng(0)
    return {"float64": rng.standard_normal((3, 4)), "float32": rng.standard_normal(5).astype(np.float32),
            "float16": np.array([1.5, np.nan, -np.inf], dtype=np.float16),
            "ints": [np.arange(-3, 3, dtype=d) for d in (np.int8, np.int16, np.int32, np.int64)],
            "uints": tuple(np.arange(4, dtype=d) * 3 for d in (np.uint8, np.uint16, np.uint32, np.uint64)),
            "bool": np.array([[True, False], [False, True]]), "zero_d": np.array(2.5), "empty": np.zeros((0, 3)),
            "strided": rng.standard_normal((4, 6))[::2, 1::2], "transposed": np.arange(6.0).reshape(2, 3).T,
            "big_endian": np.arange(4, dtype=">i4"), "scalars": [np.float64(1.25), np.int64(-7), np.bool_(True),
                                                                   np.float32(0.5)],
            "epoch": 4, "name": "run", "tensor": tgrad.tensor([1.0, 2.0])}


def test_numpy_arrays_round_trip_as_pytorch_keeps_them(tmp_path):
    obj = _numpy_checkpoint()
    tgrad.save(obj, tmp_path / "np.safetensors")
    back = tgrad.load(tmp_path / "np.safetensors")
    # torch.save/torch.load (by pickle) give back the very same arrays, dtypes and shapes; so does tgrad
    want = _torch_round_trip({k: v for k, v in obj.items() if k != "tensor"})
    for k, v in want.items():
        if k == "big_endian":  # stored little-endian: the same values, in the native byte order
            assert back[k].dtype == np.dtype("int32") and back[k].tolist() == v.tolist()
            continue
        assert _same(v, back[k]), k
    assert _same(obj["tensor"], back["tensor"])
    assert back["zero_d"].shape == () and back["strided"].flags.c_contiguous
    back["float64"][0, 0] = 9.0  # loaded arrays are writable copies


def test_numpy_arrays_alone_and_in_lists():
    a = np.arange(12, dtype=np.int16).reshape(3, 4)
    assert _same(tgrad.load(io.BytesIO(_bytes(a))), a)
    assert _same(tgrad.load(io.BytesIO(_bytes([a, a.T]))), [a, np.ascontiguousarray(a.T)])
    assert _same(tgrad.load(io.BytesIO(_bytes(np.float32(3.5)))), np.float32(3.5))


@pytest.mark.parametrize("bad, dtype", [(np.array([1 + 2j]), "complex128"), (np.array(["a", "b"]), "<U1"),
                                        (np.array([object()]), "object")])
def test_unsupported_numpy_dtypes_are_named(bad, dtype):
    with pytest.raises(TypeError, match=f"tgrad.save: unsupported NumPy dtype {dtype}"):
        tgrad.save({"x": bad}, io.BytesIO())


# ----------------------------------------------------------------------------- modules and optimizers

def test_a_whole_module_or_optimizer_is_refused_with_the_state_dict_advice(tmp_path):
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    opt = optim.SGD(model.parameters(), lr=0.1)
    for obj, name, where in [(model, "Sequential", ""), (opt, "SGD", ""), ({"net": model}, "Sequential", " (at net)"),
                             ({"run": [1, {"opt": opt}]}, "SGD", " (at run/1/opt)")]:
        with pytest.raises(TypeError) as err:
            tgrad.save(obj, tmp_path / "m.safetensors")
        msg = str(err.value)
        assert msg.startswith("tgrad.save stores tensors, numbers, strings, None and dicts/lists/tuples of them")
        assert f"not {name} objects{where}. A whole {name} cannot be saved" in msg
        assert "save its state_dict() instead, as in tgrad.save(model.state_dict(), path)" in msg
        assert "model.load_state_dict(tgrad.load(path))" in msg
    assert list((tmp_path).iterdir()) == []  # nothing written, no temporary file left
    # other objects get the plain message
    with pytest.raises(TypeError, match=r"not set objects \(at s\)$"):
        tgrad.save({"s": {1, 2}}, io.BytesIO())
    # what PyTorch 2.6+ does with a whole module: torch.save pickles it, torch.load refuses it by default
    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 3), buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(buf)
    # and the advice works
    tgrad.save(model.state_dict(), tmp_path / "m.safetensors")
    fresh = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    fresh.load_state_dict(tgrad.load(tmp_path / "m.safetensors"))
    assert fresh[0].weight.tolist() == model[0].weight.tolist()


# ----------------------------------------------------------------------------- files that are not tgrad checkpoints

def test_other_files_are_named(tmp_path):
    cases = {
        "pickle2": (pickle.dumps({"w": [1.0, 2.0]}, protocol=2), r"it is a Python pickle \(protocol 2\).*unpickles "
                                                                   r"nothing else"),
        "pickle5": (pickle.dumps({"w": [1.0, 2.0]}, protocol=5), r"it is a Python pickle \(protocol 5\)"),
        "text": (b"epoch,loss\n1,0.5\n", r"it starts with text \('epoch,lo'...\), not with a safetensors header"),
        "gzip": (gzip.compress(b"x" * 100), r"it is a gzip-compressed file"),
        "hdf5": (b"\x89HDF\r\n\x1a\n" + bytes(64), r"it is an HDF5 file"),
        "zip": (_zip({"notes.txt": b"hi"}), r"it is a zip archive, not a safetensors file"),
    }
    npy, npz = io.BytesIO(), io.BytesIO()
    np.save(npy, np.arange(3))
    np.savez(npz, a=np.arange(3), b=np.ones(2))
    cases["npy"] = (npy.getvalue(), r"it is a NumPy \.npy file: read it with numpy.load")
    cases["npz"] = (npz.getvalue(), r"it is a NumPy \.npz archive: read it with numpy.load")
    for name, (raw, why) in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(RuntimeError, match=f"^{tmp_path / name}: {PREFIX}{why}"):
            tgrad.load(tmp_path / name)
    # a header length beyond what safetensors allows, from no known format
    with pytest.raises(RuntimeError, match=PREFIX + r"the first 8 bytes announce a header of \d+ bytes, more than "
                                                    r"safetensors allows"):
        tgrad.load(io.BytesIO(b"\x00\x01\x02\x03\xfe\xfd\xfc\xfb" + bytes(32)))
    with pytest.raises(RuntimeError, match=PREFIX + r"the file is truncated: 0 bytes"):
        tgrad.load(io.BytesIO(b""))


def _zip(files: dict) -> bytes:
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_torchscript_archive_is_named(tmp_path):
    raw = _zip({"archive/data.pkl": b"\x80\x02}.", "archive/constants.pkl": b"\x80\x02).",
                "archive/code/__torch__/m.py": b"", "archive/version": b"3"})
    with pytest.raises(RuntimeError, match=PREFIX + r"it is a TorchScript archive written by torch.jit.save"):
        tgrad.load(io.BytesIO(raw))


def test_what_only_the_library_refuses_is_reported_with_its_reason():
    """A file from another writer (no checksum) with a dtype code no reader knows: tgrad's own
    checks find nothing to say, so the message passes on safetensors' reason."""
    raw = safetensors.torch.save({"a": torch.ones(2)})
    damaged = raw.replace(b'"dtype":"F32"', b'"dtype":"Q32"')
    assert len(damaged) == len(raw)
    with pytest.raises(RuntimeError, match=PREFIX + r"safetensors refused it: .+"):
        tgrad.load(io.BytesIO(damaged))
