"""Normalisation: ``layer_norm``, ``batch_norm``, ``rms_norm``, ``group_norm`` and ``instance_norm``
with PyTorch's signatures, each one fused forward launch and one fused backward launch.

- ``layer_norm``: row mean/rstd in fp32, saved; dx with dw/db as deterministic per-program
  partial sums (``kernels/layer_norm.py``).
- ``batch_norm``: per channel (dim 1), batch statistics in training (running ones updated in place)
  or the running ones in eval (``kernels/batch_norm.py``).
- ``rms_norm``, ``group_norm`` (and ``instance_norm``, a group norm with one channel per group): the
  fused row kernels of ``kernels/rms_group_norm.py``.
- ``local_response_norm``: composed from tgrad ops (PyTorch composes it from an average pool over
  channels; here the ``size`` shifted slices of the zero-padded squares are summed).
"""
from __future__ import annotations

import math
import numbers

import torch

import tgrad
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import composed_grads, fused_backward
from tgrad.kernels.normalization import batch_norm as BN
from tgrad.kernels.normalization import layer_norm as KLN
from tgrad.kernels.normalization import rms_group_norm as KN
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

from .arguments import check_tensor, float_only

__all__ = ["layer_norm", "batch_norm", "rms_norm", "group_norm", "instance_norm", "local_response_norm"]


class _LayerNorm(BuiltinFunction):
    node_name = "NativeLayerNormBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, weight, bias, normalized_shape, eps):
        D = math.prod(normalized_shape)
        M_ = math.prod(x.shape[:x.ndim - len(normalized_shape)])
        y, mean, rstd = KLN.layer_norm_forward(
            x._data.reshape(M_, D), None if weight is None else weight._data.reshape(D),
            None if bias is None else bias._data.reshape(D), eps)
        ctx.stats, ctx.meta = (mean, rstd), (normalized_shape, eps, M_, D)
        ctx.save_for_backward(x, weight, bias)
        return wrap(y.view(x.shape))

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        shape, eps, M_, D = ctx.meta
        need = ctx.needs_input_grad[:3]
        mean, rstd = ctx.stats

        def kernel(g, x, w, b):
            wb = w if w is not None else b
            dx, dw, db = KLN.layer_norm_backward(
                x._data.reshape(M_, D), g._data.reshape(M_, D), None if w is None else w._data.reshape(D), mean,
                rstd, need_dx=need[0], need_wb=need[1] or need[2], wb_dtype=None if wb is None else wb._data.dtype)
            return (wrap(dx.view(x.shape)) if need[0] else None, wrap(dw.view(shape)) if need[1] else None,
                    wrap(db.view(shape)) if need[2] else None)

        def composed(x, w, b):
            return _composed(x.reshape(M_, D), None if w is None else w.reshape(D), None if b is None else b.reshape(D),
                             1, D, 1, eps, True).reshape(x.shape)

        def recorded(g, x, w, b):
            return composed_grads(composed, (x, w, b), need, (g,))

        return fused_backward(ctx, kernel, recorded, g, x, w, b, depends=((0, 1, 2), (0, 1), (0,))) + (None, None)


@autocast_policy(cuda='fp32')
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims: (x - mean) / sqrt(var + eps) * w + b,
    var the biased variance."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else \
        tuple(int(s) for s in normalized_shape)
    check_runnable(input, weight, bias)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(t.shape)} and normalized_shape = {list(shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for \'{input.dtype.scalar_type}\'')
    return _LayerNorm.apply(input, weight, bias, shape, float(eps))


# ----------------------------------------------------------------------------- batch_norm

class BatchNorm(BuiltinFunction):
    """Batch normalisation over dim 1; see kernels/batch_norm.py for the formulas."""
    node_name = "NativeBatchNormBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        check_runnable(x, weight, bias, running_mean, running_var)
        # per-channel vectors of any shape holding C elements are read as (C,) views
        data = [x._data] + [None if t is None else t._data.view(-1)
                            for t in (weight, bias, running_mean, running_var)]
        y, mean, rstd = BN.batch_norm_forward(*data, training, momentum, eps)
        ctx.stats, ctx.eps = (mean, rstd, training), eps
        ctx.vec_meta = [None if t is None else (t._data.shape, t._data.dtype) for t in (weight, bias)]
        ctx.save_for_backward(x, weight)
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        mean, rstd, training = ctx.stats
        eps, need = ctx.eps, ctx.needs_input_grad[:3]
        (w_shape, w_dtype), (b_shape, b_dtype) = [(None, None) if v is None else v for v in ctx.vec_meta]

        def kernel(g, x, w):
            dx, dw, db = BN.batch_norm_backward(x._data, g._data, None if w is None else w._data.view(-1), mean,
                                                rstd, training, need[0], need[1] or need[2], w_dtype, b_dtype)
            return (wrap(dx) if need[0] else None, wrap(dw.view(w_shape)) if need[1] else None,
                    wrap(db.view(b_shape)) if need[2] else None)

        def recorded(g, x, w):
            # b (not saved) only shifts y: a zero stand-in of its shape and dtype gives db = sum g
            b = wrap(torch.zeros(b_shape, dtype=b_dtype, device=x._data.device)).requires_grad_() if need[2] else None
            return composed_grads(lambda x, w, b: _batch_norm_ops(x, w, b, mean, rstd, training, eps), (x, w, b),
                                  need, (g,))

        # (in eval dx = w rstd g is recorded with an edge to x, of undefined derivative, as PyTorch's)
        return fused_backward(ctx, kernel, recorded, g, x, weight) + (None,) * 5


def _batch_norm_ops(x, w, b, mean, rstd, training, eps):
    """The same normalisation from tgrad ops: per channel c (dim 1), the batch's statistics in
    training (they depend on x), the running ones (``mean``, ``rstd``: constants) in eval."""
    dims = (0,) + tuple(range(2, x.ndim))
    chan = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        xc = x - x.mean(dims, keepdim=True)
        y = xc * ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    else:
        y = (x - wrap(mean).to(x.dtype).reshape(chan)) * wrap(rstd).to(x.dtype).reshape(chan)
    if w is not None:
        y = y * w.reshape(chan)
    if b is not None:
        y = y + b.reshape(chan)
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """y = (x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1) of x (N, C, *). Training
    uses the batch's mean and biased variance and, when running stats are given, updates them in place:
    r <- (1 - momentum) r + momentum * stat, with the unbiased variance; eval uses the running stats."""
    check_tensor(input, "input", "batch_norm")
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(f"batch_norm(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    if input.ndim < 2:
        raise RuntimeError(f"batch_norm: expected an input of 2 or more dims (N, C, *), but got input of size "
                           f"{list(input.shape)}")
    C = input.shape[1]
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if training:
        per_channel = input.shape[0] * math.prod(input.shape[2:])
        if per_channel <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"tgrad.Size({list(input.shape)})")
    elif running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None:
            check_tensor(t, name, "batch_norm")
            if t.numel() != C:
                raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    float_only(input, "batch_norm")  # after the shape checks, as PyTorch
    return BatchNorm.apply(input, weight, bias, running_mean, running_var, bool(training), float(momentum),
                           float(eps))

# ----------------------------------------------------------------------------- rms_norm, group_norm, instance_norm

def _composed(x2, w, b, groups, cpg, sp, eps, center):
    """The same normalisation from tgrad ops, x2 (M, D)."""
    M, D = x2.shape
    if center:
        mu = x2.mean(1, keepdim=True)
        xc = x2 - mu
    else:
        xc = x2
    y = xc * ((xc * xc).mean(1, keepdim=True) + eps).rsqrt()
    if w is not None or b is not None:
        y = y.reshape(M // groups, groups * cpg, sp)
        if w is not None:
            y = y * w.reshape(groups * cpg, 1)
        if b is not None:
            y = y + b.reshape(groups * cpg, 1)
        y = y.reshape(M, D)
    return y


class _RowNorm(BuiltinFunction):
    @staticmethod
    def forward(ctx, x2, w, b, groups, cpg, sp, eps, center):
        check_runnable(x2, w, b)
        xd = x2._data.contiguous()
        y, mean, rstd = KN.norm_forward(xd, None if w is None else w._data.contiguous(),
                                        None if b is None else b._data.contiguous(), groups, cpg, sp, eps, center)
        ctx.cfg = (groups, cpg, sp, eps, center)
        ctx.stats = (xd, mean, rstd)
        ctx.save_for_backward(x2, w, b)
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        x2, w, b = ctx.saved_tensors
        groups, cpg, sp, eps, center = ctx.cfg
        need = ctx.needs_input_grad[:3]
        xd, mean, rstd = ctx.stats

        def kernel(g, x2, w, b):
            dx, dw, db = KN.norm_backward(xd, g._data.contiguous(), None if w is None else w._data.contiguous(), mean,
                                          rstd, groups, cpg, sp, center, need[0], need[1], need[2])
            return wrap(dx) if need[0] else None, wrap(dw) if need[1] else None, wrap(db) if need[2] else None

        def recorded(g, x2, w, b):
            return composed_grads(lambda x2, w, b: _composed(x2, w, b, groups, cpg, sp, eps, center), (x2, w, b),
                                  need, (g,))

        return fused_backward(ctx, kernel, recorded, g, x2, w, b, depends=((0, 1, 2), (0, 1), (0,))) + (None,) * 5


class _RMSNorm(_RowNorm):
    node_name = "RmsNormBackward0"


class _GroupNorm(_RowNorm):
    node_name = "NativeGroupNormBackward0"


def _check(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:  # PyTorch's kernels' names
        kernel = {"group_norm": "GroupNormKernelImpl", "instance_norm": "batch_norm"}.get(fn, fn)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type}\'')


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2 over the trailing ``normalized_shape``) + eps) * weight; eps defaults to
    the machine epsilon of x's dtype."""
    _check(input, "rms_norm")
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (int(normalized_shape),)
    shape = tuple(normalized_shape)
    k = len(shape)
    if k == 0 or tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, "
                           f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(shape)}")
    if eps is None:
        eps = torch.finfo(input.dtype.torch).eps
    D = math.prod(shape)
    M = input.numel() // D if D else 0
    x2 = input.reshape(M, D)
    y = _RMSNorm.apply(x2, None if weight is None else weight.reshape(D), None, 1, D, 1, float(eps), False)
    return y.reshape(*input.shape)


@autocast_policy(cuda='fp32')
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of the ``num_groups`` channel groups of each sample of x (N, C, *) over its
    channels and positions, then scale and shift per channel."""
    _check(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    N, C = input.shape[0], input.shape[1]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    sp = input.numel() // (N * C) if N * C else 0
    cpg = C // num_groups
    x2 = input.reshape(N * num_groups, cpg * sp)
    y = _GroupNorm.apply(x2, weight, bias, num_groups, cpg, sp, float(eps), True)
    return y.reshape(*input.shape)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Per-sample, per-channel normalisation of x (N, C, *) over its positions; with
    ``use_input_stats`` False, the running statistics instead."""
    _check(input, "instance_norm")
    N, C = input.shape[0], input.shape[1]
    shape = (1, C) + (1,) * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        y = (input - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        return y
    sp = input.numel() // (N * C) if N * C else 0
    if sp <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    y = group_norm(input, C, weight, bias, eps)
    if running_mean is not None or running_var is not None:
        with tgrad.no_grad():
            x3 = input.detach().reshape(N, C, sp)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(x3.mean((0, 2)) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(x3.var(2, correction=1).mean(0) * momentum)
    return y


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over the ``size`` channels around each one)^beta, the
    window reaching size // 2 channels back and (size - 1) // 2 ahead, zero-padded."""
    check_tensor(input, "input", "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {input.ndim} "
                         "dimensions)")
    if input.numel() == 0:
        return input
    sq = input * input
    C = input.shape[1]
    pad = [tgrad.zeros(*((input.shape[0], n) + tuple(input.shape[2:])), dtype=input.dtype, device=input.device)
           for n in (size // 2, (size - 1) // 2)]
    padded = tgrad.cat([pad[0], sq, pad[1]], 1)
    window = padded.narrow(1, 0, C)
    for i in range(1, size):
        window = window + padded.narrow(1, i, C)
    return input / (window * (alpha / size) + k) ** beta
