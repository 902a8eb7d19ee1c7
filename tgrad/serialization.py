"""``tgrad.save`` / ``tgrad.load``: checkpoints in the safetensors format (or PyTorch's, see the end).

The file format is the ``safetensors`` package's (https://github.com/huggingface/safetensors):
``safetensors.torch.save`` lays the file out (an 8-byte header length, a JSON header of each
tensor's dtype, shape and data offsets plus a ``__metadata__`` map of strings, then the tensors'
bytes, ordered by dtype alignment and name) and ``safetensors.deserialize`` reads and validates it.
tgrad reads the header's JSON itself only for the metadata (the library's bytes API does not return
it) and, when the library refuses a file, to say what is wrong in the file's terms.
Any safetensors reader (``safetensors.torch.load_file`` ...) reads the tensors of a tgrad file.
What tgrad adds lives in ``__metadata__``:

- ``"tgrad.keys"``: for a flat ``{str: Tensor}`` dict of distinct plain tensors that do not require
  grad (a model's ``state_dict()``), the names in their insertion order (the file's own order is
  the library's). The tensors are stored under exactly those names. ``"tgrad.shared"`` maps a name
  to an earlier one over the same memory and layout (tied weights): they load back sharing memory.
- ``"tgrad.tree"``: for anything else built of dicts, lists, tuples, ``Size``, dtypes, numbers,
  strings, bools, None, tensors and NumPy arrays (an optimizer's ``state_dict()``, ``{"model": ...,
  "epoch": 3}``), a JSON skeleton: each tensor is ``{"__tensor__": name}`` (named by its path,
  ``"state/0/exp_avg"``; ``"requires_grad": true``, ``"class"`` for a Parameter, ``"shares"``
  naming an earlier tensor over the same memory; a tensor object met twice is one node and loads
  back as one object), each NumPy array ``{"__ndarray__": name}`` (a NumPy scalar adds
  ``"scalar": true``) and loads back as a NumPy array of its dtype and shape, dicts are lists of
  ``[key, value]`` pairs (keys: scalars, floats included, or marked tuples), tuples, Sizes and
  dtypes are marked.
- ``"tgrad.crc32"``: the CRC-32 of the rest of the metadata, of the tensor table (name, dtype,
  shape) and of the tensors' bytes, in name order, then of any bytes of the data section that no
  tensor covers. It catches damage the library's validation cannot see (a flipped bit in the data,
  a renamed tensor, a changed dtype code); files from other writers do not have it and are not
  checked. Files from tgrad's earlier hand-written writer carry its older checksum, checked too.

A safetensors file from another writer (no tgrad metadata) loads as a flat dict of tensors in the
file's order. A ``torch.save`` checkpoint (zip or legacy pickle) is read by PyTorch's weights-only
loader (``torch_format``); ``load`` names what any other file is (``file_kinds``).

``save`` writes a path atomically, as ``open(path, "wb")`` would (``atomic_write``). A path ending
in .pt or .pth, or ``format="torch"``, gets PyTorch's zip format (``torch_format``), which
``torch.load`` reads. A whole module or optimizer is refused, in either format, with the advice to
save its ``state_dict()``: storing one would mean pickling code (PyTorch 2.6+ refuses to load such
files by default too); in memory, ``pickle`` and ``copy`` work on them as in PyTorch.
"""
from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np
import safetensors
import safetensors.torch
import torch

from . import _dtype, file_kinds, torch_format
from .file_kinds import MAX_HEADER
from ._dtype import Size
from .atomic_write import write_file
from .tensor import Tensor, tensor_class

__all__ = ["save", "load"]

# the header's dtype codes: torch dtype, NumPy dtype (None: no NumPy equivalent), element size
_CODES = {"F64": (torch.float64, "<f8", 8), "F32": (torch.float32, "<f4", 4), "F16": (torch.float16, "<f2", 2),
          "BF16": (torch.bfloat16, None, 2), "I64": (torch.int64, "<i8", 8), "I32": (torch.int32, "<i4", 4),
          "I16": (torch.int16, "<i2", 2), "I8": (torch.int8, "i1", 1), "U8": (torch.uint8, "u1", 1),
          "BOOL": (torch.bool, "?", 1), "U16": (torch.uint16, "<u2", 2), "U32": (torch.uint32, "<u4", 4),
          "U64": (torch.uint64, "<u8", 8)}
_BY_TORCH = {v[0]: k for k, v in _CODES.items()}
_BY_NUMPY = {np.dtype(v[1]): k for k, v in _CODES.items() if v[1]}
# the dtypes a tgrad tensor can have (uint16/32/64 only come from NumPy arrays)
_TENSOR_CODES = ("F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL")
_KEYS_KEY, _TREE_KEY, _SHARED_KEY, _CRC_KEY = "tgrad.keys", "tgrad.tree", "tgrad.shared", "tgrad.crc32"
_SCALARS = (bool, int, float, str, type(None))


# ----------------------------------------------------------------------------- save

def _what(obj) -> str:
    """What ``save`` accepts, for the error on anything else."""
    return (f"tgrad.save stores tensors, numbers, strings, None and dicts/lists/tuples of them (and NumPy arrays), "
            f"such as a state_dict(), not {type(obj).__name__} objects")


def _refuse(obj, path):
    where = f" (at {'/'.join(path)})" if path else ""
    if not isinstance(obj, type) and callable(getattr(obj, "state_dict", None)):
        # a Module, an optimizer, a scheduler: what it holds is its state_dict(); its code is not data
        raise TypeError(f"{_what(obj)}{where}. A whole {type(obj).__name__} cannot be saved without pickling its "
                        f"code: save its state_dict() instead, as in tgrad.save(model.state_dict(), path), and "
                        f"restore it with model.load_state_dict(tgrad.load(path)) (PyTorch 2.6+ refuses to load a "
                        f"pickled {type(obj).__name__} by default too)")
    raise TypeError(f"{_what(obj)}{where}")


def _array(a) -> torch.Tensor:
    """A NumPy array (or NumPy scalar) as a CPU tensor over its little-endian bytes."""
    a = np.asarray(a)
    code = _BY_NUMPY.get(a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype)
    if code is None:
        raise TypeError(f"tgrad.save: unsupported NumPy dtype {a.dtype} (tgrad.save stores arrays of "
                        f"{', '.join(str(d) for d in _BY_NUMPY)})")
    a = a.astype(np.dtype(_CODES[code][1]), order="C", copy=False)
    return torch.from_numpy(a if a.flags.writeable else a.copy())  # (torch warns on read-only arrays)


def _key(k):
    """A dict key as JSON: scalars as themselves, tuples (and Size) marked, as ``_rebuild`` reads."""
    if isinstance(k, Size):
        return {"__size__": list(k)}
    if isinstance(k, tuple):
        return {"__tuple__": [_key(x) for x in k]}
    if isinstance(k, _SCALARS):
        return k
    raise TypeError(f"tgrad.save: dict keys must be str, int, float, bool, None or tuples of them, "
                    f"got {type(k).__name__}")


def _view_key(t: torch.Tensor):
    """Two tensor objects over the same memory with the same layout (``w`` and ``w.detach()``)."""
    return t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), t.stride(), t.dtype, t.device


class _Skeleton:
    """``obj`` as JSON-able data with each tensor and array replaced by a reference into
    ``tensors``. A tensor object met twice is one entry (it loads back as one object); another
    object over the same memory and layout records ``"shares"`` (it loads back sharing memory)."""

    def __init__(self):
        self.tensors, self.nodes, self.views = {}, {}, {}

    def name(self, path):
        name = base = "/".join(path) or "tensor"
        i = 1
        while name in self.tensors:  # {"a/b": x, "a": {"b": y}}: two paths, one name
            name, i = f"{base}#{i}", i + 1
        return name

    def tensor(self, t: Tensor, path):
        if id(t) in self.nodes:
            return self.nodes[id(t)]
        name = self.name(path)
        self.tensors[name] = t._data
        node = {"__tensor__": name}
        if t.requires_grad:
            node["requires_grad"] = True
        if type(t) is not Tensor:  # a Parameter: the core names its class without importing nn
            node["class"] = ":".join(type(t)._home)
        if t._data.numel():
            node["shares"] = self.views.setdefault(_view_key(t._data), name)
            if node["shares"] == name:
                del node["shares"]
        self.nodes[id(t)] = node
        return node

    def __call__(self, obj, path):
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.ndarray) or isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            name = self.name(path)
            self.tensors[name] = _array(obj)
            return {"__ndarray__": name, "scalar": True} if isinstance(obj, np.generic) else {"__ndarray__": name}
        if isinstance(obj, dict):
            return {"__dict__": [[_key(k), self(v, path + [str(k)])] for k, v in obj.items()]}
        if isinstance(obj, Size):
            return {"__size__": list(obj)}
        if isinstance(obj, _dtype.dtype):
            return {"__dtype__": obj.name}
        if isinstance(obj, (list, tuple)):
            items = [self(v, path + [str(i)]) for i, v in enumerate(obj)]
            return {"__tuple__": items} if isinstance(obj, tuple) else items
        if isinstance(obj, _SCALARS):
            return obj
        _refuse(obj, path)


def _checksum(metadata: dict, table, chunks) -> str:
    """CRC-32 of the metadata but the checksum, the tensor table, then the byte chunks."""
    rest = {k: v for k, v in metadata.items() if k != _CRC_KEY}
    crc = zlib.crc32(json.dumps([rest, table], sort_keys=True, separators=(",", ":")).encode("utf-8"))
    for chunk in chunks:
        crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _encode(obj) -> bytes:
    obj = torch_format.from_torch_objects(obj)  # torch tensors given to tgrad.save are saved as tgrad's
    if (isinstance(obj, dict) and len({id(v) for v in obj.values()}) == len(obj)
            and all(isinstance(k, str) and type(v) is Tensor and not v.requires_grad for k, v in obj.items())):
        tensors = {k: v._data for k, v in obj.items()}
        metadata = {"format": "pt", _KEYS_KEY: json.dumps(list(tensors))}
        views, shared = {}, {}
        for k, t in tensors.items():  # w and w.detach() (tied weights in a state_dict) load back sharing
            first = views.setdefault(_view_key(t), k) if t.numel() else k
            if first != k:
                shared[k] = first
        if shared:
            metadata[_SHARED_KEY] = json.dumps(shared)
    else:
        skeleton = _Skeleton()
        metadata = {"format": "pt", _TREE_KEY: json.dumps(skeleton(obj, []))}
        tensors = skeleton.tensors
    flat, seen = {}, set()
    for name, t in tensors.items():
        code = _BY_TORCH.get(t.dtype)
        if code is None:
            raise TypeError(f"tgrad.save: unsupported dtype {t.dtype} for {name!r}")
        t = t.detach().cpu().contiguous()
        if t.numel() and t.untyped_storage().data_ptr() in seen:
            t = t.clone()  # the same memory under two names (tied weights) is written twice
        seen.add(t.untyped_storage().data_ptr())
        flat[name] = t
    names = sorted(flat)
    table = [[n, _BY_TORCH[flat[n].dtype], list(flat[n].shape)] for n in names]
    metadata[_CRC_KEY] = _checksum(metadata, table, (flat[n].reshape(-1).view(torch.uint8).numpy() for n in names))
    return _sorted_metadata(safetensors.torch.save(flat, metadata=metadata))


def _sorted_metadata(payload: bytes) -> bytes:
    """The library writes ``__metadata__`` in hash order, another at each call: put it in key order,
    so that the same checkpoint is the same bytes (a permutation inside the header, same length)."""
    (n,) = struct.unpack("<Q", payload[:8])
    head, start = payload[8:8 + n].decode("utf-8"), len('{"__metadata__":')
    if not head.startswith('{"__metadata__":'):
        return payload
    metadata, end = json.JSONDecoder().raw_decode(head, start)
    text = json.dumps(dict(sorted(metadata.items())), separators=(",", ":"))
    if len(text) != end - start:  # not reached: the metadata is ASCII, escaped alike by serde and json
        return payload
    return payload[:8] + (head[:start] + text + head[end:]).encode("utf-8") + payload[8 + n:]


def save(obj, f, format=None) -> None:
    """Write ``obj`` (a state dict, or nested dicts/lists of tensors, NumPy arrays and plain
    values; PyTorch's tensors are taken as tgrad's) to ``f`` (a path, written atomically, or a
    binary file object).

    ``format``: ``"safetensors"`` (tgrad's checkpoints) or ``"torch"`` (``torch.save``'s zip
    archive, which PyTorch's ``torch.load`` reads); by default ``"torch"`` for a path ending in
    .pt or .pth, else ``"safetensors"``."""
    if format is None:
        name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else ""
        format = "torch" if str(name).lower().endswith((".pt", ".pth")) else "safetensors"
    if format == "safetensors":
        payload = _encode(obj)
    elif format == "torch":
        payload = torch_format.write(obj, _refuse)
    else:
        raise ValueError(f"tgrad.save: format must be 'safetensors' or 'torch', got {format!r}")
    if hasattr(f, "write"):
        f.write(payload)
        return
    write_file(payload, os.fspath(f))


# ----------------------------------------------------------------------------- load

def _corrupt(where, why):
    return RuntimeError(f"{where}: not a valid tgrad/safetensors checkpoint ({why})")


def _header(raw: bytes, where: str):
    """The JSON header (the library's bytes API does not return the metadata) and the data offset."""
    if len(raw) < 8:
        raise _corrupt(where, f"the file is truncated: {len(raw)} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > MAX_HEADER or 8 + n > len(raw):
        what = file_kinds.foreign(raw)
        if what:
            raise _corrupt(where, what)
        if n > MAX_HEADER:
            raise _corrupt(where, f"the first 8 bytes announce a header of {n} bytes, more than safetensors allows "
                                  f"({MAX_HEADER}): not a safetensors file, or a damaged one")
        raise _corrupt(where, f"the file is truncated: the header needs {n} bytes but only {len(raw) - 8} follow")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _corrupt(where, f"the header is not valid JSON: {e}") from None
    if not isinstance(header, dict):
        raise _corrupt(where, "the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise _corrupt(where, "__metadata__ is not a JSON object")
    return header, metadata, 8 + n


def _table(header: dict):
    return [[name, header[name]["dtype"], header[name]["shape"]] for name in sorted(header)]


def _chunks(header: dict, data: memoryview, trailing: bool):
    for name in sorted(header):
        begin, end = header[name]["data_offsets"]
        yield data[begin:end]
    if trailing:  # bytes that no tensor covers (only in a file the library rejected)
        yield data[max((info["data_offsets"][1] for info in header.values()), default=0):]


def _legacy_checksum(metadata: dict, header: dict, data) -> str:
    """The checksum of files from tgrad's own writer before the safetensors package: the metadata
    and the tensor entries as compact JSON in the file's order, then the whole data section."""
    rest = {k: v for k, v in metadata.items() if k != _CRC_KEY}
    return f"{zlib.crc32(data, zlib.crc32(json.dumps([rest, header], separators=(',', ':')).encode())):08x}"


def _check_crc(metadata, header, data, where, trailing=False):
    if _CRC_KEY in metadata:
        crc = _checksum(metadata, _table(header), _chunks(header, data, trailing))
        if crc != metadata[_CRC_KEY] and _legacy_checksum(metadata, header, data) != metadata[_CRC_KEY]:
            raise _corrupt(where, f"the file is corrupted: its checksum is {crc}, but the header records "
                                  f"{metadata[_CRC_KEY]}")


def _explain(header: dict, metadata: dict, data: memoryview, where: str, error: Exception):
    """Why safetensors refused a file whose header is JSON, in the file's terms."""
    for name, info in header.items():
        try:
            code = info["dtype"]
            shape = [int(s) for s in info["shape"]]
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            return _corrupt(where, f"bad header entry for {name!r}: {info!r}")
        if end > len(data):
            return _corrupt(where, f"the file is truncated: tensor {name!r} ends at byte {end} of the data but the "
                                   f"data has {len(data)} bytes")
        if code in _CODES:
            nbytes = int(np.prod(shape, dtype=np.int64)) * _CODES[code][2]
            if begin < 0 or end - begin != nbytes:
                return _corrupt(where, f"tensor {name!r} of shape {shape} and dtype {code} needs {nbytes} bytes, "
                                       f"but its offsets [{begin}, {end}] span {end - begin}")
    try:
        _check_crc(metadata, header, data, where, trailing=True)
    except RuntimeError as e:
        return e
    return _corrupt(where, f"safetensors refused it: {error}")


def _decode(raw: bytes, where: str, device):
    header, metadata, start = _header(raw, where)
    data = memoryview(raw)[start:]
    try:
        entries = dict(safetensors.deserialize(raw))
    except safetensors.SafetensorError as e:
        raise _explain(header, metadata, data, where, e) from None
    _check_crc(metadata, header, data, where)

    def storage(name):
        code, shape, buf = entries[name]["dtype"], list(entries[name]["shape"]), entries[name]["data"]
        if code not in _TENSOR_CODES:
            raise RuntimeError(f"{where}: tensor {name!r} has dtype {code}, which tgrad tensors do not support "
                               f"(tgrad supports {', '.join(_TENSOR_CODES)})")
        dtype = _CODES[code][0]
        t = (torch.from_numpy(np.frombuffer(buf, dtype=np.uint8).copy()).view(dtype).reshape(shape) if buf else
             torch.empty(shape, dtype=dtype))
        return t if device is None else t.to(device)

    def array(name):
        code, shape, buf = entries[name]["dtype"], list(entries[name]["shape"]), entries[name]["data"]
        if code not in _CODES or _CODES[code][1] is None:
            raise _corrupt(where, f"array {name!r} has dtype {code}, which NumPy has no dtype for")
        return np.frombuffer(buf, dtype=np.dtype(_CODES[code][1])).reshape(shape).copy()

    loaded = {}  # name -> Tensor: a tensor saved twice is one object, "shares" reuses the memory

    def tensor(node):
        if isinstance(node, str):
            node = {"__tensor__": node}
        name = node["__tensor__"]
        if name not in loaded:
            data = loaded[node["shares"]]._data if "shares" in node else storage(name)
            t = Tensor._init(object.__new__(_tensor_class(node.get("class"))), data)
            if node.get("requires_grad"):
                t.requires_grad_(True)
            loaded[name] = t
        return loaded[name]

    for key, what in ((_TREE_KEY, "structure"), (_KEYS_KEY, "key list")):
        if key in metadata:
            try:
                node = json.loads(metadata[key])
                if key == _TREE_KEY:
                    return _rebuild(node, tensor, array)
                shared = json.loads(metadata.get(_SHARED_KEY, "{}"))
                return {k: tensor({"__tensor__": k, "shares": shared[k]} if k in shared else k) for k in node}
            except (KeyError, TypeError, ValueError, IndexError) as e:
                raise _corrupt(where, f"the {what} in __metadata__ is damaged: {e!r}") from None
    return {name: tensor(name) for name in header}  # a plain safetensors file: its tensors in the file's order


def _tensor_class(path):
    """The class a tensor was saved as: tgrad's own Tensor subclasses (``tgrad.nn.Parameter``) come
    back as themselves; a user's subclass, whose code a checkpoint does not hold, as a Tensor."""
    module, _, name = (path or "").partition(":")
    if module.split(".")[0] != "tgrad":
        return Tensor
    try:
        return tensor_class(module, name)
    except (ImportError, AttributeError, TypeError) as e:
        raise ValueError(f"no tensor class {path!r}: {e}") from None


def _rebuild(node, tensor, array):
    if isinstance(node, list):
        return [_rebuild(v, tensor, array) for v in node]
    if isinstance(node, dict):
        if "__tensor__" in node:
            return tensor(node)
        if "__ndarray__" in node:
            a = array(node["__ndarray__"])
            return a[()] if node.get("scalar") else a
        if "__tuple__" in node:
            return tuple(_rebuild(v, tensor, array) for v in node["__tuple__"])
        if "__size__" in node:
            return Size(node["__size__"])
        if "__dtype__" in node:
            return _dtype._BY_NAME[node["__dtype__"]]
        return {_rebuild(k, tensor, array): _rebuild(v, tensor, array) for k, v in node["__dict__"]}
    return node


def load(f, map_location=None, weights_only=None, **kwargs):
    """Read what ``save`` wrote, any safetensors file, or a ``torch.save`` checkpoint from a path or
    binary file object.

    Returns the saved structure with tensors as tgrad tensors, on ``map_location`` (a device, or
    the CPU when None), and NumPy arrays as NumPy arrays. A ``torch.save`` file is read by
    ``torch.load`` with PyTorch's rules: ``weights_only=True`` unless ``weights_only=False`` is
    passed (``torch_format``). A safetensors file holds nothing but data whatever ``weights_only``."""
    if hasattr(f, "read"):
        raw, where = f.read(), getattr(f, "name", "<file object>")
    else:
        where = os.fspath(f)
        with open(where, "rb") as fh:
            raw = fh.read()
    if file_kinds.is_torch_file(raw):
        return torch_format.read(raw, map_location, weights_only)
    return _decode(raw, where, None if map_location is None else torch.device(map_location))
