"""Helpers shared by the distributions: broadcasting parameters, probability <-> logit maps."""
from __future__ import annotations

import numbers

import torch

import tgrad
from tgrad.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "probs_to_logits", "logits_to_probs", "sum_rightmost"]


def broadcast_all(*values):
    """Tensors and numbers broadcast to one shape (numbers become tensors of the tensors' dtype, or
    of the default dtype)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or Tensor, got {type(v)}")
    dtype = tensors[0].dtype if tensors else tgrad.get_default_dtype()
    device = tensors[0].device if tensors else None
    vals = [v if isinstance(v, Tensor) else tgrad.tensor(float(v), dtype=dtype, device=device) for v in values]
    shape = torch.broadcast_shapes(*(tuple(v.shape) for v in vals))
    return tuple(v if tuple(v.shape) == shape else v.expand(shape) for v in vals)


def _eps(dtype):
    return torch.finfo(dtype.torch).eps


def clamp_probs(probs):
    eps = _eps(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    return (p.log() - (1 - p).log()) if is_binary else p.log()


def logits_to_probs(logits, is_binary=False):
    return tgrad.sigmoid(logits) if is_binary else tgrad.softmax(logits, -1)


def sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.ndim - dim]) + (-1,)).sum(-1)
