"""``tgrad.save`` / ``tgrad.load``: checkpoints in the safetensors format, never pickle.

Layout (https://github.com/huggingface/safetensors): an 8-byte little-endian unsigned header length
N, N bytes of JSON header, then the raw little-endian bytes of every tensor. The header maps each
tensor's name to ``{"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}`` (offsets into
the byte buffer after the header) and may hold ``"__metadata__"``, a map of strings.

- A flat ``{str: Tensor}`` dict (a model's ``state_dict()``) is stored as exactly that: plain
  safetensors that other readers load too, names in insertion order.
- Anything else built of dicts, lists, tuples, numbers, strings, bools, None and tensors (an
  optimizer's ``state_dict()``, ``{"model": ..., "optimizer": ..., "epoch": 3}``) is stored as its
  tensors, named by their path (``"state/0/exp_avg"``), plus a JSON skeleton in
  ``__metadata__["tgrad.tree"]`` where each tensor is ``{"__tensor__": name}``, dicts are lists of
  ``[key, value]`` pairs (integer keys stay integers) and tuples are marked.

``save`` writes a temporary file in the target's directory, fsyncs it, then renames it over the
target (``os.replace``), so a crash leaves either the old file or the new one, never half of one.
``load`` checks the header against the file's size and reports a truncated or corrupted file.
Damage the structure cannot show (a flipped bit in the data, a changed dtype code) is caught by
``__metadata__["tgrad.crc32"]``: the CRC-32 of the rest of the metadata and of the tensor entries
(each as compact JSON), then of the data bytes, checked when present (other safetensors writers do
not add it; other readers ignore it).

Test hook: with the environment variable ``TGRAD_SAVE_PAUSE_AFTER_BYTES=N`` set, ``save`` to a
path writes the first N bytes of the temporary file, flushes them to disk and then sleeps (an hour)
before writing the rest, so a test can kill the process in the middle of a save
(``tests/test_checkpoint_faults.py``). Nothing else reads it.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import tempfile
import time
import zlib

import numpy as np
import torch

from .tensor import Tensor

__all__ = ["save", "load"]

_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
           torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
           torch.bool: "BOOL"}
_BY_CODE = {v: k for k, v in _DTYPES.items()}
_TREE_KEY = "tgrad.tree"
_CRC_KEY = "tgrad.crc32"
_PAUSE_ENV = "TGRAD_SAVE_PAUSE_AFTER_BYTES"
_SCALARS = (bool, int, float, str, type(None))


def _is_flat(obj) -> bool:
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def _skeleton(obj, path, tensors):
    """``obj`` as JSON-able data with each tensor replaced by a reference into ``tensors``."""
    if isinstance(obj, Tensor):
        name = "/".join(path) or "tensor"
        tensors[name] = obj
        return {"__tensor__": name}
    if isinstance(obj, dict):
        pairs = []
        for k, v in obj.items():
            if not isinstance(k, _SCALARS) or isinstance(k, float):
                raise TypeError(f"tgrad.save: dict keys must be str, int, bool or None, got {type(k).__name__}")
            pairs.append([k, _skeleton(v, path + [str(k)], tensors)])
        return {"__dict__": pairs}
    if isinstance(obj, (list, tuple)):
        items = [_skeleton(v, path + [str(i)], tensors) for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else items
    if isinstance(obj, _SCALARS):
        return obj
    raise TypeError(f"tgrad.save stores tensors, numbers, strings, None and dicts/lists/tuples of them (such as "
                    f"a state_dict()), not {type(obj).__name__} objects")


def _rebuild(node, tensors):
    if isinstance(node, list):
        return [_rebuild(v, tensors) for v in node]
    if isinstance(node, dict):
        if "__tensor__" in node:
            return tensors[node["__tensor__"]]
        if "__tuple__" in node:
            return tuple(_rebuild(v, tensors) for v in node["__tuple__"])
        return {k: _rebuild(v, tensors) for k, v in node["__dict__"]}
    return node


def _encode(obj) -> bytes:
    if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
        raise RuntimeError("tgrad.save writes little-endian bytes and needs a little-endian host")
    if _is_flat(obj):
        tensors, metadata = dict(obj), {"format": "pt"}
    else:
        tensors = {}
        metadata = {"format": "pt", _TREE_KEY: json.dumps(_skeleton(obj, [], tensors))}
    entries, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t._data.detach()
        if data.dtype not in _DTYPES:
            raise TypeError(f"tgrad.save: unsupported dtype {data.dtype} for {name!r}")
        blob = data.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        entries[name] = {"dtype": _DTYPES[data.dtype], "shape": list(data.shape),
                         "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    data = b"".join(blobs)
    metadata[_CRC_KEY] = _checksum(metadata, entries, data)
    text = json.dumps({"__metadata__": metadata, **entries}, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data section starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + data


def _checksum(metadata: dict, entries: dict, data) -> str:
    rest = {k: v for k, v in metadata.items() if k != _CRC_KEY}
    crc = zlib.crc32(json.dumps([rest, entries], separators=(",", ":")).encode("utf-8"))
    return f"{zlib.crc32(data, crc):08x}"


def save(obj, f) -> None:
    """Write ``obj`` (a state dict, or nested dicts/lists of tensors and plain values) to ``f``
    (a path, written atomically, or a binary file object)."""
    payload = _encode(obj)
    if hasattr(f, "write"):
        f.write(payload)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + "-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            pause = os.environ.get(_PAUSE_ENV)
            if pause:  # the test hook (module doc): half a file on disk, then wait to be killed
                out.write(payload[:int(pause)])
                out.flush()
                os.fsync(out.fileno())
                time.sleep(3600)
                payload = payload[int(pause):]
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _corrupt(where, why):
    return RuntimeError(f"{where}: not a valid tgrad/safetensors checkpoint ({why})")


def _decode(raw: bytes, where: str, device):
    if len(raw) < 8:
        raise _corrupt(where, f"the file is truncated: {len(raw)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise _corrupt(where, f"the file is truncated: the header needs {n} bytes but only {len(raw) - 8} follow")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _corrupt(where, f"the header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise _corrupt(where, "the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data, tensors = memoryview(raw)[8 + n:], {}
    for name, info in header.items():
        try:
            dtype = _BY_CODE[info["dtype"]]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError) as e:
            raise _corrupt(where, f"bad header entry for {name!r}: {info!r}") from e
        nbytes = int(np.prod(shape, dtype=np.int64)) * torch.empty((), dtype=dtype).element_size()
        if end > len(data):
            raise _corrupt(where, f"the file is truncated: tensor {name!r} ends at byte {end} of the data but the "
                                  f"data has {len(data)} bytes")
        if begin < 0 or end - begin != nbytes:
            raise _corrupt(where, f"tensor {name!r} of shape {shape} and dtype {info['dtype']} needs {nbytes} "
                                  f"bytes, but its offsets [{begin}, {end}] span {end - begin}")
        if nbytes == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.from_numpy(np.frombuffer(data[begin:end], dtype=np.uint8).copy()).view(dtype).reshape(shape)
        if device is not None:
            t = t.to(device)
        tensors[name] = Tensor._wrap(t)
    if _CRC_KEY in metadata:
        crc = _checksum(metadata, header, data)
        if crc != metadata[_CRC_KEY]:
            raise _corrupt(where, f"the file is corrupted: its checksum is {crc}, but the header records "
                                  f"{metadata[_CRC_KEY]}")
    if _TREE_KEY in metadata:
        try:
            return _rebuild(json.loads(metadata[_TREE_KEY]), tensors)
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
            raise _corrupt(where, f"the structure in __metadata__ is damaged: {e!r}") from None
    return tensors


def load(f, map_location=None, weights_only=None, **kwargs):
    """Read what ``save`` wrote (or any safetensors file) from a path or binary file object.

    Returns the saved structure with tensors as tgrad tensors, on ``map_location`` (a device, or
    the CPU when None). ``weights_only`` is accepted for PyTorch compatibility: nothing but
    tensors and plain values can be loaded anyway."""
    device = None if map_location is None else torch.device(map_location)
    if hasattr(f, "read"):
        return _decode(f.read(), getattr(f, "name", "<file object>"), device)
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return _decode(fh.read(), path, device)
