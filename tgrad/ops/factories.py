"""Tensor factories. Allocation and constant fills are storage work (torch); values that must be
computed (ranges, identity, random numbers) come from Triton kernels."""
from __future__ import annotations

import numbers

import numpy as np
import torch

from .. import _dtype
from .._dtype import as_device, as_dtype
from ..modes import _inference_mode_enabled
from ..tensor import Tensor
from .common import scalar_dtype
from .registry import op


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, numbers.Integral) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, but got an element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _new(data: torch.Tensor, requires_grad=False, factory=True) -> Tensor:
    as_dtype(data.dtype)  # a TypeError for what tgrad cannot hold (complex from numpy, torch or DLPack)
    t = Tensor._wrap(data)
    t._is_inference = _inference_mode_enabled()
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _dt(dtype, default=None):
    return as_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())


def _unwrap_nested(data):
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(d) for d in data]
    return data


@op("tensor", method=False)
def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """Copy ``data`` (numbers, nested lists, numpy arrays, tensors) into a new leaf tensor."""
    dev = as_device(device) if device is not None else (
        data.device if isinstance(data, (Tensor, torch.Tensor)) else as_device(None))
    if isinstance(data, Tensor):
        src = data._data
    elif isinstance(data, torch.Tensor):
        src = data.detach()
    elif isinstance(data, np.ndarray):  # (np.ascontiguousarray makes a 0-d array 1-d)
        src = torch.from_numpy(data if data.flags.c_contiguous else data.copy(order="C"))
    else:
        # Parsed straight into the target dtype: going through float32 first would round float64 data.
        nested = _unwrap_nested(data)
        src = torch.tensor(nested, dtype=as_dtype(dtype).torch if dtype is not None else None)
        if dtype is None and src.dtype is torch.float32 and _dtype.get_default_dtype() is not _dtype.float32:
            src = torch.tensor(nested, dtype=_dtype.get_default_dtype().torch)  # Python floats take the default
    target = as_dtype(dtype).torch if dtype is not None else src.dtype
    out = torch.empty(src.shape, dtype=target, device=dev)
    out.copy_(src)
    return _new(out, requires_grad)


@op("as_tensor", method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or as_dtype(dtype) is data.dtype) and \
            (device is None or as_device(device) == data.device):
        return data
    return tensor(data, dtype=dtype, device=device)


@op("from_numpy", method=False)
def from_numpy(a: np.ndarray) -> Tensor:
    """Shares memory with ``a``, as torch.from_numpy."""
    return _new(torch.from_numpy(a))


@op("from_torch", method=False)
def from_torch(t: torch.Tensor) -> Tensor:
    """Zero-copy: a tgrad tensor over ``t``'s memory (``t.requires_grad`` is not carried over)."""
    return _new(t.detach())


@op("from_dlpack", method=False)
def from_dlpack(obj) -> Tensor:
    return _new(torch.from_dlpack(obj))


@op("empty", method=False)
def empty(*size, dtype=None, device=None, requires_grad=False, **_) -> Tensor:
    return _new(torch.empty(_shape(size), dtype=_dt(dtype).torch, device=as_device(device)), requires_grad)


@op("full", method=False)
def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = scalar_dtype(fill_value)
    return _new(torch.full(_shape((size,)), fill_value, dtype=_dt(dtype).torch, device=as_device(device)),
                requires_grad)


@op("zeros", method=False)
def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new(torch.zeros(_shape(size), dtype=_dt(dtype).torch, device=as_device(device)), requires_grad)


@op("ones", method=False)
def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _new(torch.ones(_shape(size), dtype=_dt(dtype).torch, device=as_device(device)), requires_grad)


def _like(fn, t, dtype, device, requires_grad, *args):
    return fn(t.shape, *args, dtype=dtype if dtype is not None else t.dtype,
              device=device if device is not None else t.device, requires_grad=requires_grad)


@op("zeros_like", method=False)
def zeros_like(t, dtype=None, device=None, requires_grad=False):
    return _like(zeros, t, dtype, device, requires_grad)


@op("ones_like", method=False)
def ones_like(t, dtype=None, device=None, requires_grad=False):
    return _like(ones, t, dtype, device, requires_grad)


@op("empty_like", method=False)
def empty_like(t, dtype=None, device=None, requires_grad=False):
    return _like(empty, t, dtype, device, requires_grad)


@op("full_like", method=False)
def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    return full(t.shape, fill_value, dtype=dtype if dtype is not None else t.dtype,
                device=device if device is not None else t.device, requires_grad=requires_grad)


class LegacyType(type):
    """``tgrad.FloatTensor`` and its kin: called, the legacy constructor (``FloatTensor([1, 2])``
    copies data, ``FloatTensor(2, 3)`` allocates zeros); ``isinstance(t, tgrad.FloatTensor)`` asks
    for a CPU tensor of that dtype; ``t.type(tgrad.FloatTensor)`` converts."""

    def __call__(cls, *args, device=None):
        return _legacy(cls.dtype, args)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'tgrad.{cls.__name__}'>"


def _legacy_type(name, dtype):
    return LegacyType(name, (), {"dtype": dtype, "__module__": "tgrad"})


FloatTensor = op("FloatTensor", method=False)(_legacy_type("FloatTensor", _dtype.float32))
DoubleTensor = op("DoubleTensor", method=False)(_legacy_type("DoubleTensor", _dtype.float64))
HalfTensor = op("HalfTensor", method=False)(_legacy_type("HalfTensor", _dtype.float16))
LongTensor = op("LongTensor", method=False)(_legacy_type("LongTensor", _dtype.int64))
IntTensor = op("IntTensor", method=False)(_legacy_type("IntTensor", _dtype.int32))
ShortTensor = op("ShortTensor", method=False)(_legacy_type("ShortTensor", _dtype.int16))
CharTensor = op("CharTensor", method=False)(_legacy_type("CharTensor", _dtype.int8))
ByteTensor = op("ByteTensor", method=False)(_legacy_type("ByteTensor", _dtype.uint8))
BoolTensor = op("BoolTensor", method=False)(_legacy_type("BoolTensor", _dtype.bool))


def _legacy(dtype, args):
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        return tensor(args[0], dtype=dtype)
    return zeros(*args, dtype=dtype)
