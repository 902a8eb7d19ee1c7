"""The margin losses for classification: ``soft_margin_loss``, ``hinge_embedding_loss``,
``multi_margin_loss``, ``multilabel_margin_loss``, ``multilabel_soft_margin_loss``; composed from
tgrad ops (each a kernel) with PyTorch's formulas and argument checks, so every order of derivative
follows from the ops'."""
from __future__ import annotations

from tgrad import _dtype, ops
from tgrad.autograd.function import records
from tgrad.amp.autocast_mode import autocast_policy

from .activation import logsigmoid
from .loss import apply_reduction, reduction_of

__all__ = ["soft_margin_loss", "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss"]


@autocast_policy(cpu='fp32', cuda='fp32')
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x)) for targets y in {1, -1}."""
    reduction = reduction_of(reduction, size_average, reduce)
    if records(target):  # PyTorch refuses a target that would be recorded
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. "
                           "This input cannot have requires_grad True.")
    return apply_reduction((-target * input).exp().log1p(), reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y = 1, max(0, margin - x) where y = -1 (both terms where y is neither, as PyTorch)."""
    reduction = reduction_of(reduction, size_average, reduce)
    zeros = ops.zeros_like(input)
    loss = ops.where(target != 1, (margin - input).clamp(min=0.0), zeros) + ops.where(target != -1, input, zeros)
    return apply_reduction(loss, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Per sample, sum over classes i != y of w[y] max(0, margin - x[y] + x[i])^p, divided by the
    number of classes (p is 1 or 2)."""
    reduction = reduction_of(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim < 2 and input.numel() == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    N, C = x.shape
    if target.numel() != N or target.ndim > 1:
        raise RuntimeError("multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{N}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != C:
        raise RuntimeError(f"inconsistent weight size, expected {C} but got {list(weight.shape)}")
    t = target.reshape(N, 1).long()
    if N and bool(((t < 0) | (t >= C)).any()):
        raise RuntimeError("target out of range")
    z = (margin - x.gather(1, t) + x).clamp(min=0.0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[t]
    other = ops.ones_like(x).scatter(1, t, 0.0)  # the target class is left out of its sample's sum
    loss = (z * other).sum(1) / C
    return apply_reduction(loss.reshape(target.shape) if input.ndim < 2 else loss, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Per sample, sum over its target classes j (the target row up to its first -1) and its other
    classes i of max(0, 1 - (x[j] - x[i])), divided by the number of classes."""
    reduction = reduction_of(reduction, size_average, reduce)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim < 2 and input.numel() == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.scalar_type}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    t = target.reshape(x.shape)
    C = x.shape[1]
    if t.numel() and bool(((t < -1) | (t >= C)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    valid = (t >= 0).long().cumprod(1).to(x.dtype)  # 1 up to the first -1
    t = ops.where(valid > 0, t, ops.zeros_like(t))
    is_target = ops.zeros_like(x).scatter_add(1, t, valid) > 0
    pairs = (1.0 - x.gather(1, t).unsqueeze(2) + x.unsqueeze(1)).clamp(min=0.0)  # (N, target j, class i)
    loss = (pairs * valid.unsqueeze(2) * (~is_target).to(x.dtype).unsqueeze(1)).sum((1, 2)) / C
    return apply_reduction(loss.reshape(()) if input.ndim < 2 else loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), optionally weighted, averaged over the classes
    (the last dimension)."""
    if size_average is not None or reduce is not None:
        reduction = reduction_of(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[input.ndim - 1]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return apply_reduction(loss, reduction)
