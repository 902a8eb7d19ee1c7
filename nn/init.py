"""``nn.init``: in-place initialisation with PyTorch's distributions and formulas.

Random fills run the Philox kernels of ``tgrad.kernels.random.philox`` straight into the tensor's storage
(through its strides) and advance the generator by the counters they used, so ``tgrad.manual_seed``
makes every initialisation reproducible; constants are ``tgrad.kernels.factories.fill``. The numbers
differ from torch's (a different generator) but the distributions are the same:

    uniform_(a, b): U[a, b)                       normal_(mean, std): N(mean, std^2)
    xavier_uniform_: U[-g sqrt(6 / (fan_in + fan_out)), +...]   xavier_normal_: N(0, 2 g^2 / (fan_in + fan_out))
    kaiming_uniform_: U[-g sqrt(3 / fan), +...]   kaiming_normal_: N(0, g^2 / fan)
    trunc_normal_: N(mean, std^2) conditioned on [a, b] (rejection sampling, as PyTorch)

with ``g = calculate_gain(nonlinearity, a)``, ``fan_in = size(1) * receptive field``,
``fan_out = size(0) * receptive field``.
"""
from __future__ import annotations

import math
import warnings

import tgrad
from tgrad.kernels import factories as KF
from tgrad.kernels.random import philox as KR
from tgrad.ops.random import default_generator

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "orthogonal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def _written(tensor):
    tensor._version.value += 1  # an in-place write, as PyTorch counts it
    return tensor


def _fill_random(fill, tensor, generator, *args):
    gen = generator or default_generator
    offset = gen.take(KR.counters_for(tensor.numel()))
    fill(tensor._data, gen.initial_seed(), offset, *args, state=gen.graph_state)
    return _written(tensor)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _fill_random(KR.fill_uniform, tensor, generator, float(a), float(b))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _fill_random(KR.fill_normal, tensor, generator, float(mean), float(std))


def constant_(tensor, val):
    KF.fill(tensor._data, val)
    return _written(tensor)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    KF.eye(tensor._data)
    return _written(tensor)


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (the trailing dims flattened): Q of the QR of a N(0, 1) draw, its
    columns' signs fixed by R's diagonal (PyTorch's recipe), times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor  # no-op
    rows, cols = tensor.shape[0], tensor.numel() // tensor.shape[0]
    with tgrad.no_grad():
        flat = normal_(tgrad.empty(rows, cols, dtype=tensor.dtype, device=tensor.device), 0.0, 1.0, generator)
        if rows < cols:
            flat = flat.T
        q, r = tgrad.linalg.qr(flat)
        q = q * tgrad.diagonal(r, 0).sign()
        if rows < cols:
            q = q.T
        tensor.copy_(q.reshape(tensor.shape) * gain)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) restricted to [a, b]: while any value lies outside, redraw those values
    (PyTorch's rejection loop; each round is a few kernels over the whole tensor)."""
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    if tensor.numel() == 0:
        return tensor
    with tgrad.no_grad():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            # propose from the normal itself, keep what falls in [a, b]
            result = normal_(tgrad.empty_like(tensor), mean, std, generator)
            while True:
                outside = (result < a).logical_or(result > b)
                if not outside.any().item():
                    break
                result = tgrad.where(outside, normal_(tgrad.empty_like(tensor), mean, std, generator), result)
        else:
            # a narrow window: propose uniformly on [a, b], accept with the normal density over its peak
            peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
            result = uniform_(tgrad.empty_like(tensor), a, b, generator)
            pending = None
            while True:
                log_ratio = ((result - mean) / std) ** 2 * -0.5 - peak
                reject = uniform_(tgrad.empty_like(tensor), 0.0, 1.0, generator).log() > log_ratio
                pending = reject if pending is None else pending.logical_and(reject)
                if not pending.any().item():
                    break
                result = tgrad.where(pending, uniform_(tgrad.empty_like(tensor), a, b, generator), result)
        tensor.copy_(result)
    return tensor
