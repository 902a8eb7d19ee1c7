"""tgrad's dtypes, Size and device helpers: thin names over torch's, printed as ``tgrad.*``."""
from __future__ import annotations

import builtins

import torch

# the module name tgrad prints its dtypes, Size and tensor types under: "torch" while the drop-in
# runner (tgrad.dropin) is installed, so scripts that print or compare them read as with PyTorch
NAMESPACE = "tgrad"


class dtype:
    """``name`` (float32), ``torch`` (its torch dtype), ``legacy`` (FloatTensor) and the names
    PyTorch's messages print: ``scalar_type`` (Float), ``type_name`` (float), ``c_type`` (float,
    c10::Half; the dtype's own name for integers)."""
    __slots__ = ("name", "torch", "is_floating_point", "itemsize", "legacy", "scalar_type", "type_name", "c_type")

    def __init__(self, name, torch_dtype, is_floating_point, legacy):
        self.name, self.torch, self.is_floating_point, self.legacy = name, torch_dtype, is_floating_point, legacy
        self.itemsize = torch_dtype.itemsize
        self.scalar_type, self.type_name, self.c_type = _NAMES[name]

    def __repr__(self):
        return f"{NAMESPACE}.{self.name}"

    def __reduce__(self):
        return (_from_name, (self.name,))


# the one table of PyTorch's names for a dtype: (ScalarType, legacy type name, C++ type)
_NAMES = {"float32": ("Float", "float", "float"), "float64": ("Double", "double", "double"),
          "float16": ("Half", "half", "c10::Half"), "bfloat16": ("BFloat16", "bfloat16", "c10::BFloat16"),
          "int64": ("Long", "long", "int64"), "int32": ("Int", "int", "int32"), "int16": ("Short", "short", "int16"),
          "int8": ("Char", "char", "int8"), "uint8": ("Byte", "byte", "uint8"), "bool": ("Bool", "bool", "bool")}


def _from_name(name):
    return _BY_NAME[name]


float32 = float = dtype("float32", torch.float32, True, "FloatTensor")
float64 = double = dtype("float64", torch.float64, True, "DoubleTensor")
float16 = half = dtype("float16", torch.float16, True, "HalfTensor")
bfloat16 = dtype("bfloat16", torch.bfloat16, True, "BFloat16Tensor")
int64 = long = dtype("int64", torch.int64, False, "LongTensor")
int32 = int = dtype("int32", torch.int32, False, "IntTensor")
int16 = short = dtype("int16", torch.int16, False, "ShortTensor")
int8 = dtype("int8", torch.int8, False, "CharTensor")
uint8 = dtype("uint8", torch.uint8, False, "ByteTensor")
bool = dtype("bool", torch.bool, False, "BoolTensor")

ALL = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool)
_BY_NAME = {d.name: d for d in ALL}
_BY_LEGACY = {d.legacy: d for d in ALL}


def from_type_name(name: str):
    """(dtype, device type) of a legacy type name: "torch.FloatTensor", "torch.cuda.LongTensor"
    (also spelled with tgrad)."""
    parts = name.split(".")
    cuda = len(parts) == 3 and parts[1] == "cuda"
    if parts[0] not in ("torch", "tgrad") or len(parts) not in (2, 3) or (len(parts) == 3 and not cuda) \
            or parts[-1] not in _BY_LEGACY:
        raise ValueError(f"invalid type: '{name}'")
    return _BY_LEGACY[parts[-1]], "cuda" if cuda else "cpu"
_BY_TORCH = {d.torch: d for d in ALL}

# Promotion order inside a category (bool < integer < floating), as torch.result_type.
_CATEGORY = {bool: 0, uint8: 1, int8: 1, int16: 1, int32: 1, int64: 1,
             float16: 2, bfloat16: 2, float32: 2, float64: 2}
_RANK = {bool: 0, uint8: 1, int8: 1, int16: 2, int32: 3, int64: 4,
         float16: 5, bfloat16: 5, float32: 6, float64: 7}

_default_dtype = float32


def get_default_dtype():
    return _default_dtype


def set_default_dtype(d):
    global _default_dtype
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d


def as_dtype(d) -> dtype:
    """Accept a tgrad dtype, a torch dtype, or a Python type (float -> default, int -> int64)."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, torch.dtype) and d in _BY_TORCH:
        return _BY_TORCH[d]
    if d is builtins.float:
        return _default_dtype
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    raise TypeError(f"unsupported dtype: {d!r} (tgrad supports {', '.join(x.name for x in ALL)})")


def promote(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    if {a, b} == {float16, bfloat16}:
        return float32
    if {a, b} == {uint8, int8}:
        return int16
    return a if _RANK[a] >= _RANK[b] else b


def category(d: dtype) -> int:
    return _CATEGORY[d]


class Size(tuple):
    """``tgrad.Size([2, 3])``: a tuple of ints, printed as PyTorch prints ``torch.Size``."""

    def __new__(cls, dims=()):
        if type(dims) is torch.Size:  # ints already: every Tensor.shape takes this path
            return tuple.__new__(cls, dims)
        return super().__new__(cls, (builtins.int(d) for d in dims))

    def __repr__(self):
        return f"{NAMESPACE}.Size({list(self)})"

    def __reduce__(self):  # by a function: the drop-in runner gives the class torch's module name
        return (_size, (tuple(self),))

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, item):
        r = super().__getitem__(item)
        return tuple.__new__(Size, r) if isinstance(item, slice) else r  # a slice of ints: ints already


def _size(dims):
    return Size(dims)


_default_device = None  # set_default_device's; None: the CPU


def set_default_device(device) -> None:
    """The device factories use when given none (``None`` restores the CPU), as PyTorch's."""
    global _default_device
    _default_device = None if device is None else as_device(device)


def get_default_device() -> torch.device:
    return torch.device("cpu") if _default_device is None else _default_device


def as_device(d) -> torch.device:
    if d is None:
        return get_default_device()
    dev = torch.device(d)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    if dev.type not in ("cpu", "cuda"):
        raise RuntimeError(f"tgrad runs on 'cpu' and 'cuda' devices, not {dev.type!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        if not torch.backends.cuda.is_built():  # torch's own exception type for this
            raise AssertionError("Torch not compiled with CUDA enabled")
        raise RuntimeError("CUDA is not available on this machine (no GPU or driver found)")
    return dev
