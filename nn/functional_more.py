"""Shrink and threshold activations of ``torch.nn.functional``, composed from core ops (each a
kernel): their values and gradients are those of ``masked_fill`` and ``clamp``.

- ``threshold(x, t, v)`` = v where x <= t, else x (NaN is kept: NaN <= t is false);
  d/dx = 0 where x <= t, else 1.
- ``hardshrink(x, l)`` = 0 where -l <= x <= l, else x; d/dx = 0 inside, 1 outside (and at NaN).
- ``softshrink(x, l)`` = x - clamp(x, -l, l): x - l above l, x + l below -l, 0 between;
  d/dx = 1 - clamp' = 0 on [-l, l], 1 outside.
"""
from __future__ import annotations

import tgrad
from tgrad.ops.registry import NN_FUNCTIONAL
from tgrad.tensor import Tensor

__all__ = ["threshold", "threshold_", "hardshrink", "softshrink"]


def _tensor_arg(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def threshold(input, threshold, value, inplace=False):
    """y = value where input <= threshold, else input."""
    _tensor_arg("threshold", input)
    return tgrad.threshold_(input, threshold, value) if inplace else tgrad.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    _tensor_arg("threshold_", input)
    return tgrad.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5):
    """y = 0 where -lambd <= input <= lambd, else input."""
    _tensor_arg("hardshrink", input)
    return tgrad.hardshrink(input, lambd)


def softshrink(input, lambd=0.5):
    """y = input - clamp(input, -lambd, lambd)."""
    _tensor_arg("softshrink", input)
    return NN_FUNCTIONAL["softshrink"](input, lambd)
