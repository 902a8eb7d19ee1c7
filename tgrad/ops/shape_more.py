"""Shape, selection, scan and construction functions composed from core ops (each a kernel);
their gradients are the composition's.

- ``tensor_split``/``hsplit``/``vsplit``/``dsplit``: views (``narrow``) at the split points.
- ``cummax``/``cummin`` along a dim of size n: the (n, n) lower triangle of x (the rest filled
  with the dtype's lowest/highest value) gives the running extreme; its index is the last j <= i
  holding it (NaN counts as the extreme, as in PyTorch); values are ``gather``ed at the indices,
  so the gradient goes to those entries only (as PyTorch's scatter of the gradient).
- ``logcumsumexp``: ``logsumexp`` over the same triangle (-inf above it): stable, its gradient
  softmax-weighted.
- ``kthvalue``: a stable sort, the k-th index, values ``gather``ed there.
- ``cross``: roll(a, -1) roll(b, -2) - roll(a, -2) roll(b, -1) along the dim of size 3.
- ``trapezoid``: sum((y[1:] + y[:-1]) / 2 * dx); ``cumulative_trapezoid`` its running sum.
"""
from __future__ import annotations

import builtins
import math
import warnings

import torch

from .. import _dtype
from .. import return_types
from ..modes import is_grad_enabled
from ..tensor import Tensor
from . import advanced, arrange, factories, matmul, random, reduce, shape, views
from .elementwise import where
from .composed_more import in_place
from .products import _scaled
from .registry import FUNCTIONS, op, register


def _dim(x, dim):
    return x._dim(dim)


# ----------------------------------------------------------------------------- aliases and views

@op("ravel")
def ravel(input):  # noqa: A002
    return shape.reshape(input, (-1,))


register(shape.swapaxes, "swapdims")
register(shape.movedim, "moveaxis")
register(matmul.outer, "ger")
register(matmul.vdot, "vdot", function=False)


@op("tensor_split")
def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    d = _dim(input, dim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dtype.is_floating_point or indices_or_sections.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {indices_or_sections.ndim} dims")
        v = indices_or_sections.tolist()
        indices_or_sections = v if isinstance(v, list) else builtins.int(v)
    if isinstance(indices_or_sections, builtins.int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        small, extra = divmod(n, sections)
        bounds = [i * small + builtins.min(i, extra) for i in range(sections + 1)]
    else:
        bounds = [0] + [builtins.min(builtins.max(i + n if i < 0 else i, 0), n) for i in indices_or_sections] + [n]
    return tuple(shape.narrow(input, d, a, builtins.max(b - a, 0)) if b > a else
                 shape.narrow(input, d, builtins.min(a, n), 0) for a, b in zip(bounds[:-1], bounds[1:]))


def _split_along(name, input, indices_or_sections, dim, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.ndim} dimensions!")
    if isinstance(indices_or_sections, builtins.int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


@op("hsplit")
def hsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


@op("vsplit")
def vsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@op("dsplit")
def dsplit(input, indices_or_sections):  # noqa: A002
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def _inplace_view(self, view):
    """``self`` takes the geometry (and, if recorded, the history) of ``view``, a view of itself:
    PyTorch's t_(), transpose_(), squeeze_() and unsqueeze_()."""
    if self._requires_grad and self._grad_fn is None and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    self._data = view._data
    if view._grad_fn is not None:
        self._grad_fn, self._output_nr = view._grad_fn, view._output_nr
    self._vc.value += 1
    return self


@op("t_", function=False)
def t_(self):
    return _inplace_view(self, shape.t(self))


@op("transpose_", "swapdims_", "swapaxes_", function=False)
def transpose_(self, dim0, dim1):
    return _inplace_view(self, shape.transpose(self, dim0, dim1))


@op("squeeze_", function=False)
def squeeze_(self, dim=None):
    return _inplace_view(self, shape.squeeze(self, dim))


@op("unsqueeze_", function=False)
def unsqueeze_(self, dim):
    return _inplace_view(self, shape.unsqueeze(self, dim))


@op("msort")
def msort(input):  # noqa: A002
    return advanced.sort(input, 0)[0]


@op("rot90")
def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = _dim(input, dims[0]), _dim(input, dims[1])
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return shape.transpose(arrange.flip(input, (d1,)), d0, d1)
    if k == 2:
        return arrange.flip(input, (d0, d1))
    if k == 3:
        return shape.transpose(arrange.flip(input, (d0,)), d0, d1)
    return input.clone()


@op("take")
def take(input, index):  # noqa: A002
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.scalar_type}")
    n = input.numel()
    if index.numel():
        lo, hi = builtins.int(reduce.amin(index, ()).item()), builtins.int(reduce.amax(index, ()).item())
        bad = hi if hi >= n else lo if lo < -n else None
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return shape.reshape(input, (-1,))[index]


def _overlaps(size, stride):
    """True when two indices of the strided geometry reach one storage element."""
    reach = 0
    for n, st in sorted(((n, builtins.abs(st)) for n, st in zip(size, stride) if n > 1), key=lambda p: p[1]):
        if st <= reach:
            return True
        reach += (n - 1) * st
    return False


@op("as_strided")
def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of ``input``'s storage (PyTorch's geometry: strides and offset in storage elements).
    Overlapping windows (a sliding window) of a contiguous tensor are gathered instead: a copy whose
    gradient sums over the windows, as PyTorch's as_strided backward does."""
    size, stride = tuple(builtins.int(n) for n in size), tuple(builtins.int(st) for st in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: {list(size)}")
    if builtins.any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    start = input._data.storage_offset()
    offset = start if storage_offset is None else builtins.int(storage_offset)
    last = offset + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if builtins.all(size) else offset
    storage = input._data.untyped_storage().nbytes() // input._data.element_size()
    if builtins.all(size) and last >= storage:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {input._data.element_size()} requiring a storage size of "
                           f"{(last + 1) * input._data.element_size()} are out of bounds for storage of size "
                           f"{storage * input._data.element_size()}")
    if not _overlaps(size, stride):
        return views.AsStrided.apply(input, size, stride, offset - start)
    if not input._data.is_contiguous() or offset < start:
        raise NotImplementedError("tgrad: as_strided with overlapping windows needs a contiguous input and an "
                                  "offset inside it (call .contiguous() first)")
    index = factories.full(size, offset - start, dtype=_dtype.int64, device=input.device)
    for d, (n, st) in enumerate(zip(size, stride)):
        index = index + random.arange(n, device=input.device).reshape(n, *([1] * (len(size) - d - 1))) * st
    flat = shape.reshape(input, (-1,))
    if builtins.all(size) and last - start >= flat.shape[0]:
        raise NotImplementedError("tgrad: as_strided with overlapping windows beyond the input's own elements")
    return flat[index]


@op("diagflat")
def diagflat(input, offset=0):  # noqa: A002
    return arrange.diag(shape.reshape(input, (-1,)), offset)


# ----------------------------------------------------------------------------- distances and products

@op("dist")
def dist(input, other, p=2):  # noqa: A002
    return reduce.norm(input - other, p)


@op("renorm")
def renorm(input, p, dim, maxnorm):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got {input.dtype.scalar_type}")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported")
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
            raise RuntimeError(f"no dimension of size 3 in input")
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
                raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point")
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
