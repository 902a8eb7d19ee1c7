"""Dropout: ``dropout`` zeroes elements, ``dropout1d`` / ``dropout2d`` / ``dropout3d`` whole channels;
``alpha_dropout`` / ``feature_alpha_dropout`` set elements (channels) to SELU's negative saturation.

- ``dropout``: y = x * keep / (1 - p) with a Philox keep-mask drawn from (seed, offset) and drawn
  again in the backward, never stored (``kernels/dropout.py``); the backward is the same masked
  scaling of g, itself the Function, so every order of derivative is that one kernel.
- The channel dropouts scale x by a per-(n, c) keep mask drawn with ``tgrad.rand`` on a
  (N, C, 1, ...) shape, a MulBackward0 node as in PyTorch.
- The alpha dropouts: y = x * keep * a + b, with a and b (PyTorch's) keeping zero mean and unit
  variance of a SELU-normalised input; the keep mask drawn with ``tgrad.rand`` as above.
"""
from __future__ import annotations

import math
import numbers
import warnings

import tgrad
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.random import dropout as KD
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.inplace import write_inplace
from tgrad.ops.random import default_generator

from .arguments import check_tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


class _Dropout(BuiltinFunction):
    """y = x * keep / (1 - p), keep regenerated from (seed, offset) in the backward."""
    node_name = "NativeDropoutBackward0"

    @staticmethod
    def forward(ctx, x, p, seed, offset, state):
        check_runnable(x)
        ctx.cfg = (p, seed, offset, state)  # state: the graph's (seed, base) tensor when captured
        return wrap(KD.dropout(x._data, p, seed, offset, state))

    @staticmethod
    def backward(ctx, g):
        p, seed, offset, state = ctx.cfg
        # linear in g: the same masked scaling, itself a Function (recorded under create_graph)
        return _Dropout.apply(g, p, seed, offset, state), None, None, None, None


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (when training)."""
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:  # nothing is kept: PyTorch multiplies by zero (a MulBackward0 node)
        return input.mul_(0.0) if inplace else input * 0.0
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"dropout expects a floating point input, got {input.dtype}")
    seed, offset = default_generator._seed, default_generator.take(KD.counters_for(input.numel()))
    state = default_generator.graph_state
    if inplace:
        return write_inplace(input, lambda t: _Dropout.apply(t, float(p), seed, offset, state))
    return _Dropout.apply(input, float(p), seed, offset, state)


def _check_p(p):
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, lead):
    """A Bernoulli(1 - p) keep mask, one draw per index of the ``lead`` leading dims, broadcast over the rest."""
    shape = tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)
    return tgrad.rand(*shape, dtype=input.dtype, device=input.device) < 1.0 - p


def _channel_dropout(input, p, training, inplace, batched):
    """x * keep[n, c] / (1 - p), one Bernoulli(1 - p) draw per (sample, channel)."""
    _check_p(p)
    if not training or p == 0:
        return input
    keep = _keep_mask(input, p, 2 if batched else 1)
    mask = keep.to(input.dtype) * (1.0 / (1.0 - p)) if p < 1 else keep.to(input.dtype)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) with probability p, scale the rest by 1/(1-p)."""
    check_tensor(input, "input", "dropout1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           f"dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           f"channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, input.ndim == 3)


def _warn_rank(input, spatial):
    """PyTorch's deprecation warning for a dropout{spatial}d input of another rank than spatial + 1 or + 2."""
    if input.ndim not in (spatial + 1, spatial + 2):
        warnings.warn(f"dropout{spatial}d: Received a {input.ndim}-D input to dropout{spatial}d, which is deprecated "
                      f"and will result in an error in a future release. To retain the behavior and silence this "
                      f"warning, please use dropout instead. Note that dropout{spatial}d exists to provide "
                      f"channel-wise dropout on inputs with {spatial} spatial dimensions, a channel dimension, and an "
                      f"optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) or (C, H, W) with probability p, scale the rest by 1/(1-p).
    A 3-d input is taken as (N, C, L), with PyTorch's warning."""
    check_tensor(input, "input", "dropout2d")
    _warn_rank(input, 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability p, scale the rest by 1/(1-p)."""
    check_tensor(input, "input", "dropout3d")
    _warn_rank(input, 3)
    return _channel_dropout(input, p, training, inplace, input.ndim == 5)


_SELU_ALPHA = 1.7580993408473766  # -SELU's negative saturation value (scale * alpha)


def _alpha_dropout(input, p, training, inplace, feature):
    """x * keep * a + b: kept elements a x + alpha a p, dropped ones alpha a (p - 1) (PyTorch's a, b)."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0.0) if inplace else input * 0.0
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    keep = _keep_mask(input, p, 2 if feature else input.ndim).to(input.dtype)
    a = 1.0 / math.sqrt((_SELU_ALPHA ** 2 * p + 1) * (1 - p))
    b = (keep - 1.0) * (_SELU_ALPHA * a) + _SELU_ALPHA * a * p
    return input.mul_(keep * a).add_(b) if inplace else input * (keep * a) + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: each element set to SELU's negative saturation with probability p,
    then all scaled and shifted to keep zero mean and unit variance (when training)."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels: one draw per (sample, channel)."""
    return _alpha_dropout(input, p, training, inplace, True)
