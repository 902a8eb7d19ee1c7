"""PyTorch's checkpoint format (``torch.save``'s zip archive) for ``tgrad.load`` and ``tgrad.save``.

Reading goes through PyTorch's own loader, ``torch.load(..., weights_only=True)`` unless the caller
passes ``weights_only=False`` (PyTorch's rule, with PyTorch's errors for what it refuses): only
tensors, containers, numbers and the like are unpickled. Its torch tensors become tgrad tensors over
the same memory (no copy): a ``torch.nn.Parameter`` a ``tgrad.nn.Parameter``, ``requires_grad``
kept, ``torch.Size`` a ``tgrad.Size``, torch dtypes tgrad's; tensors that shared memory still do.

Writing converts the other way (a tgrad tensor is saved as the torch tensor it stores, so nothing is
copied before ``torch.save``) and lets ``torch.save`` write the archive: real PyTorch reads the file
with ``torch.load`` under its default ``weights_only=True``. Only data can be written this way:
modules and optimizers are refused by the caller's ``refuse``, as by the safetensors writer.
"""
from __future__ import annotations

import copy
import io

import numpy as np
import torch

from . import _dtype
from ._dtype import Size
from .tensor import Tensor, tensor_class

__all__ = ["read", "write", "to_torch", "from_torch_objects", "to_torch_objects"]

# what torch.save writes as it is (torch's own objects included: a caller may mix them in)
_PLAIN = (bool, int, float, complex, str, bytes, type(None), torch.device, torch.dtype, torch.Size, torch.Tensor,
          np.ndarray, np.generic)


def _parameter():
    """tgrad.nn.Parameter, named rather than imported: the core does not import nn."""
    return tensor_class("tgrad.nn.parameter", "Parameter")


def _container(obj, convert):
    """``obj`` rebuilt with ``convert(item, where)`` applied to its keys (``where`` None) and items
    (``where`` their key or index), keeping its container type and attributes (an ``OrderedDict``'s
    ``_metadata`` from ``state_dict()``, a defaultdict's factory)."""
    if isinstance(obj, dict):
        out = copy.copy(obj)
        out.clear()
        for k, v in obj.items():
            out[convert(k, None)] = convert(v, str(k))
        return out
    items = [convert(v, str(i)) for i, v in enumerate(obj)]
    return items if isinstance(obj, list) else tuple(items)


def from_torch_objects(obj, memo=None):
    """What ``torch.load`` returned, with torch tensors, Parameters, Sizes and dtypes as tgrad's."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, torch.Tensor):
        if obj.dtype not in _dtype._BY_TORCH:
            raise TypeError(f"a torch tensor of dtype {obj.dtype}, which tgrad tensors do not support "
                            f"(tgrad supports {', '.join(str(d) for d in _dtype._BY_TORCH)})")
        cls = _parameter() if isinstance(obj, torch.nn.Parameter) else Tensor
        out = Tensor._init(object.__new__(cls), obj.detach())
        if obj.requires_grad:
            out.requires_grad_(True)
    elif isinstance(obj, torch.Size):
        out = Size(obj)
    elif isinstance(obj, torch.dtype):
        out = _dtype._BY_TORCH.get(obj, obj)
    elif isinstance(obj, (dict, list, tuple)) and not isinstance(obj, Size):
        out = _container(obj, lambda v, _: from_torch_objects(v, memo))
    else:
        return obj
    memo[id(obj)] = out
    return out


def to_torch_objects(obj, refuse, path=(), memo=None):
    """``obj`` with tgrad tensors (over the same memory), Parameters, Sizes and dtypes as torch's;
    ``refuse(obj, path)`` raises for anything that is not data."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, Tensor):
        data = obj._data.detach()
        if type(obj) is not Tensor and issubclass(type(obj), _parameter()):
            out = torch.nn.Parameter(data, requires_grad=obj.requires_grad)
        else:
            out = data.requires_grad_(True) if obj.requires_grad else data
    elif isinstance(obj, Size):
        out = torch.Size(obj)
    elif isinstance(obj, _dtype.dtype):
        out = obj.torch
    elif isinstance(obj, _PLAIN):
        return obj
    elif isinstance(obj, (dict, list, tuple)):
        out = _container(obj, lambda v, where: to_torch_objects(v, refuse, path if where is None else
                                                                  (*path, where), memo))
    else:
        refuse(obj, list(path))
    memo[id(obj)] = out
    return out


def _not_data(obj, path):
    where = f" (at {'/'.join(path)})" if path else ""
    raise TypeError(f"tgrad.to_torch converts tensors, Sizes, dtypes and containers of them, not "
                    f"{type(obj).__name__} objects{where}")


def to_torch(obj):
    """A tgrad state dict (a module's or an optimizer's), tensor or container of them as PyTorch
    objects over the same memory, for a PyTorch module's or optimizer's ``load_state_dict``."""
    return to_torch_objects(obj, _not_data)


def read(raw: bytes, map_location=None, weights_only=None):
    """A ``torch.save`` file's contents, read by ``torch.load``, as tgrad objects."""
    obj = torch.load(io.BytesIO(raw), map_location=map_location, weights_only=weights_only is not False)
    return from_torch_objects(obj)


def write(obj, refuse) -> bytes:
    """``obj`` as ``torch.save`` writes it (the zip archive)."""
    buf = io.BytesIO()
    torch.save(to_torch_objects(obj, refuse), buf)
    return buf.getvalue()
