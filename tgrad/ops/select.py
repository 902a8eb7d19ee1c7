"""Selection, counting, index updates and random draws composed from sort, gather, scatter,
index put and comparisons: topk, median, mode, quantile, searchsorted, bincount, histc,
index_add/copy/fill, scatter, masked_scatter, isclose/allclose, multinomial, bernoulli."""
from __future__ import annotations

import builtins
import math

import torch

from .. import _dtype, return_types
from ..autograd.function import BuiltinFunction, records
from ..tensor import Tensor
from . import factories, gather_scatter, joins, random, sorting
from .common import normalize_dim
from .elementwise import where
from .inplace import write_inplace
from .registry import op


# ----------------------------------------------------------------------------- comparisons

@op("isclose")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    close = input == other
    if input.dtype.is_floating_point or (isinstance(other, Tensor) and other.dtype.is_floating_point):
        diff = (input - other).abs()
        finite = diff.isfinite()
        close = close | (finite & (diff <= atol + rtol * (other.abs() if isinstance(other, Tensor) else abs(other))))
        if equal_nan:
            close = close | (input.isnan() & (other.isnan() if isinstance(other, Tensor) else math.isnan(other)))
    return close


@op("allclose")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


# ----------------------------------------------------------------------------- selection

@op("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    if input.dtype is _dtype.bool:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    d = normalize_dim(input, dim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = sorting.sort(input, d, descending=largest, stable=True)
    return return_types.topk(values.narrow(d, 0, k), indices.narrow(d, 0, k))


class _Median(BuiltinFunction):
    """The lower median of all elements (NaN if any is NaN); PyTorch's MedianBackward0 splits the
    gradient evenly between the entries equal to it (the NaNs, for NaN)."""
    node_name = "MedianBackward0"

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        values, _ = sorting.sort(flat, 0)  # NaN sorts last: the last value is NaN if any is
        last = values[flat.numel() - 1]
        v = where(last != last, last, values[(flat.numel() - 1) // 2])
        if x.dtype.is_floating_point:
            hit = ((x == v) | ((x != x) & (v != v))).to(x.dtype)
            ctx.share = hit / hit.sum()
        return v

    @staticmethod
    def backward(ctx, g):
        return g * ctx.share


@op("median")
def median(input, dim=None, keepdim=False):  # noqa: A002
    if input.dtype is _dtype.bool and dim is None:
        raise NotImplementedError('"median_cpu" not implemented for \'Bool\'')
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return factories.full((), math.nan, dtype=input.dtype, device=input.device)
        return _Median.apply(input)
    d = normalize_dim(input, dim)
    if input.dtype is _dtype.bool:
        raise NotImplementedError('"median_out" not implemented for \'Bool\'')
    values, indices = sorting.sort(input, d, stable=True)
    k = (input.shape[d] - 1) // 2
    v, i = values.narrow(d, k, 1), indices.narrow(d, k, 1)
    if input.dtype.is_floating_point and input.shape[d]:  # a slice with NaN: NaN at its first NaN
        nan = input != input
        first_nan = nan.to(_dtype.int64).argmax(d, keepdim=True)
        any_nan = nan.any(d, keepdim=True)
        i = where(any_nan, first_nan, i)
        v = gather_scatter.gather(input, d, i)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return return_types.median(v, i)


@op("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else normalize_dim(x, dim)
    scalar_q = not isinstance(q, Tensor)
    qs = factories.tensor([q] if scalar_q else q.tolist() if q.ndim else [q.item()], dtype=_dtype.float64)
    values, _ = sorting.sort(x, d)
    n = x.shape[d]
    outs = []
    for qv in qs.tolist():
        if not 0 <= qv <= 1:
            raise RuntimeError(f"quantile() q {'must' if scalar_q else 'values must'} be in the range [0, 1]"
                               f"{f' but got {q}' if scalar_q else ''}")
        pos = qv * (n - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        a, b = values.narrow(d, lo, 1), values.narrow(d, hi, 1)
        frac = pos - lo
        if interpolation == "linear":
            v = a + (b - a) * frac
        elif interpolation == "lower":
            v = a
        elif interpolation == "higher":
            v = b
        elif interpolation == "midpoint":
            v = a + (b - a) * 0.5
        elif interpolation == "nearest":
            v = values.narrow(d, builtins.round(pos) if pos - lo != 0.5 else (lo if lo % 2 == 0 else hi), 1)
        else:
            raise ValueError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                             f"Got {interpolation}")
        if dim is None:
            v = v.reshape(())
        elif not keepdim:
            v = v.squeeze(d)
        outs.append(v)
    return outs[0] if scalar_q or (isinstance(q, Tensor) and q.ndim == 0) else joins.stack(outs, 0)


@op("searchsorted", method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    right = right or side == "right"
    values = input if isinstance(input, Tensor) else factories.tensor(input, dtype=sorted_sequence.dtype)
    if sorter is not None:
        sorted_sequence = gather_scatter.gather(sorted_sequence, -1, sorter)
    seq = sorted_sequence.unsqueeze(-2)                    # (..., 1, n)
    v = values.unsqueeze(-1)                               # (..., m, 1)
    below = (seq <= v) if right else (seq < v)
    count = below.sum(-1)
    return count.to(_dtype.int32) if out_int32 else count


@op("bucketize", method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@op("count_nonzero")
def count_nonzero(input, dim=None):  # noqa: A002
    return (input != 0).sum(dim) if dim is not None else (input != 0).sum()


@op("argwhere")
def argwhere(input):  # noqa: A002
    return gather_scatter.nonzero(input)


@op("take_along_dim")
def take_along_dim(input, indices, dim=None):  # noqa: A002
    if dim is None:
        return gather_scatter.gather(input.reshape(-1), 0, indices.reshape(-1))
    d = normalize_dim(input, dim)
    shape_b = [builtins.max(a, b) if k != d else b for k, (a, b) in enumerate(zip(input.shape, indices.shape))]
    shape_x = [s if k == d else shape_b[k] for k, s in enumerate(input.shape)]
    return gather_scatter.gather(input.expand(*shape_x), d, indices.expand(*shape_b))


# ----------------------------------------------------------------------------- index updates

def _along(x: Tensor, dim: int, index: Tensor, like_shape):
    """An index tensor of ``like_shape`` that holds ``index`` along ``dim`` (index_add's 1-d index
    made scatter's full one)."""
    view = [1] * len(like_shape)
    view[dim] = index.numel()
    return index.reshape(view).expand(*like_shape)


@op("index_add")
def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    d = normalize_dim(input, dim)
    src = source if input.ndim else source.reshape(1)
    x = input if input.ndim else input.reshape(1)
    out = gather_scatter.scatter_add(x, d, _along(x, d, index, src.shape), src * alpha if alpha != 1 else src)
    return out if input.ndim else out.reshape(())


def _positions(x: Tensor, dim: int, index: Tensor):
    """The advanced index tuple that puts ``index`` (1-d) along ``dim``."""
    return (slice(None),) * dim + (index,)


@op("index_copy")
def index_copy(input, dim, index, source):  # noqa: A002
    out = input.clone()
    out[_positions(out, normalize_dim(input, dim), index)] = source
    return out


@op("index_fill")
def index_fill(input, dim, index, value):  # noqa: A002
    out = input.clone()
    out[_positions(out, normalize_dim(input, dim), index)] = value
    return out


def _scatter_index(index: Tensor, dim: int):
    """scatter's index as an advanced-indexing tuple: ``index`` along ``dim``, the position of each
    element elsewhere."""
    grids = []
    for k, n in enumerate(index.shape):
        if k == dim:
            grids.append(index)
        else:
            view = [1] * index.ndim
            view[k] = n
            grids.append(random.arange(n, device=index.device).reshape(view).expand(*index.shape))
    return tuple(grids)


@op("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    if reduce is not None:
        raise NotImplementedError("tgrad.scatter: the deprecated reduce= argument is not supported; use "
                                  "scatter_reduce or scatter_add")
    d = normalize_dim(input, dim)
    fill = src if src is not None else value
    out = input.clone()
    if isinstance(fill, Tensor):
        fill = fill[tuple(slice(0, n) for n in index.shape)]
    try:
        out[_scatter_index(index, d)] = fill
    except IndexError as e:  # PyTorch's scatter reports a bad index as a RuntimeError
        raise RuntimeError(str(e)) from None
    return out


@op("masked_scatter")
def masked_scatter(input, mask, source):  # noqa: A002
    out = input.clone()
    m = mask.expand(*input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    n = int(m.sum().item())
    out[m] = source.reshape(-1)[:n]
    return out


@op("bincount")
def bincount(input, weights=None, minlength=0):  # noqa: A002
    if input.dtype.is_floating_point or input.dtype is _dtype.bool:
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{input.dtype.scalar_type}\'')
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and int(input.amin().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = builtins.max(int(input.amax().item()) + 1 if input.numel() else 0, minlength)
    dtype = weights.dtype if weights is not None else _dtype.int64
    if weights is not None and not weights.dtype.is_floating_point:
        dtype = _dtype.float64
    zeros = factories.zeros(n, dtype=dtype, device=input.device)
    ones = weights.to(dtype) if weights is not None else factories.ones(input.shape[0], dtype=dtype,
                                                                          device=input.device)
    return gather_scatter.scatter_add(zeros, 0, input, ones)


@op("histc")
def histc(input, bins=100, min=0, max=0):  # noqa: A002
    if not input.dtype.is_floating_point:
        kernel = "linspace_cpu" if input.dtype is _dtype.bool else "histogram_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{input.dtype.scalar_type}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if hi < lo:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and input.numel():
        lo, hi = float(input.amin().item()), float(input.amax().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = input.reshape(-1).detach()
    inside = (x >= lo) & (x <= hi)
    which = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).to(_dtype.int64)
    counts = factories.zeros(bins, dtype=input.dtype, device=input.device)
    return gather_scatter.scatter_add(counts, 0, which, inside.to(input.dtype))


@op("mode")
def mode(input, dim=-1, keepdim=False):  # noqa: A002
    d = normalize_dim(input, dim)
    x = input.movedim(d, -1)
    counts = (x.unsqueeze(-1) == x.unsqueeze(-2)).sum(-1)      # how often each element occurs
    top = counts.amax(-1, keepdim=True)
    candidates = where(counts == top, x, math.inf if x.dtype.is_floating_point else True if x.dtype is _dtype.bool
                       else torch.iinfo(x.dtype.torch).max)
    value = candidates.amin(-1, keepdim=True)                   # the smallest most frequent value
    hits = (x == value).to(_dtype.int64) * random.arange(1, x.shape[-1] + 1, device=x.device)
    index = hits.amax(-1, keepdim=True) - 1                     # its last position, as PyTorch
    value, index = value.movedim(-1, d), index.movedim(-1, d)
    if not keepdim:
        value, index = value.squeeze(d), index.squeeze(d)
    return return_types.mode(value.detach() if not input.requires_grad else
                                      gather_scatter.gather(input, d, index.unsqueeze(d) if not keepdim else index)
                                      .squeeze(d) if not keepdim else gather_scatter.gather(input, d, index), index)


# ----------------------------------------------------------------------------- random draws

@op("bernoulli")
def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    probs = input if p is None else factories.full(tuple(input.shape), float(p), dtype=input.dtype,
                                                   device=input.device)
    u = random.rand(*input.shape, generator=generator, dtype=_dtype.float64 if input.dtype is _dtype.float64
                    else _dtype.float32, device=input.device)
    return (u < probs.detach()).to(input.dtype)


_IDENTITY = {"sum": 0.0, "prod": 1.0, "mean": 0.0, "amax": -math.inf, "amin": math.inf}


@op("scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """out[.., index[j], ..] = reduce(out[.., index[j], ..], src[j]) along ``dim``, composed per
    output position along ``dim`` from where() and reductions (toy sizes: one pass per position)."""
    if reduce not in _IDENTITY:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = normalize_dim(input, dim)
    src = src[tuple(slice(0, n) for n in index.shape)]
    identity = _IDENTITY[reduce]
    if not input.dtype.is_floating_point and identity in (math.inf, -math.inf):
        info = torch.iinfo(input.dtype.torch)
        identity = info.min if identity < 0 else info.max
    slices, reached = [], False
    for k in range(input.shape[d]):
        hit = index == k
        here = input.narrow(d, k, 1)
        if not index.shape[d] or not bool(hit.any()):
            slices.append(here)
            continue
        reached = True
        values = where(hit, src, identity)
        if reduce in ("sum", "mean"):
            acc = values.sum(d, keepdim=True)
        elif reduce == "prod":
            acc = values.prod(d, keepdim=True)
        else:
            acc = getattr(values, reduce)(d, keepdim=True)
        count = hit.sum(d, keepdim=True)
        if include_self and reduce == "sum":
            acc = acc + here
        elif include_self and reduce == "prod":
            acc = acc * here
        elif include_self and reduce == "mean":
            acc = (acc + here) / (count + 1)
        elif include_self:  # amax, amin
            acc = getattr(joins.cat([acc, here], d), reduce)(d, keepdim=True)
        elif reduce == "mean":
            acc = acc / count.clamp(min=1)  # rows without a hit keep their input (below): no 0/0 there
        if not input.dtype.is_floating_point and reduce == "mean":
            acc = acc.floor().to(input.dtype)
        slices.append(where(count > 0, acc.to(input.dtype), here))
    out = joins.cat(slices, d) if slices else input.clone()
    if not reached and records(src):  # src reaches no position: still in the graph, its gradient zeros (PyTorch's)
        nothing = src.reshape(-1)[:0].sum().to(out.dtype)
        out = where(factories.zeros((), dtype=_dtype.bool, device=out.device), nothing, out)
    return out


def _in_place(name, fn):
    """``Tensor.<name>_``: the out-of-place op written back into the tensor (recorded when a graph is)."""
    def method(self, *args, **kwargs):
        result = fn(self, *args, **kwargs)
        if result.dtype is not self.dtype:
            raise RuntimeError(f"{name}_(): result type {result.dtype.scalar_type} can't be cast to the desired "
                               f"output type {self.dtype.scalar_type}")
        return write_inplace(self, lambda t: fn(t, *args, **kwargs))
    method.__name__ = name + "_"
    op(name + "_", function=False)(method)


for _name, _fn in (("scatter", scatter), ("index_add", index_add), ("index_copy", index_copy),
                   ("index_fill", index_fill), ("masked_scatter", masked_scatter),
                   ("scatter_reduce", scatter_reduce)):
    _in_place(_name, _fn)


@op("bernoulli_", function=False)
def bernoulli_(input, p=0.5, *, generator=None):  # noqa: A002
    """Fill ``input`` with 0/1 draws: probability ``p`` (a number or a tensor of probabilities)."""
    probs = p if isinstance(p, Tensor) else factories.full(tuple(input.shape), float(p), dtype=_dtype.float64,
                                                           device=input.device)
    return input.copy_(bernoulli(probs.expand(*input.shape), generator=generator))
