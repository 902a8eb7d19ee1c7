"""``GradScaler``, as ``torch.amp.GradScaler``: loss scaling for low-precision training.

The loss is multiplied by ``scale`` before ``backward()``; ``unscale_`` divides the gradients back
and records whether any is inf or NaN (one reduction kernel a gradient); ``step`` skips the
optimizer's step when one was; ``update`` backs the scale off after a skipped step and grows it
after ``growth_interval`` clean ones. The scale and tracker are host numbers here (PyTorch keeps
device tensors to avoid a sync; tgrad reads the inf check back either way).
"""
from __future__ import annotations

import math
import warnings
from collections import defaultdict

import numpy as np
import torch as _torch

from .. import _dtype
from ..modes import no_grad
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState:
    READY, UNSCALED, STEPPED = 0, 1, 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf": None}


def _f32(value) -> float:
    return float(np.float32(value))


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device, self._enabled = device, enabled
        if device == "cuda" and enabled and not _torch.cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            # set by the first scale(), as PyTorch's lazily made tensors
            self._init_scale, self._init_growth_tracker = _f32(init_scale), 0
            self._scale = self._growth_tracker = None
            self._growth_factor, self._backoff_factor = growth_factor, backoff_factor
            self._growth_interval = growth_interval
            self._per_optimizer_states = defaultdict(_fresh_state)

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple/iterable of them) times the scale."""
        if not self._enabled:
            return outputs
        if self._scale is None:
            self._scale, self._growth_tracker = self._init_scale, self._init_growth_tracker
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, noting any inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = _f32(1.0 / self._scale)
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    p.grad.mul_(inv_scale)
                    found_inf = found_inf or not bool(p.grad.isfinite().all())
        state["found_inf"], state["stage"] = found_inf, OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the gradients held an inf or NaN; returns what it returned."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        retval = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` clean ones (or set ``new_scale``)."""
        if not self._enabled:
            return
        self._check_scale("update")
        if new_scale is not None:
            if not isinstance(new_scale, float):
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                new_scale = new_scale.item()
            self._scale = _f32(new_scale)
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found):
                self._scale, self._growth_tracker = _f32(self._scale * self._backoff_factor), 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _f32(self._scale * self._growth_factor)
                self._scale = grown if math.isfinite(grown) else self._scale
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _check_scale(self, funcname):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale, self._init_growth_tracker = _f32(state_dict["scale"]), state_dict["_growth_tracker"]
        if self._scale is not None:
            self._scale, self._growth_tracker = self._init_scale, self._init_growth_tracker
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"], state["_init_growth_tracker"] = self.get_scale(), self._get_growth_tracker()
            state["_scale"] = state["_growth_tracker"] = state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_state)
