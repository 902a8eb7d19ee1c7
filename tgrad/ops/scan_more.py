"""Distances, products, scans, order statistics, integration and construction composed from core
ops (each a kernel); their gradients are the composition's.

- ``cummax``/``cummin`` along a dim of size n: the (n, n) lower triangle of x (the rest filled
  with the dtype's lowest/highest value) gives the running extreme; its index is the last j <= i
  holding it (after a NaN: the latest NaN's, as PyTorch); values are ``gather``ed at the indices,
  so the gradient goes to those entries only (as PyTorch's scatter of the gradient).
- ``logcumsumexp``: ``logsumexp`` over the same triangle (-inf above it): stable, its gradient
  softmax-weighted.
- ``kthvalue``: a stable sort, the k-th index, values ``gather``ed there.
- ``cross``: roll(a, -1) roll(b, -2) - roll(a, -2) roll(b, -1) along the dim of size 3.
- ``renorm``: each slice scaled by maxnorm / (norm + 1e-7) where its p-norm exceeds maxnorm.
- ``trapezoid``: sum((y[1:] + y[:-1]) / 2 * dx); ``cumulative_trapezoid`` its running sum.
"""
from __future__ import annotations

import builtins
import math
import warnings

import torch

from .. import _dtype
from .. import return_types
from ..tensor import Tensor
from . import advanced, arrange, factories, matmul, random, reduce, shape
from .composed_more import in_place
from .elementwise import where
from .products import _scaled
from .registry import op, register


def _dim(x, dim):
    return x._dim(dim)


# ----------------------------------------------------------------------------- distances and products

@op("dist")
def dist(input, other, p=2):  # noqa: A002
    return reduce.norm(input - other, p)


@op("renorm")
def renorm(input, p, dim, maxnorm):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got {input.dtype.scalar_type}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _dim(input, dim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norm = reduce.norm(input, p, others, True) if others else input.abs()
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


@op("addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    if input.dtype is _dtype.bool and not (isinstance(beta, bool) or beta in (0, 1)):
        raise RuntimeError("Boolean beta only supported for Boolean results.")
    return _scaled(input, beta) + _scaled(matmul.outer(vec1, vec2), alpha)


in_place("addr_", addr, function=False)
in_place("renorm_", renorm, function=False)


def _broadcast(a, b):
    return torch.broadcast_shapes(tuple(a), tuple(b))


def _cross_dim(a, b, dim, name):
    if a.ndim != b.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape_ = _broadcast(a.shape, b.shape)
    if dim is None:
        dim = next((i for i, s in enumerate(shape_) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                      "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                      "agree with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
    nd = len(shape_)
    if not -nd <= dim < builtins.max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    sa = a.shape[a.ndim - nd + d] if a.ndim - nd + d >= 0 else 1
    sb = b.shape[b.ndim - nd + d] if b.ndim - nd + d >= 0 else 1
    if sa != 3 or sb != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got {sa} and {sb}")
    return shape_, d


def cross_along(input, other, dim, name):
    shape_, d = _cross_dim(input, other, dim, name)
    a, b = input.expand(*shape_), other.expand(*shape_)
    return arrange.roll(a, -1, d) * arrange.roll(b, -2, d) - arrange.roll(a, -2, d) * arrange.roll(b, -1, d)


@op("cross")
def cross(input, other, dim=None):  # noqa: A002
    return cross_along(input, other, dim, "linalg.cross")


# ----------------------------------------------------------------------------- scans and order statistics

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
    return getattr(return_types, name)(advanced.gather(x, d, idx), idx)


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
    return reduce.logsumexp(tri, d + 1)


@op("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    d = _dim(input, dim)
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    x = input if input.ndim else shape.reshape(input, (1,))
    idx = shape.narrow(advanced.argsort(x.detach(), d, stable=True), d, k - 1, 1)
    values = advanced.gather(x, d, idx)
    if not keepdim or input.ndim == 0:
        values, idx = shape.squeeze(values, d), shape.squeeze(idx, d)
    if input.ndim == 0:
        values, idx = shape.reshape(values, ()), shape.reshape(idx, ())
    return return_types.kthvalue(values, idx)


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


# ----------------------------------------------------------------------------- construction

def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    exps = random.linspace(start, end, steps, dtype=_dtype.float64, device=device)
    out = (base ** exps).to(dtype or _dtype.get_default_dtype())
    return out.requires_grad_(requires_grad) if requires_grad else out


def _tri_indices(row, col, offset, upper, dtype, device):
    r = shape.unsqueeze(random.arange(row, device=device), 1)
    c = shape.unsqueeze(random.arange(col, device=device), 0)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    return shape.t(advanced.nonzero(keep)).to(dtype).contiguous()


def triu_indices(row, col, offset=0, *, dtype=_dtype.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, True, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=_dtype.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, False, dtype, device)


def cartesian_prod(*tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = arrange.meshgrid(*tensors, indexing="ij")
    return shape.stack([shape.reshape(g, (-1,)) for g in grids], 1)


def block_diag(*tensors):
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return factories.zeros((0, 0))
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _dtype.promote(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [factories.zeros((r, left), dtype=dtype, device=b.device), b.to(dtype),
                 factories.zeros((r, width - left - c), dtype=dtype, device=b.device)]
        rows.append(shape.cat(parts, 1))
        left += c
    return shape.cat(rows, 0)


for _f in (logspace, triu_indices, tril_indices, cartesian_prod, block_diag):
    register(_f, _f.__name__, method=False)
