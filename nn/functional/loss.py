"""The losses of ``tgrad.nn.functional`` but cross-entropy and nll (``nll.py``), and the
``reduction`` arguments all of them take (with PyTorch's legacy ``size_average``/``reduce``).

- ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``,
  ``binary_cross_entropy_with_logits``: elementwise, broadcast by strides, each one fused forward
  launch (loss and reduction together) and one fused backward launch; the formulas are in
  ``kernels/losses.py``.
- ``kl_div``, ``cosine_embedding_loss``, ``margin_ranking_loss``, ``triplet_margin_loss``,
  ``gaussian_nll_loss``, ``poisson_nll_loss``: composed from tgrad ops with PyTorch's formulas and
  argument checks.
"""
from __future__ import annotations

import math
import warnings

import tgrad
from tgrad import _dtype
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import fused_backward
from tgrad.kernels.losses import elementwise as KL
from tgrad.ops.common import broadcast_shapes, check_runnable, result_type, wrap
from tgrad.ops.formula import traced_backward

from .distance import pairwise_distance

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss", "margin_ranking_loss",
           "triplet_margin_loss", "gaussian_nll_loss", "poisson_nll_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def reduction_of(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:  # the legacy flags, as torch maps them
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      f"{legacy_reduction(size_average, reduce)}' instead.", UserWarning, stacklevel=3)
        return legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def legacy_reduction(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def apply_reduction(loss, reduction):
    """A composed loss's elementwise values reduced as ``reduction`` says."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- elementwise losses


class _Pointwise(BuiltinFunction):
    """loss(x, y) elementwise (optionally weighted), then reduced; one launch each way."""
    mode = None
    edge_args = (0, 1)

    @classmethod
    def forward(cls, ctx, x, y, weight, pos_weight, param, reduction):
        dtype = result_type(x, y)
        data = [None if t is None else t._data for t in (x, y, weight, pos_weight)]
        loss, n_bad = KL.loss_forward(cls.mode, *data, param=param, reduction=reduction,
                                      out_dtype=dtype.torch)
        if n_bad:
            raise RuntimeError("all elements of input should be between 0 and 1")
        ctx.cfg = (param, reduction)
        ctx.save_for_backward(x, y, weight, pos_weight)
        return wrap(loss)

    @classmethod
    def backward(cls, ctx, g):
        x, y, w, q = ctx.saved_tensors
        param, reduction = ctx.cfg
        need = ctx.needs_input_grad[:2]

        def kernel(g, x, y, w, q):
            data = [None if t is None else t._data for t in (x, y, w, q)]
            dx, dy = KL.loss_backward(cls.mode, *data[:2], g._data, *data[2:], param, reduction, need_dx=need[0],
                                      need_dy=need[1])
            return wrap(dx) if need[0] else None, wrap(dy) if need[1] else None

        def recorded(g, x, y, w, q):  # the kernel's derivative formula, traced on Tensors
            if reduction == "mean":
                g = g / float(math.prod(broadcast_shapes(*(t.shape for t in (x, y, w, q) if t is not None))))
            if w is not None:
                g = g * w
            return traced_backward(KL.LOSSES[cls.mode].backward, (x, y, 1.0 if q is None else q), g,
                                   (param, param), zero_edges=True)

        return fused_backward(ctx, kernel, recorded, g, x, y, w, q) + (None,) * 4


def _pointwise_class(mode, node, no_grad_args=None):
    return type(f"_{mode}", (_Pointwise,), {"mode": mode, "node_name": node, "no_grad_args": no_grad_args})


_MSE = _pointwise_class("mse", "MseLossBackward0")
_L1 = _pointwise_class("l1", "L1LossBackward0")
_SMOOTH_L1 = _pointwise_class("smooth_l1", "SmoothL1LossBackward0")
_SMOOTH_L1_AT_0 = type("_smooth_l1", (_L1,), {"node_name": "SmoothL1LossBackward0"})  # beta = 0 is l1
_HUBER = _pointwise_class("huber", "HuberLossBackward0")
_BCE = _pointwise_class("bce", "BinaryCrossEntropyBackward0", ("binary_cross_entropy", {2: "weight"}))
_BCE_LOGITS = _pointwise_class("bce_logits", "BinaryCrossEntropyWithLogitsBackward0",
                               ("binary_cross_entropy_with_logits", {2: "weight", 3: "pos_weight"}))


def _regression(cls, name, input, target, reduction, param=0.0):
    check_runnable(input, target)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=3)
        broadcast_shapes(input.shape, target.shape)
    dtype = result_type(input, target)
    if not dtype.is_floating_point:
        if name in _NO_INTEGER_KERNEL:  # PyTorch's kernel refuses them; l1_loss's mean() does
            raise NotImplementedError(f'"{_NO_INTEGER_KERNEL[name]}" not implemented for \'{dtype.scalar_type}\'')
        if dtype is _dtype.bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                               "or `logical_xor()` operator instead.")
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {dtype.scalar_type}")
    return cls.apply(input, target, None, None, float(param), reduction)


_NO_INTEGER_KERNEL = {"mse_loss": "mse_cpu", "smooth_l1_loss": "smooth_l1_cpu", "huber_loss": "huber_cpu"}


@autocast_policy(cpu='fp32', cuda='fp32')
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean/sum/none of (input - target)^2."""
    if weight is not None:
        raise NotImplementedError("tgrad's mse_loss takes no weight")
    return _regression(_MSE, "mse_loss", input, target, reduction_of(reduction, size_average, reduce))


@autocast_policy(cpu='fp32', cuda='fp32')
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean/sum/none of |input - target|."""
    if weight is not None:
        raise NotImplementedError("tgrad's l1_loss takes no weight")
    return _regression(_L1, "l1_loss", input, target, reduction_of(reduction, size_average, reduce))


@autocast_policy(cpu='fp32', cuda='fp32')
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """d^2 / (2 beta) where |d| < beta, |d| - beta / 2 elsewhere (d = input - target)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _regression(_SMOOTH_L1 if beta else _SMOOTH_L1_AT_0, "smooth_l1_loss", input, target,
                       reduction_of(reduction, size_average, reduce), beta)


@autocast_policy(cpu='fp32', cuda='fp32')
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """d^2 / 2 where |d| < delta, delta (|d| - delta / 2) elsewhere."""
    if weight is not None:
        raise NotImplementedError("tgrad's huber_loss takes no weight")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _regression(_HUBER, "huber_loss", input, target, reduction_of(reduction), delta)


@autocast_policy(cpu='fp32', cuda='banned')
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)) with each log clamped to >= -100."""
    reduction = reduction_of(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    check_runnable(input, target, weight)
    if weight is not None:
        broadcast_shapes(input.shape, weight.shape)
    return _BCE.apply(input, target, weight, None, 0.0, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """w ((1 - y) x + (1 + (q - 1) y) log(1 + e^-x)), computed stably (q = pos_weight)."""
    reduction = reduction_of(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    check_runnable(input, target, weight, pos_weight)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{input.dtype.scalar_type}\'')
    for t in (weight, pos_weight):
        if t is not None:
            broadcast_shapes(input.shape, t.shape)
    return _BCE_LOGITS.apply(input, target, weight, pos_weight, 0.0, reduction)


# ----------------------------------------------------------------------------- composed losses

@autocast_policy(cpu='fp32', cuda='fp32')
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input), input being log-probabilities; 'batchmean' divides the sum by
    the batch size (the KL divergence), 'mean' by the number of elements (with PyTorch's warning)."""
    if not input.dtype.is_floating_point or not target.dtype.is_floating_point:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if size_average is not None or reduce is not None:
        reduction = reduction_of("mean", size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    elif reduction not in ("batchmean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # xlogy(t, t) - t x: 0 where t = 0
        safe = tgrad.where(target == 0, tgrad.ones_like(target), target)
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() != 0 else loss.sum()
    return apply_reduction(loss, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target = 1, max(0, cos(x1, x2) - margin) where target = -1."""
    reduction = reduction_of(reduction, size_average, reduce)
    dim = input1.dim()
    if dim not in (1, 2) or target.dim() != dim - 1:
        raise RuntimeError(f"{dim - 1}D target tensor expects {dim}D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}." if dim in (1, 2) else
                           "0D or 1D target tensor expected, multi-target not supported")
    axis = dim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(axis)
    mag1 = (input1 * input1).sum(axis) + eps
    mag2 = (input2 * input2).sum(axis) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = tgrad.zeros_like(cos)
    pos = tgrad.where(target == 1, 1 - cos, zeros)
    neg = tgrad.where(target == -1, (cos - margin).clamp(min=0.0), zeros)
    return apply_reduction(pos + neg, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target (x1 - x2) + margin)."""
    reduction = reduction_of(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return apply_reduction((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise distance (``swap``: d(a, n) replaced by
    d(p, n) where smaller)."""
    reduction = reduction_of(reduction, size_average, reduce)
    a, pos, neg = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pos == neg):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pos}D, and negative {neg}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = tgrad.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return apply_reduction((margin + d_pos - d_neg).clamp(min=0.0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log max(var, eps) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 when ``full``);
    the clamp passes gradients through unchanged, as PyTorch's in-place clamp under no_grad does."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = tgrad.full_like(input, float(var))
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):  # one variance per sample (last dim dropped)
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:  # homoscedastic
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with tgrad.no_grad():
        if bool((var < 0).any()):
            raise ValueError("var has negative entry/entries")
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return apply_reduction(loss, reduction)


@autocast_policy(cpu='fp32', cuda='fp32')
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - target x (log_input) or x - target log(x + eps), plus Stirling's term for
    target > 1 when ``full``."""
    reduction = reduction_of(reduction, size_average, reduce)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = tgrad.where(target > 1, target, tgrad.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + stirling.masked_fill(target <= 1, 0.0)
    return apply_reduction(loss, reduction)
