"""More of ``torch.nn.functional``, composed from tgrad ops (each a kernel, so autograd and
higher-order gradients come with them): activations (``prelu``, ``mish``, ``hardswish``, ``glu``,
``softmin``, ``gumbel_softmax``), distances (``normalize``, ``cosine_similarity``,
``pairwise_distance``) and losses (``kl_div``, ``cosine_embedding_loss``, ``margin_ranking_loss``,
``triplet_margin_loss``, ``gaussian_nll_loss``, ``poisson_nll_loss``), with PyTorch's formulas,
argument checks and legacy ``size_average``/``reduce`` handling.

``mish`` and ``hardswish`` use ``tgrad.mish``/``tgrad.hardswish`` when the core has them (one fused
pointwise kernel) and the composition otherwise.
"""
from __future__ import annotations

import math
import warnings

import tgrad
from tgrad.tensor import Tensor
from .functional_loss import _reduction

__all__ = ["softsign", "tanhshrink", "prelu", "glu", "softmin", "gumbel_softmax", "normalize", "cosine_similarity",
           "pairwise_distance", "kl_div", "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
           "gaussian_nll_loss", "poisson_nll_loss"]


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# ----------------------------------------------------------------------------- activations

def softsign(input):  # noqa: A002
    """x / (1 + |x|), composed as PyTorch composes it (so its gradients at +-inf are PyTorch's NaN)."""
    return input / (input.abs() + 1)


def tanhshrink(input):  # noqa: A002
    """x - tanh x, composed as PyTorch composes it."""
    return input - input.tanh()


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


# ----------------------------------------------------------------------------- distances

def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps) along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    result = input / denom
    if out is not None:
        out.copy_(result)
        return out
    return result


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim`` (broadcasting x1, x2)."""
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    last = max(x1.dim(), x2.dim()) - 1
    if last < 0:
        return (x1 - x2 + eps).abs() if p != 0 else ((x1 - x2 + eps) != 0).to(x1.dtype)
    return (x1 - x2 + eps).norm(p, last, keepdim=keepdim)


# ----------------------------------------------------------------------------- losses

def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input), input being log-probabilities; 'batchmean' divides the sum by
    the batch size (the KL divergence), 'mean' by the number of elements (with PyTorch's warning)."""
    if not input.dtype.is_floating_point or not target.dtype.is_floating_point:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if size_average is not None or reduce is not None:
        reduction = _reduction("mean", size_average, reduce)
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
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target = 1, max(0, cos(x1, x2) - margin) where target = -1."""
    reduction = _reduction(reduction, size_average, reduce)
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
    return _reduce(pos + neg, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target (x1 - x2) + margin)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0.0), reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d the pairwise distance (``swap``: d(a, n) replaced by
    d(p, n) where smaller)."""
    reduction = _reduction(reduction, size_average, reduce)
    a, pos, neg = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pos == neg):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pos}D, and negative {neg}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = tgrad.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp(min=0.0), reduction)


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
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - target x (log_input) or x - target log(x + eps), plus Stirling's term for
    target > 1 when ``full``."""
    reduction = _reduction(reduction, size_average, reduce)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = tgrad.where(target > 1, target, tgrad.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + stirling.masked_fill(target <= 1, 0.0)
    return _reduce(loss, reduction)
