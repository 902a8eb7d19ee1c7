"""Shared test helpers: tgrad tensors paired with float64 torch references on the same numbers.

Data is drawn in float64, cast to the test dtype, and the torch reference is built from the *cast*
values in float64, so a comparison measures tgrad's arithmetic and not the rounding of its inputs.
Keep this module small and its names stable: several test files import it.
"""
from __future__ import annotations

import zlib

import torch

import tgrad

# (rtol, atol) per dtype of the tensor under test; float16 results are stored in half precision
TOL = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (2e-5, 2e-6),
    torch.float16: (4e-3, 2e-3),
    torch.bfloat16: (2e-2, 1e-2),
}


def _torch_dtype(dtype) -> torch.dtype:
    if dtype is None:
        return torch.float32
    return dtype if isinstance(dtype, torch.dtype) else dtype.torch


def to_torch(t) -> torch.Tensor:
    """A float64 torch copy of tgrad tensor ``t`` (or of a torch tensor), detached, on the CPU
    (where the float64 references are)."""
    data = t.torch() if isinstance(t, tgrad.Tensor) else t
    return data.detach().to(device="cpu", dtype=torch.float64).clone()


def uniform64(shape, low=-2.0, high=2.0, seed=0) -> torch.Tensor:
    """Uniform float64 numbers in [low, high), reproducible from (shape, low, high, seed)."""
    key = zlib.crc32(repr((tuple(shape), float(low), float(high), seed)).encode())
    g = torch.Generator().manual_seed(key)
    return torch.rand(tuple(shape), generator=g, dtype=torch.float64) * (high - low) + low


def make_pair(shape, dtype=tgrad.float32, low=-2.0, high=2.0, requires_grad=True, seed=0):
    """(tgrad leaf of ``dtype``, torch float64 leaf) holding the same numbers, uniform in [low, high)."""
    cast = uniform64(shape, low, high, seed).to(_torch_dtype(dtype))
    x = tgrad.from_torch(cast.clone())
    if requires_grad:
        x.requires_grad_()
    ref = cast.to(torch.float64).requires_grad_(requires_grad)
    return x, ref


def assert_close(got, expected: torch.Tensor, dtype=None, rtol=None, atol=None, msg=""):
    """``got`` (tgrad or torch) matches the float64 reference ``expected`` within the tolerance of
    ``dtype`` (default: got's dtype); shapes must match exactly. NaN matches NaN, inf matches inf."""
    assert got is not None, f"got None {msg}"
    g = to_torch(got)
    e = expected.detach().to(torch.float64)
    assert tuple(g.shape) == tuple(e.shape), f"shape {tuple(g.shape)} != {tuple(e.shape)} {msg}"
    if dtype is None:
        dtype = got.torch().dtype if isinstance(got, tgrad.Tensor) else got.dtype
    r, a = TOL[_torch_dtype(dtype)]
    torch.testing.assert_close(g, e, rtol=rtol if rtol is not None else r, atol=atol if atol is not None else a,
                               equal_nan=True, msg=lambda m: f"{m} {msg}")


def node_signature(t):
    """``t.grad_fn``'s type name and its edges as (type name or None, output_nr), comparable between
    tgrad and torch: ('AddBackward0', (('AccumulateGrad', 0), (None, 0)))."""
    fn = t.grad_fn
    return type(fn).__name__, tuple((type(n).__name__ if n is not None else None, nr) for n, nr in fn.next_functions)


def check_vs_torch(y, yr, inputs, refs, dtype=None, seed=99, edges=True):
    """Output ``y`` of tgrad against ``yr`` of torch (float64, same numbers): values, grad_fn and its
    edges (only the name when ``edges`` is False), then backward with one random upstream gradient
    and every input's gradient (values, shape, and the input's own dtype). Inputs whose reference
    is not a torch tensor that requires grad are skipped."""
    assert_close(y, yr, dtype)
    assert y.requires_grad
    assert node_signature(y) == node_signature(yr) if edges else node_signature(y)[0] == node_signature(yr)[0]
    g, gr = make_pair(y.shape, y.dtype, -1.0, 1.0, requires_grad=False, seed=seed)
    y.backward(g)
    yr.backward(gr)
    for x, r in zip(inputs, refs):
        if isinstance(r, torch.Tensor) and r.requires_grad:
            assert x.grad is not None and x.grad.dtype is x.dtype
            assert_close(x.grad, r.grad, x.dtype)
