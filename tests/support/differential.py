"""Differential testing against PyTorch: run one program on both libraries and compare what came out.

A program is ``fn(L, F)`` where ``L`` is the library (``torch`` or ``tgrad``) and ``F`` its
``nn.functional``; it builds its inputs from the same numbers in both (``L.tensor(data)``) and
returns a tensor, a number, or a (nested) tuple/list of them. ``same(fn)`` runs it on both and
asserts they agree: whether it raised (and the exception type), then for each tensor the shape,
dtype, ``requires_grad`` and values (NaN equal to NaN, infinities by sign, signed zeros where
``signed_zeros``) within the dtype's tolerance. ``grads(build, *data)`` makes the program that
returns an op's result and its leaves' gradients under a fixed upstream gradient.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as GF

TOL = {"float64": (1e-9, 1e-11), "float32": (2e-5, 2e-6), "float16": (4e-3, 2e-3)}


class Raised:
    def __init__(self, exc):
        self.type, self.text = type(exc), str(exc)

    def __repr__(self):
        return f"raised {self.type.__name__}: {self.text[:200]}"


def run(fn, lib):
    L, F = (torch, TF) if lib == "torch" else (tgrad, GF)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(L, F)
        except Exception as exc:  # noqa: BLE001 - every outcome is compared
            return Raised(exc)


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


def _values(t):
    data = t.torch() if isinstance(t, tgrad.Tensor) else t
    return data.detach().to(torch.float64) if data.dtype.is_floating_point or data.dtype == torch.bool else data.detach()


def compare(got, want, path="result", signed_zeros=False, tol=None):
    """Assert that tgrad's ``got`` matches torch's ``want`` (see the module docstring)."""
    if isinstance(want, Raised) or isinstance(got, Raised):
        assert isinstance(want, Raised) and isinstance(got, Raised), f"{path}: torch {want!r}, tgrad {got!r}"
        # torch's subclasses of the builtin types (torch.OutOfMemoryError, ...) match their base
        assert issubclass(got.type, want.type) or issubclass(want.type, got.type) or \
            want.type.__mro__[1] is got.type, f"{path}: torch {want!r}, tgrad {got!r}"
        return
    if isinstance(want, torch.Tensor):
        assert isinstance(got, tgrad.Tensor), f"{path}: torch gave a Tensor, tgrad {type(got).__name__}"
        assert tuple(got.shape) == tuple(want.shape), f"{path}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        assert _dtype_name(got) == _dtype_name(want), f"{path}: dtype {got.dtype} != {want.dtype}"
        assert got.requires_grad == want.requires_grad, f"{path}: requires_grad {got.requires_grad} != " \
                                                        f"{want.requires_grad}"
        g, w = _values(got), _values(want)
        if not w.dtype.is_floating_point:
            assert torch.equal(g, w), f"{path}: {g} != {w}"
            return
        rtol, atol = tol or TOL.get(_dtype_name(want), (1e-9, 1e-11))
        nan_g, nan_w = torch.isnan(g), torch.isnan(w)
        assert torch.equal(nan_g, nan_w), f"{path}: NaN at {nan_g.nonzero().tolist()} vs {nan_w.nonzero().tolist()}" \
                                          f"\n tgrad {g}\n torch {w}"
        g0, w0 = g.masked_fill(nan_w, 0), w.masked_fill(nan_w, 0)
        assert torch.allclose(g0, w0, rtol=rtol, atol=atol), f"{path}: values differ\n tgrad {g}\n torch {w}"
        if signed_zeros:
            zero = w0 == 0
            assert torch.equal(torch.signbit(g0[zero]), torch.signbit(w0[zero])), f"{path}: signed zeros\n " \
                                                                                    f"tgrad {g}\n torch {w}"
        return
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{path}: {got!r} vs {want!r}"
        for i, (a, b) in enumerate(zip(got, want)):
            compare(a, b, f"{path}[{i}]", signed_zeros, tol)
        return
    if want is None or isinstance(want, (bool, str, type)):
        assert got == want, f"{path}: {got!r} != {want!r}"
        return
    if isinstance(want, (int, float, np.generic)):
        assert not isinstance(got, tgrad.Tensor), f"{path}: tgrad gave a Tensor, torch {want!r}"
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got), f"{path}: {got} != nan"
        else:
            assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), f"{path}: {got!r} != {want!r}"
        return
    if isinstance(want, torch.Size):
        assert tuple(got) == tuple(want), f"{path}: {got} != {want}"
        return
    assert got == want, f"{path}: {got!r} != {want!r}"


def same(fn, signed_zeros=False, tol=None):
    """Run ``fn`` on both libraries and assert the results agree; returns torch's result."""
    want, got = run(fn, "torch"), run(fn, "tgrad")
    compare(got, want, signed_zeros=signed_zeros, tol=tol)
    return want


def grads(build, *data, dtype="float64"):
    """A program: leaves from ``data``, ``build(L, F, *leaves)`` summed against a fixed upstream
    gradient, then the leaves' gradients (and the forward result)."""
    def program(L, F):
        leaves = [L.tensor(d, dtype=getattr(L, dtype), requires_grad=True) for d in data]
        y = build(L, F, *leaves)
        g = L.tensor(np.linspace(-1.5, 2.0, y.numel()).reshape(tuple(y.shape)), dtype=y.dtype)
        y.backward(g)
        return (y.detach(),) + tuple(x.grad for x in leaves)
    return program
