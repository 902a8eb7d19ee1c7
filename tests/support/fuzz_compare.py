"""How the differential fuzzers (``test_fuzz.py``, ``test_fuzz_nn.py``) compare an outcome of tgrad
with PyTorch's: values within their dtype's tolerance, else no less accurate than PyTorch's against
the float64 reference (``no_less_accurate``), and exceptions of the same kind."""
from __future__ import annotations

import torch

import tgrad

# (rtol, atol) per dtype of an outcome compared with PyTorch's
TOL = {"float64": (1e-7, 1e-9), "float32": (2e-4, 1e-5), "float16": (2e-2, 2e-2)}


def as_float64(t):
    data = t.torch() if isinstance(t, tgrad.Tensor) else t
    return data.detach().to(torch.float64) if data.dtype != torch.bool else data.detach()


def close(got, want, dtype):
    g, w = as_float64(got), as_float64(want)
    if tuple(g.shape) != tuple(w.shape):
        return False
    if g.dtype == torch.bool or not (g.dtype.is_floating_point and w.dtype.is_floating_point):
        return torch.equal(g.to(w.dtype), w)
    if not torch.equal(torch.isnan(g), torch.isnan(w)):
        return False
    rtol, atol = TOL.get(dtype, TOL["float64"])
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if finite.any() else 1.0
    return bool(torch.allclose(g.nan_to_num(0.0, 1e308, -1e308), w.nan_to_num(0.0, 1e308, -1e308),
                               rtol=rtol, atol=atol * max(1.0, scale)))


def no_less_accurate(got, want, ref, dtype="float32", rounded=()):
    """tgrad at least as close (within 2x) to the float64 reference as PyTorch in the same low
    precision is. Elements that are ill-conditioned in that precision are not compared: where
    PyTorch's own result is off the reference by more than the tolerance (a layer norm over two
    nearly equal numbers, tan of a large float32 number), or where rounding the intermediates to
    that precision, or in float64 moving them by a few ulps each way (``rounded``: the references
    computed so), moves the reference that far
    (``exp(exp(exp(x))).sin()``: one ulp of the float32 argument changes the sine); there tgrad's
    result is only to be NaN or infinite where PyTorch's is."""
    g, w, r = as_float64(got), as_float64(want), as_float64(ref)
    if tuple(g.shape) != tuple(r.shape) or not (g.dtype.is_floating_point and w.dtype.is_floating_point):
        return False
    rtol, atol = TOL.get(dtype, TOL["float64"])
    finite_r = r[torch.isfinite(r)]
    tol = atol * max(1.0, float(finite_r.abs().max()) if finite_r.numel() else 1.0) + rtol * r.abs()
    ill = ((w - r).abs() > tol) | (torch.isnan(w) != torch.isnan(r))
    for q in map(as_float64, rounded):
        ill |= ((q - r).abs() > tol) | (torch.isnan(q) != torch.isnan(r))
    if not torch.equal(torch.isnan(g[ill]), torch.isnan(w[ill])) or \
            not torch.equal(torch.isinf(g[ill]), torch.isinf(w[ill])):
        return False
    g, w, r = g[~ill], w[~ill], r[~ill]
    if not torch.equal(torch.isnan(g), torch.isnan(r)):
        return False
    finite, infinite = torch.isfinite(r), torch.isinf(r)
    if not torch.equal(g[infinite], r[infinite]):
        return False
    err_got = (g[finite] - r[finite]).abs()
    err_want = (w[finite] - r[finite]).abs()
    return bool((err_got <= torch.maximum(2 * err_want, tol[~ill][finite]) + 1e-12).all())


def same_kind(got, want):
    return issubclass(type(got), type(want)) or issubclass(type(want), type(got)) or \
        type(want).__mro__[1] is type(got)
