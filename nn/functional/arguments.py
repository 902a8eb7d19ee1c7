"""Argument checks shared by the functional ops, with PyTorch's exception types and messages."""
from __future__ import annotations

from tgrad import _dtype
from tgrad.tensor import Tensor


def pair(value, what, message):
    """(a, b) from an int or a sequence of 1 or 2 ints; ``message`` when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) in (1, 2) and all(isinstance(v, int) for v in value):
        return (value[0], value[0]) if len(value) == 1 else tuple(value)
    raise RuntimeError(message.format(what=what, value=list(value) if isinstance(value, (tuple, list)) else value))


def check_tensor(x, name, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def float_only(x, fn):
    """PyTorch has no bool kernel for these (NotImplementedError); its integer convolutions and
    pools tgrad does not have (README)."""
    if x.dtype is _dtype.bool or fn == "batch_norm" and not x.dtype.is_floating_point:
        kernel = {"conv2d": "slow_conv2d_cpu", "conv1d": "slow_conv2d_cpu"}.get(fn, fn)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type}\'')
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{fn}: tgrad has floating point kernels only, got tgrad.{x.dtype.name}")
