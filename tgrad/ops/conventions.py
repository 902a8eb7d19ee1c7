"""PyTorch's calling conventions that every op shares, applied once to the registry: ``out=`` on
the functions (``tgrad.mul(a, b, out=c)``) and ``keepdims=`` as an alias of ``keepdim=``."""
from __future__ import annotations

import functools
import inspect
import warnings

from .. import _dtype
from ..autograd.function import records
from ..modes import no_grad
from ..tensor import Tensor
from . import registry


def _write_out(name, out, result):
    """``result`` copied into ``out`` (resized first if its shape differs, as PyTorch does)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if _dtype.category(result.dtype) > _dtype.category(out.dtype):
        raise RuntimeError(f"result type {result.dtype.scalar_type} can't be cast to the desired output "
                           f"type {out.dtype.scalar_type}")
    if tuple(out.shape) != tuple(result.shape):
        if out.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=4)
        out._data.resize_(tuple(result.shape))  # a storage op
    with no_grad():
        out.copy_(result)
    return out


def with_out(name, fn):
    @functools.wraps(fn)
    def op(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if records(*args, *kwargs.values(), *(out if isinstance(out, tuple) else (out,))):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                               "but one of the arguments requires grad.")
        result = fn(*args, **kwargs)
        if isinstance(result, tuple):
            if not isinstance(out, (tuple, list)) or len(out) != len(result):
                raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
            for o, r in zip(out, result):
                _write_out(name, o, r)
            return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
        return _write_out(name, out, result)
    return op


def with_keepdims(fn):
    @functools.wraps(fn)
    def op(*args, keepdims=None, **kwargs):
        if keepdims is not None:
            if "keepdim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both keepdim and its alias keepdims")
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)
    return op


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


def apply_to_registry():
    """Wrap every registered op once: keepdims where it takes keepdim, out= on the functions."""
    wrapped = {}
    for table in (registry.FUNCTIONS, registry.METHODS):
        for name, fn in list(table.items()):
            if not callable(fn) or isinstance(fn, type) or name.startswith("_"):
                continue
            if id(fn) not in wrapped:
                params = _parameters(fn)
                new = with_keepdims(fn) if "keepdim" in params and "keepdims" not in params else fn
                wrapped[id(fn)] = new
            table[name] = wrapped[id(fn)]
    for name, fn in list(registry.FUNCTIONS.items()):
        if callable(fn) and not isinstance(fn, type) and "out" not in _parameters(fn):
            registry.FUNCTIONS[name] = with_out(name, fn)
