"""Differentiable triangular solves and Cholesky factorisation for the distributions (kernels in
``tgrad.kernels.linalg``). Each backward is written with these same Functions and tgrad ops, so it
is differentiable again (create_graph).

    X = L^-1 B:   dB = L^-T dX,   dL = -tril(dB X^T)
    X = L^-T B:   dB = L^-1 dX,   dL = -tril(X dB^T)
    A = L L^T:    P = phi(L^T tril(dL))  (phi: lower triangle, diagonal halved)
                  S = L^-T P L^-1,   dA = (S + S^T) / 2
"""
from __future__ import annotations

import torch

import tgrad
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.linalg import cholesky as K
from tgrad.ops.common import check_runnable, wrap

__all__ = ["solve_lower", "cholesky", "tril_mask", "diagonal"]

_LinAlgError = torch.linalg.LinAlgError  # PyTorch's exception type for a failed factorisation


def tril_mask(n, dtype, device, diag_scale=1.0):
    """(n, n) lower-triangular ones (the diagonal ``diag_scale``), as a constant tensor."""
    i = tgrad.arange(n, device=device)
    lower = (i[:, None] > i[None, :]).to(dtype)
    return lower + tgrad.eye(n, dtype=dtype, device=device) * diag_scale


def diagonal(m):
    """The diagonals of a batch of square matrices (..., n, n) -> (..., n)."""
    n = m.shape[-1]
    return (m * tgrad.eye(n, dtype=m.dtype, device=m.device)).sum(-1)


def _batched(t, batch):
    return t._data.expand(tuple(batch) + tuple(t.shape[-2:])).reshape((-1,) + tuple(t.shape[-2:]))


class _SolveLower(BuiltinFunction):
    node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, L, B, transpose):
        check_runnable(L, B)
        batch = torch.broadcast_shapes(tuple(L.shape[:-2]), tuple(B.shape[:-2]))
        X = K.solve_lower(_batched(L, batch), _batched(B, batch), transpose)
        ctx.transpose = transpose
        ctx.save_for_backward(L, B)
        return wrap(X.view(tuple(batch) + tuple(B.shape[-2:])))

    @staticmethod
    def backward(ctx, g):
        L, B = ctx.saved_tensors
        t = ctx.transpose
        X = _SolveLower.apply(L, B, t)
        gB = _SolveLower.apply(L, g, not t)
        mask = tril_mask(L.shape[-1], L.dtype, L.device)
        gL = -((X @ gB.mT) if t else (gB @ X.mT)) * mask
        return (gL if ctx.needs_input_grad[0] else None,  # the engine sums broadcast batches back
                gB if ctx.needs_input_grad[1] else None, None)


def solve_lower(L, B, transpose=False):
    """X with L X = B (``transpose``: L^T X = B); L (..., n, n) lower triangular, B (..., n, m)."""
    if L.ndim < 2 or L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{L.shape[-2] if L.ndim >= 2 else None} by {L.shape[-1] if L.ndim else None} matrices")
    if B.ndim < 2 or B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({L.shape[-2]}x{L.shape[-1]} and {B.shape[-2] if B.ndim >= 2 else None}x"
                           f"{B.shape[-1] if B.ndim else None})")
    if not L.dtype.is_floating_point or L.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: expected floating point A and B of one dtype, got {L.dtype} "
                           f"and {B.dtype}")
    return _SolveLower.apply(L, B, bool(transpose))


class _Cholesky(BuiltinFunction):
    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A):
        check_runnable(A)
        n = A.shape[-1]
        L, info = K.cholesky(A._data.reshape(-1, n, n))
        bad = info.nonzero()
        if bad.numel():
            b = int(bad[0, 0])
            where = f"(Batch element {b}): " if A.ndim > 2 else ""
            raise _LinAlgError(
                f"linalg.cholesky: {where}The factorization could not be completed because the input is not "
                f"positive-definite (the leading minor of order {int(info[b])} is not positive-definite).")
        out = wrap(L.view(A.shape))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (L,) = ctx.saved_tensors
        n = L.shape[-1]
        P = (L.mT @ (g * tril_mask(n, g.dtype, g.device))) * tril_mask(n, g.dtype, g.device, 0.5)
        Y = _SolveLower.apply(L, P, True)           # L^-T P
        S = _SolveLower.apply(L, Y.mT, True).mT     # L^-T P L^-1
        return (S + S.mT) * 0.5


def cholesky(A):
    """L lower triangular with A = L L^T, for symmetric positive-definite A (..., n, n)."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.cholesky: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim >= 2 else None} by {A.shape[-1] if A.ndim else None} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.cholesky: Expected a floating point tensor as input. Got {A.dtype}")
    return _Cholesky.apply(A)
