"""Shared by every op, and by tgrad.nn's fused ops (public helpers): wrapping kernel results,
checking operands, broadcasting, promotion, and summing a gradient back over broadcast dims (which
the engine does for every Function, ``autograd/engine.py``)."""
from __future__ import annotations

import numbers
import warnings

import torch

from .. import _dtype
from ..tensor import Tensor


def wrap(data: torch.Tensor) -> Tensor:
    return Tensor._wrap(data)


def check_runnable(*tensors):
    """Refuse what the kernels cannot run: mixed devices, bf16 under the CPU interpreter."""
    dev = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        data = t._data
        if dev is None:
            dev = data.device
        elif data.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {data.device}!")
        if data.dtype is torch.bfloat16 and data.is_cpu:
            raise RuntimeError("bfloat16 is not supported on the CPU: Triton's interpreter computes it wrongly. "
                               "Use float32/float16 on the CPU, or a CUDA device for bfloat16.")
    return dev


def require_argument(args, fn: str, name: str):
    """PyTorch's TypeError for a call of ``fn(*args)`` that lacks its required ``name`` (sizes, dims)."""
    if not args:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "{name}"')


def normalize_dim(x: Tensor, dim: int) -> int:
    """``dim`` counted from 0 (a 0-d tensor has dim 0 and -1), with PyTorch's IndexError."""
    return x._dim(dim) if x.ndim else 0


def broadcast_shapes(*shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        # trailing dims first, and the dim is counted in the result, as PyTorch reports it
        for i in reversed(range(len(s))):
            d, j = s[i], ndim - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise RuntimeError(f"The size of tensor a ({out[j]}) must match the size of tensor b "
                                   f"({d}) at non-singleton dimension {j}")
    return tuple(out)


def scalar_dtype(x) -> _dtype.dtype:
    if isinstance(x, bool):
        return _dtype.bool
    if isinstance(x, numbers.Integral):
        return _dtype.int64
    if isinstance(x, numbers.Real):
        return _dtype.get_default_dtype()
    raise TypeError(f"unsupported operand type: {type(x).__name__}")


_NUMBER_CATEGORY = {bool: 0, int: 1, float: 2}  # Python numbers' categories (as _dtype.category's)


def result_type(*operands) -> _dtype.dtype:
    """torch.result_type: dimensioned tensors outrank 0-d tensors, which outrank Python numbers; a
    lower-ranked operand only matters when it is of a higher category (bool < int < float)."""
    same, numbers_category = None, -1
    for o in operands:  # the common case first: tensors of one dtype, and numbers of no higher category
        if isinstance(o, Tensor):
            if same is not None and o._data.dtype is not same:
                break
            same = o._data.dtype
        else:
            c = _NUMBER_CATEGORY.get(type(o))
            if c is None:
                break
            numbers_category = max(numbers_category, c)
    else:
        if same is not None:
            d = _dtype._BY_TORCH[same]
            if numbers_category <= _dtype.category(d):
                return d
    groups = ([o.dtype for o in operands if isinstance(o, Tensor) and o.ndim > 0],
              [o.dtype for o in operands if isinstance(o, Tensor) and o.ndim == 0],
              [scalar_dtype(o) for o in operands if not isinstance(o, Tensor)])
    result = None
    for group in groups:
        if not group:
            continue
        g = group[0]
        for d in group[1:]:
            g = _dtype.promote(g, d)
        if result is None or _dtype.category(g) > _dtype.category(result):
            result = g
    return result


def as_operand(x, like: Tensor, dtype=None) -> Tensor:
    """A Python number as a 0-d tensor on ``like``'s device (torch fills it; no kernel needed)."""
    if isinstance(x, Tensor):
        return x
    dt = dtype or result_type(like, x)
    return wrap(torch.full((), x, dtype=dt.torch, device=like.device))


_CONSTANTS: dict = {}  # (type, value, torch dtype, device) -> a 0-d tensor holding it, never written


def constant(x, dtype: _dtype.dtype, device) -> Tensor:
    """A Python number as a 0-d tensor that an unrecorded op only reads: one per value, dtype and
    device, kept (a recorded op saves its operands for backward, where a user could write them:
    it takes ``as_operand``'s fresh tensor)."""
    key = (type(x), x, dtype.torch, device)
    t = _CONSTANTS.get(key)
    if t is None:
        t = wrap(torch.full((), x, dtype=dtype.torch, device=device))  # the wrapper kept too: read only
        if x == x and x != 0:  # a NaN key never matches; 0.0 and -0.0 are equal keys, not equal values
            if len(_CONSTANTS) > 1024:
                _CONSTANTS.clear()
            _CONSTANTS[key] = t
    return t


def sum_to_shape(grad: Tensor, shape) -> Tensor:
    """Sum ``grad`` over the dims that broadcasting expanded, giving a tensor of ``shape``.
    The only place in tgrad where broadcast gradients are reduced."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1)
    out = grad.sum(dim=dims, keepdim=True) if dims else grad
    return out.reshape(shape)


def legacy_scalar_first(name: str, signature: str, modern: str, scalar, tensors):
    """PyTorch's deprecated overloads that take the scalar first (``add_(alpha, other)``,
    ``addcmul_(value, t1, t2)``, ``torch.add(input, alpha, other)``): PyTorch's warning, then the
    tensors and the scalar in today's order."""
    if not isinstance(scalar, numbers.Number) or isinstance(scalar, bool) or \
            not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}() received an invalid combination of arguments: expected {modern}")
    if name not in _LEGACY_WARNED:  # once per overload and process, as PyTorch's warning
        _LEGACY_WARNED.add(name)
        warnings.warn(f"This overload of {name} is deprecated:\n\t{name}({signature})\nConsider using one of the "
                      f"following signatures instead:\n\t{name}({modern})", UserWarning, stacklevel=3)
    return tensors, scalar


_LEGACY_WARNED: set = set()


def dense_order(data: torch.Tensor):
    """The dims of torch tensor ``data`` from outermost to innermost in memory, if its elements are
    a permutation of a contiguous block; else None (``views.storage_order`` of a tgrad tensor)."""
    order = tuple(sorted(range(data.dim()), key=lambda d: (-data.stride(d), d)))
    return order if data.permute(order).is_contiguous() else None
