"""Scans composed from reductions (each a kernel), their gradients the composition's (``cumsum``
and ``cumprod``, on the scan kernel, are in ``arrange.py``):

- ``cummax``/``cummin`` along a dim of size n: the (n, n) lower triangle of x (the rest filled
  with the dtype's lowest/highest value) gives the running extreme; its index is the last j <= i
  holding it (after a NaN: the latest NaN's, as PyTorch); values are ``gather``ed at the indices,
  so the gradient goes to those entries only (as PyTorch's scatter of the gradient).
- ``logcumsumexp``: ``logsumexp`` over the same triangle (-inf above it): stable, its gradient
  softmax-weighted.
- ``trapezoid``: sum((y[1:] + y[:-1]) / 2 * dx); ``cumulative_trapezoid`` its running sum.
"""
from __future__ import annotations

import math

import torch

from .. import _dtype
from .. import return_types
from ..tensor import Tensor
from . import arrange, factories, random, reduce, shape
from .elementwise import where
from .gather_scatter import gather
from .registry import op
from .softmax import logsumexp


def _dim(x, dim):
    return x._dim(dim)


def _triangle(input, d, fill):
    """(..., n_i, n_j, ...) with x[j] at j <= i and ``fill`` above: row i sees the prefix x[:i+1]."""
    n = input.shape[d]
    i = random.arange(n, device=input.device)
    keep = shape.unsqueeze(i, 1) >= shape.unsqueeze(i, 0)   # (n_i, n_j)
    keep = keep.reshape(*keep.shape, *([1] * (input.ndim - d - 1)))
    xe = shape.unsqueeze(input, d)                            # (..., 1, n_j, ...)
    return where(keep, xe, fill), keep


def _cumextreme(name, input, dim, largest):
    d = _dim(input, dim)
    if input.ndim == 0 or input.numel() == 0:
        idx = factories.zeros(input.shape, dtype=_dtype.int64, device=input.device)
        return getattr(return_types, name)(input.clone() if input.ndim == 0 else input * 1, idx)
    x = input if input.ndim else shape.reshape(input, (1,))
    if x.dtype is _dtype.bool:
        fill = not largest
    elif x.dtype.is_floating_point:
        fill = -math.inf if largest else math.inf
    else:
        info = torch.iinfo(x.dtype.torch)
        fill = info.min if largest else info.max
    xd = x.detach()
    tri, keep = _triangle(xd, d, fill)
    ext = reduce.amax(tri, d + 1, True) if largest else reduce.amin(tri, d + 1, True)
    hit = (tri == ext).logical_and(keep)
    if xd.dtype.is_floating_point:
        hit = hit.logical_or(tri.isnan().logical_and(ext.isnan()))
    pos = random.arange(x.shape[d], device=x.device).reshape(x.shape[d], *([1] * (x.ndim - d - 1)))
    idx = reduce.amax(where(hit, pos, -1), d + 1)
    if x.dtype.is_floating_point:  # once a NaN is met, the index is that of the latest NaN (PyTorch's)
        last_nan = reduce.amax(where(tri.isnan(), pos, -1), d + 1)
        idx = where(last_nan >= 0, last_nan, idx)
    return getattr(return_types, name)(gather(x, d, idx), idx)


@op("cummax")
def cummax(input, dim):  # noqa: A002
    return _cumextreme("cummax", input, dim, True)


@op("cummin")
def cummin(input, dim):  # noqa: A002
    return _cumextreme("cummin", input, dim, False)


@op("logcumsumexp")
def logcumsumexp(input, dim):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{input.dtype.scalar_type}'")
    if input.ndim == 0 or input.numel() == 0:
        _dim(input, dim)
        return input * 1
    d = _dim(input, dim)
    tri, _ = _triangle(input, d, -math.inf)
    return logsumexp(tri, d + 1)


# ----------------------------------------------------------------------------- integration

def _trapezoid_args(y, x, dx, dim):
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx both given")
    return _dim(y, dim)


def _segments(y, x, dx, d):
    n = y.shape[d]
    y = y if y.dtype.is_floating_point else y.to(_dtype.get_default_dtype())
    mid = (shape.narrow(y, d, 1, n - 1) + shape.narrow(y, d, 0, n - 1)) * 0.5
    if x is None:
        return mid * (1 if dx is None else dx)
    if isinstance(x, Tensor):
        if x.ndim == 1:
            if x.shape[0] != n:
                raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
            step = arrange.diff(x).reshape(-1, *([1] * (y.ndim - d - 1)))
        else:
            step = arrange.diff(x, dim=d - y.ndim)
        return mid * step
    return mid * x


@op("trapezoid", method=False)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    d = _trapezoid_args(y, x, dx, dim)
    if y.shape[d] == 0:
        return reduce.sum(_float_zero(y), d)
    return reduce.sum(_segments(y, x, dx, d), d)


def _float_zero(y):
    return y * 0 if y.dtype.is_floating_point else y.to(_dtype.get_default_dtype()) * 0


@op("cumulative_trapezoid", method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    d = _trapezoid_args(y, x, dx, dim)
    if y.shape[d] == 0:
        return _float_zero(y)
    return arrange.cumsum(_segments(y, x, dx, d), d)
