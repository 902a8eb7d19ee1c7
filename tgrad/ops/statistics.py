"""Variances, standard deviations and vector norms as autograd Functions over ``kernels.reduce``,
and the statistics composed from reductions (each a kernel), whose gradients are the composition's:

- ``nansum``/``nanmean``: NaN replaced by 0 with ``where`` (gradient g where not NaN, else 0),
  divided by the count of non-NaN entries for the mean.
- ``dist``: the p-norm of the difference.
- ``renorm``: each slice scaled by maxnorm / (norm + 1e-7) where its p-norm exceeds maxnorm.
- ``cov``/``corrcoef``: the (weighted) centred observations times their transpose (one matmul),
  over the degrees of freedom; corrcoef divides by the standard deviations and clamps to [-1, 1]
  (its diagonal v / v: exactly 1).
"""
from __future__ import annotations

import math
import warnings

from .. import _dtype
from ..autograd.function import BuiltinFunction
from .arrange import diagonal_scatter
from .elementwise import where
from .inplace import in_place
from .matmul import mm
from .reduce import _check_tensor, _dims, _expand_back, _result, _run, _where, amin, mean, sum
from .registry import op


class Var(BuiltinFunction):
    node_name = "VarBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, correction, op, whole):
        ctx.meta = (x.shape, dims, keepdim)
        ctx.dof = math.prod(x.shape[d] for d in dims) - correction
        ctx.whole = whole
        out = _result(_run(x, dims, op, correction=correction), x, dims, keepdim)
        ctx.save_for_backward(x, out if op == "std" else None)
        ctx.op = op
        return out

    @staticmethod
    def backward(ctx, g):
        """var: dx = 2 (x - mean) / (N - c) g;  std: the var gradient of g / (2 std), 0 where std = 0.
        With no degrees of freedom left (N - c <= 0) PyTorch's own formulas apply: for a reduction
        over everything, g * (nan where x == mean, else inf); over given dims, 2 / (N - c) as is
        (inf at 0, negative below)."""
        x, std_out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        if ctx.op == "std":
            g = _where(std_out == 0, 0.0, g / (2.0 * std_out))
        mu = mean(x, dims, True)
        ge = _expand_back(g, shape, dims, keepdim)
        if ctx.whole and ctx.dof <= 0:  # x == mean, not x - mean == 0: an infinite x equal to its mean gives NaN
            return ge * _where(x == mu, math.nan, math.inf), None, None, None, None, None
        centered = x - mu
        scale = 2.0 / ctx.dof if ctx.dof else math.inf
        return ge * centered * scale, None, None, None, None, None


class Std(Var):
    node_name = "StdBackward0"


class Norm(BuiltinFunction):
    node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim, p):
        """||x||_p = (sum |x|^p)^(1/p); p = inf / -inf: max / min |x|; p = 0: count of non-zeros.
        p = 1, 2, inf run as one reduction; other p are composed (forward runs with grad off)."""
        ctx.meta, ctx.p = (x.shape, dims, keepdim), p
        if p in (1, 2, math.inf):
            out = _result(_run(x, dims, {1: "norm1", 2: "norm2", math.inf: "norminf"}[p]), x, dims, keepdim)
        elif p == -math.inf:
            out = amin(x.abs(), dims, keepdim)
        elif p == 0:
            out = sum((x != 0).to(x.dtype), dims, keepdim)
        else:
            out = sum(x.abs() ** p, dims, keepdim) ** (1.0 / p)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        """PyTorch's norm_backward: p=1: sign(x) g; p=2: x g / n; +-inf: sign(x) g split between the
        entries where |x| == n; p=0: 0; p<1: sign(x) |x|^(p-1) n^(1-p) g (0 at x=0); otherwise
        x |x|^(p-2) g / n^(p-1). Where n = 0 the gradient is 0."""
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        p = ctx.p
        ge = _expand_back(g, shape, dims, keepdim)
        if p == 1:
            return ge * x.sign(), None, None, None
        if p == 0:  # piecewise constant; PyTorch leaves the gradient undefined (None)
            return None, None, None, None
        n = _expand_back(out, shape, dims, keepdim)
        if p == 2:
            return ge * x / _where(n == 0, 1.0, n), None, None, None
        if math.isinf(p):
            hit = (x.abs() == n).to(g.dtype)
            count = sum(hit, dims, True).expand(*shape)  # 0 where the norm is NaN: no entry takes g
            return ge * x.sign() * hit / _where(count == 0, 1.0, count), None, None, None
        if p < 1:
            scaled = x.sign() * _where(x == 0, 0.0, x.abs() ** (p - 1))
            return scaled * ge * n ** (1 - p), None, None, None
        scaled = x.sign() * x.abs() ** (p - 1) if p < 2 else x * x.abs() ** (p - 2)
        return scaled * _where(n == 0, 0.0, ge / n ** (p - 1)), None, None, None


def _float_input(x, message):
    if not x.dtype.is_floating_point:
        raise RuntimeError(message.format(x.dtype.scalar_type))


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


@op("var")
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool) and unbiased is None:  # var(False): PyTorch's var(input, unbiased)
        dim, unbiased = None, dim
    if isinstance(unbiased, (tuple, list)) or (isinstance(dim, bool)):
        raise TypeError("var(): pass dims as dim=, unbiased/correction as keywords")
    _float_input(x, "std and var only support floating point and complex dtypes")
    return Var.apply(x, _dims(x, dim), keepdim, _correction(unbiased, correction), "var", dim is None or x.ndim == 0)


@op("std")
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool) and unbiased is None:  # std(False): PyTorch's std(input, unbiased)
        dim, unbiased = None, dim
    _float_input(x, "std and var only support floating point and complex dtypes")
    return Std.apply(x, _dims(x, dim), keepdim, _correction(unbiased, correction), "std", dim is None or x.ndim == 0)


@op("var_mean", method=False)
def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


@op("std_mean", method=False)
def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, dim, keepdim)


@op("norm")
def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    if p in ("fro", None):
        p = 2
    if p in ("inf", "-inf"):
        p = math.inf if p == "inf" else -math.inf
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise NotImplementedError(f"tgrad.norm supports a number p (vector norms) and 'fro', got {p!r}")
    _float_input(x, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}")
    if dtype is not None:  # computed in dtype; the gradient flows back through the cast
        x = x.to(dtype)
    return Norm.apply(x, _dims(x, dim), keepdim, p)


# ----------------------------------------------------------------------------- composed

@op("nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    _check_tensor("nansum", input)
    x = where(input.isnan(), 0, input) if input.dtype.is_floating_point else input
    if dtype is not None:
        x = x.to(dtype)
    return sum(x, dim, keepdim)


@op("nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    _check_tensor("nanmean", input)
    if not (dtype is not None and _dtype.as_dtype(dtype).is_floating_point) and not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.scalar_type}")
    count = nansum((~input.isnan()).to(dtype or input.dtype), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / count


@op("dist")
def dist(input, other, p=2):  # noqa: A002
    return norm(input - other, p)


@op("renorm")
def renorm(input, p, dim, maxnorm):  # noqa: A002
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor, got {input.dtype.scalar_type}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = input._dim(dim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = norm(input, p, others, True) if others else input.abs()
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


in_place("renorm_", renorm, function=False)


def _observation_weights(name, w, n, integral):
    kind = "integral" if integral else "floating point"
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with {w.ndim} "
                           f"dimensions")
    if (w.dtype.is_floating_point or w.dtype is _dtype.bool) == integral:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{w.dtype.scalar_type} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {n}")
    if n and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w


@op("cov")
def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """PyTorch's cov: rows are variables, columns observations."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _observation_weights("fweights", fweights, n, True)
    if aweights is not None:
        aweights = _observation_weights("aweights", aweights, n, False)
        w = aweights if w is None else w * aweights
    w_sum = w.sum() if w is not None else n
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        dof = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        dof = w_sum - correction
    if bool(dof <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        dof = dof * 0
    centred = x - avg.unsqueeze(1)
    c = mm(centred, (centred * w if w is not None else centred).t())
    return (c / dof).squeeze()


@op("corrcoef")
def corrcoef(input):  # noqa: A002
    c = cov(input)
    if c.ndim == 0:
        return c / c
    variances = c.diagonal()
    std = variances.sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    # c_ii / s_i / s_i can round an ulp below 1 (and trunc makes that 0): the diagonal is v / v
    # instead, exactly 1 (NaN where PyTorch's is)
    return diagonal_scatter(c, variances / variances).clamp(-1, 1)
