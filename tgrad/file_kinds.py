"""What a file is when it is not a safetensors checkpoint: a ``torch.save`` checkpoint, which
``tgrad.load`` reads through PyTorch's loader, or something to name in the error (a TorchScript
archive, a pickle, a NumPy file, text, ...)."""
from __future__ import annotations

import io
import struct
import zipfile

__all__ = ["is_torch_file", "foreign", "MAX_HEADER"]

MAX_HEADER = 100_000_000  # safetensors refuses a larger header

# torch.save's legacy format opens with a pickled magic number (0x1950a86a20f9469cfc6c, a LONG1)
_TORCH_MAGIC = b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _zip_names(raw: bytes):
    if raw[:4] != b"PK\x03\x04":
        return None
    try:
        return zipfile.ZipFile(io.BytesIO(raw)).namelist()
    except (zipfile.BadZipFile, ValueError):
        return []


def _is_torchscript(names) -> bool:
    return any("/code/" in n for n in names) and any(n.endswith("constants.pkl") for n in names)


def is_torch_file(raw: bytes) -> bool:
    """A ``torch.save`` checkpoint: its zip archive (holding data.pkl), or the legacy pickle format."""
    names = _zip_names(raw)
    if names is not None:
        return not _is_torchscript(names) and any(n == "data.pkl" or n.endswith("/data.pkl") for n in names)
    return raw[:1] == b"\x80" and _TORCH_MAGIC in raw[:24]


def foreign(raw: bytes):
    """What a file that does not start like a safetensors file is, or None when unknown."""
    names = _zip_names(raw)
    if names is not None:
        if _is_torchscript(names):
            return ("it is a TorchScript archive written by torch.jit.save, which holds code and pickles; "
                    "tgrad.load reads safetensors files and torch.save checkpoints of tensors")
        if names and all(n.endswith(".npy") for n in names):
            return "it is a NumPy .npz archive: read it with numpy.load"
        return "it is a zip archive, not a safetensors file"
    if raw[:1] == b"\x80" and 2 <= raw[1] <= 5 and struct.unpack("<Q", raw[:8])[0] > MAX_HEADER:
        return (f"it is a Python pickle (protocol {raw[1]}); tgrad.load reads safetensors files and torch.save "
                f"checkpoints, and unpickles nothing else")
    if raw.startswith(b"\x93NUMPY"):
        return "it is a NumPy .npy file: read it with numpy.load"
    if raw.startswith(b"\x89HDF\r\n\x1a\n"):
        return "it is an HDF5 file (h5py, Keras), not a safetensors file"
    if raw.startswith(b"\x1f\x8b"):
        return "it is a gzip-compressed file: decompress it first"
    if all(32 <= b < 127 or b in b"\t\r\n" for b in raw[:8]):
        return f"it starts with text ({raw[:8].decode('ascii')!r}...), not with a safetensors header length"
    return None
