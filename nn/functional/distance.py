"""Distances of ``torch.nn.functional``, composed from tgrad ops (each a kernel, so autograd and
higher-order gradients come with them): ``normalize``, ``cosine_similarity``, ``pairwise_distance``."""
from __future__ import annotations

__all__ = ["normalize", "cosine_similarity", "pairwise_distance"]


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
