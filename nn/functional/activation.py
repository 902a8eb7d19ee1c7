"""Activations and the softmax family of ``torch.nn.functional``.

The core's op table has the activations PyTorch keeps in torch.nn.functional (silu, elu, hardtanh,
mish, ...: each with ``inplace=``, gathered here from ``NN_FUNCTIONAL``); the functions below are
the core ops' own twins and the activations composed from core ops (each a kernel, so autograd and
higher-order gradients come with them):

- ``threshold(x, t, v)`` = v where x <= t, else x (NaN is kept: NaN <= t is false);
  ``hardshrink(x, l)`` = 0 where -l <= x <= l, else x; ``softshrink(x, l)`` = x - clamp(x, -l, l).
- ``softsign``, ``tanhshrink``, ``prelu``, ``glu``, ``softmin``, ``gumbel_softmax`` with PyTorch's
  formulas and argument checks.
- ``rrelu``: x times a slope drawn from U(lower, upper) per element where x <= 0 (training), the
  leaky ReLU of slope (lower + upper) / 2 otherwise.
"""
from __future__ import annotations

import warnings

import tgrad
from tgrad import ops
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.ops.registry import NN_FUNCTIONAL
from tgrad.tensor import Tensor

__all__ = ["relu", "relu_", "gelu", "tanh", "sigmoid", "softmax", "log_softmax", "threshold", "threshold_",
           "hardshrink", "softshrink", "softsign", "tanhshrink", "prelu", "glu", "softmin", "gumbel_softmax",
           "rrelu", "rrelu_", *NN_FUNCTIONAL]

# the core's activations (silu, elu, hardtanh, mish, ...) under their nn.functional names; a function
# defined below (softshrink) takes the name over
globals().update(NN_FUNCTIONAL)


def relu(input, inplace=False):
    return input.relu_() if inplace else tgrad.relu(input)


def relu_(input):
    return input.relu_()


def gelu(input, approximate="none"):
    return tgrad.gelu(input, approximate)


def tanh(input):
    return tgrad.tanh(input)


def sigmoid(input):
    return tgrad.sigmoid(input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@autocast_policy(cuda='fp32')
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return ops.softmax(input, dim, dtype=dtype)


@autocast_policy(cuda='fp32')
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ops.log_softmax(input, dim, dtype=dtype)


# ----------------------------------------------------------------------------- threshold and shrink

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


def softsign(input):  # noqa: A002
    """x / (1 + |x|), composed as PyTorch composes it (so its gradients at +-inf are PyTorch's NaN)."""
    return input / (input.abs() + 1)


def tanhshrink(input):  # noqa: A002
    """x - tanh x, composed as PyTorch composes it."""
    return input - input.tanh()


@autocast_policy(cpu='lower', cuda='lower')
def prelu(input, weight):
    """x for x > 0, else weight * x, the weight per channel (dim 1) or shared."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"prelu_cpu" not implemented for \'{input.dtype.scalar_type}\'')
    channels = input.shape[1] if input.dim() >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels}.")
    if weight.numel() != 1 and input.dim() >= 2:
        weight = weight.reshape((1, channels) + (1,) * (input.dim() - 2))
    elif weight.numel() == 1:
        weight = weight.reshape(())
    return tgrad.where(input > 0, input, weight * input)


def glu(input, dim=-1):
    """a * sigmoid(b) for the two halves a, b of ``input`` along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size {size}")
    a, b = input.chunk(2, dim)
    return a * tgrad.sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x)."""
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the call to include dim=X "
                      "as an argument.", UserWarning, stacklevel=_stacklevel)
        dim = 0 if input.dim() in (0, 1, 3) else 1
    x = -input if dtype is None else (-input).to(dtype)
    return x.softmax(dim)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g = -log(E), E ~ Exp(1) drawn with
    tgrad's Philox generator; ``hard``: the one-hot of its argmax in the forward pass, the soft
    sample's gradient in the backward (straight through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning, stacklevel=2)
    if not logits.dtype.is_floating_point:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {logits.dtype.scalar_type}")
    u = tgrad.rand_like(logits)
    gumbels = -((-(1.0 - u).log()).log())  # E = -log(1 - U) > 0 for U in [0, 1)
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim)
    moved = y_soft.movedim(dim, -1)
    one_hot = (tgrad.arange(moved.shape[-1], device=logits.device) == index.unsqueeze(-1)).to(logits.dtype)
    y_hard = one_hot.movedim(-1, dim)
    return y_hard - y_soft.detach() + y_soft


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: y = x where x > 0, else a x with a ~ U(lower, upper) per element when
    training, a = (lower + upper) / 2 otherwise."""
    _tensor_arg("rrelu", input)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        slope = (lower + upper) / 2
        return tgrad.leaky_relu_(input, slope) if inplace else tgrad.leaky_relu(input, slope)
    noise = ops.rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    slope = ops.where(input <= 0, noise, ops.ones_like(noise))
    return input.mul_(slope) if inplace else input * slope


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """``rrelu`` in place."""
    return rrelu(input, lower, upper, training, inplace=True)
