"""``autocast``, as ``torch.autocast``: inside the block, the ops PyTorch lists run in a lower
precision (matmuls, linear, convolutions: their floating inputs cast to the autocast dtype) or in
float32 (losses and the other ops PyTorch keeps in float32), per device type and per thread.

Ops ask ``cast_inputs(policy, device, *tensors)`` at their entry; ``policy`` is ``"lower"`` or
``"fp32"``; float64 inputs are never cast, as in PyTorch. CPU autocast to bfloat16 (PyTorch's CPU
default) is refused: tgrad's CPU kernels run in Triton's interpreter, which cannot compute bfloat16.
"""
from __future__ import annotations

import copy
import functools
import threading
import warnings

import torch as _torch

from .. import _dtype

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype",
           "is_autocast_available", "cast_inputs", "autocast_policy"]

_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
_SUPPORTED = {"cpu": (_dtype.bfloat16, _dtype.float16), "cuda": (_dtype.float16, _dtype.bfloat16)}
_state = threading.local()  # PyTorch's autocast state is per thread too
_entered = [0]  # autocast blocks entered in any thread: while 0, ops skip the per-thread lookup


def _states():
    if not hasattr(_state, "by_device"):
        _state.by_device = {d: [False, dt] for d, dt in _DEFAULT_DTYPES.items()}
    return _state.by_device


def is_autocast_available(device_type: str) -> bool:
    return device_type in _DEFAULT_DTYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    return _states()["cuda" if device_type is None else device_type][0]


def get_autocast_dtype(device_type: str):
    return _states()[device_type][1]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    _states()[device_type][0] = bool(enabled)


def set_autocast_dtype(device_type: str, dtype) -> None:
    _states()[device_type][1] = _dtype.as_dtype(dtype)


def _refuse_cpu_bfloat16():
    raise RuntimeError("autocast on the CPU to bfloat16 cannot run in tgrad: its CPU kernels run in Triton's "
                       "interpreter, which cannot compute bfloat16. Use autocast('cpu', dtype=torch.float16), "
                       "enabled=False, or autocast on a CUDA device.")


class autocast:
    """Context manager and decorator: ``with autocast("cuda"): ...``, ``@autocast("cpu", dtype=...)``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _torch.device(device_type)  # PyTorch's RuntimeError for a string that names no device
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else _dtype.as_dtype(dtype)
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if enabled and device_type == "cuda" and not _torch.cuda.is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            enabled = False
        if enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            name = device_type.upper()
            kinds = ", ".join(f"{_dtype.NAMESPACE}.{d.name}" for d in _SUPPORTED[device_type])
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtypes of {kinds} currently.", stacklevel=2)
            enabled = False
        if enabled and device_type == "cpu" and self.fast_dtype is _dtype.bfloat16:
            _refuse_cpu_bfloat16()
        self._enabled = bool(enabled)

    def __enter__(self):
        state = _states()[self.device]
        self._prev = list(state)
        state[0], state[1] = self._enabled, self.fast_dtype if self._enabled else state[1]
        _entered[0] += 1
        return self

    def __exit__(self, *exc):
        _states()[self.device][:] = self._prev
        _entered[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with copy.copy(self):  # a copy per call: nested or recursive calls keep their own saved state
                return fn(*args, **kwargs)
        return run


def cast_inputs(policy: str, *tensors):
    """The tensors an op computes with under the current autocast: unchanged when autocast is off
    for their device; else floating ones (not float64) cast to the autocast dtype (``"lower"``) or
    to float32 (``"fp32"``). Non-tensors pass through."""
    states = _states()
    out = []
    for t in tensors:
        device = getattr(t, "device", None) if hasattr(t, "is_floating_point") else None
        state = states.get(device.type) if device is not None else None
        if state is not None and state[0] and t.is_floating_point() and t.dtype is not _dtype.float64:
            target = state[1] if policy == "lower" else _dtype.float32
            if t.dtype is not target:
                t = t.to(target)
        out.append(t)
    return out


_BANNED = ("torch.nn.functional.{name} and torch.nn.BCELoss are unsafe to autocast.\nMany models use a sigmoid "
           "layer right before the binary cross entropy layer.\nIn this case, combine the two layers using "
           "torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  "
           "binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")


def autocast_policy(cpu: str | None = None, cuda: str | None = None):
    """Decorator for an op on PyTorch's autocast lists: under autocast on a device, its tensor
    arguments are cast as that device's policy says (``"lower"`` or ``"fp32"``; ``"banned"``
    raises PyTorch's error; None: untouched)."""
    policies = {"cpu": cpu, "cuda": cuda}

    def wrap(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if not _entered[0]:
                return fn(*args, **kwargs)
            device = next((a.device.type for a in (*args, *kwargs.values()) if hasattr(a, "is_floating_point")),
                          None)
            policy = policies.get(device)
            if policy is None or not _states()[device][0]:
                return fn(*args, **kwargs)
            if policy == "banned":
                raise RuntimeError(_BANNED.format(name=fn.__name__))
            args = cast_inputs(policy, *args)
            kwargs = dict(zip(kwargs, cast_inputs(policy, *kwargs.values())))
            return fn(*args, **kwargs)
        return op
    return wrap
