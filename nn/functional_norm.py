"""``rms_norm``, ``group_norm`` and ``instance_norm`` with PyTorch's signatures, on the fused row
kernels of ``kernels/rms_group_norm.py`` (one launch forward; backward one launch plus a per-channel
sum for each of dw and db). Under create_graph the backward differentiates the same norm written
with tgrad ops (``_composed``), so higher orders are exact.
"""
from __future__ import annotations

import math
import numbers

import torch

import tgrad
from tgrad.autograd.function import BuiltinFunction
from tgrad.modes import enable_grad
from tgrad.kernels.normalization import rms_group_norm as KN
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

__all__ = ["rms_norm", "group_norm", "instance_norm"]


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
        need = ctx.needs_input_grad
        xd, mean, rstd = ctx.stats
        dx, dw, db = KN.norm_backward(xd, g._data.contiguous(), None if w is None else w._data.contiguous(), mean,
                                      rstd, groups, cpg, sp, center, need[0], need[1], need[2])
        return (wrap(dx) if need[0] else None, wrap(dw) if need[1] else None, wrap(db) if need[2] else None,
                None, None, None, None, None)

    @staticmethod
    def differentiable_backward(ctx, g):
        x2, w, b = ctx.saved_tensors
        groups, cpg, sp, eps, center = ctx.cfg
        need = ctx.needs_input_grad
        inputs = [(i, t) for i, t in enumerate((x2, w, b)) if need[i]]
        with enable_grad():
            y = _composed(x2, w, b, groups, cpg, sp, eps, center)
            found = tgrad.autograd.grad([y], [t for _, t in inputs], [g], create_graph=True, allow_unused=True)
        res = [None] * 8
        for (i, t), d in zip(inputs, found):
            res[i] = d if d is not None else tgrad.zeros_like(t)
        return tuple(res)


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
