"""Exact equality of a tgrad tensor with a torch tensor, for what must match bit for bit (factories,
casts, conversions): ``support.reference`` compares within a tolerance instead."""
import torch

import tgrad


def same(t, ref: torch.Tensor):
    """tgrad tensor ``t`` equals torch tensor ``ref`` exactly: dtype, shape and every value."""
    assert isinstance(t, tgrad.Tensor), type(t)
    assert t.dtype.torch == ref.dtype, (t.dtype, ref.dtype)
    assert tuple(t.shape) == tuple(ref.shape), (t.shape, ref.shape)
    assert torch.equal(t.torch().cpu(), ref.cpu()), (t.torch(), ref)
