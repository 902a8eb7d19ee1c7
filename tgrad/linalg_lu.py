"""Differentiable LU factorisation with partial pivoting and the solve on its factors (kernels in
``tgrad.kernels.linalg.lu``); ``tgrad.linalg`` builds solve, inv, det and slogdet from these two.
Each backward is written with these same Functions, the triangular solves and tgrad ops, so it is
differentiable again (create_graph). With A = P L U (square), L unit lower, U upper:

    LU of A:          phi = tril(L^T dL, -1) + triu(dU U^T),   dA = P L^-T phi U^-T
                      (A (m, n) not square: L1, U1 its square factors; m < n, U = [U1 U2]:
                      phi_L -= dU2 U2^T, dA = P [L1^-T phi U1^-T, L1^-T dU2]; m > n,
                      L = [L1; L2]: phi_U -= L2^T dL2, dA = P [L1^-T phi U1^-T; dL2 U1^-T])
    X = A^-1 B:       dB = A^-T dX,   dA = -dB X^T
    X = A^-T B:       dB = A^-1 dX,   dA = -X dB^T
    (dA to dLU:       dL = tril(P^T dA U^T, -1),   dU = triu(L^T P^T dA))
"""
from __future__ import annotations

import math

import torch

from .autograd.function import BuiltinFunction
from .distributions._linalg import solve_lower
from .kernels.linalg import lu as K
from .ops.common import check_runnable, wrap
from .ops.random import arange as _arange, eye as _eye
from .ops.joins import cat as _cat
from .tensor import Tensor

__all__ = ["lu_factor", "lu_solve", "flat", "perm_of", "unpack", "perm_sign", "raise_if_failed"]


def flat(data: torch.Tensor, batch, last: int = 2) -> torch.Tensor:
    """``data`` broadcast to the batch dims ``batch`` and flattened to one batch dim, its ``last``
    dims kept (a copy only where broadcasting or strides need one; empty shapes allowed)."""
    tail = tuple(data.shape[data.ndim - last:])
    return data.expand(tuple(batch) + tail).reshape((math.prod(batch),) + tail)


def perm_of(pivots: Tensor, m: int) -> Tensor:
    """The row order (..., m) int32 of the 1-based row swaps ``pivots`` (..., k): (P^T A)_i = A_perm[i]."""
    batch = tuple(pivots.shape[:-1])
    return wrap(K.pivots_to_perm(flat(pivots._data, batch, 1), m).view(batch + (m,)))


def unpack(LU: Tensor, perm: Tensor):
    """(P, L, U) of the packed factors LU (..., m, n) and the row order ``perm`` (..., m)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    P = (_arange(m, device=LU.device)[:, None] == perm.unsqueeze(-2)).to(LU.dtype)
    L = LU[..., :, :k].tril(-1) + _eye(m, k, dtype=LU.dtype, device=LU.device)
    return P, L, LU[..., :k, :].triu()


def perm_sign(pivots: Tensor, dtype) -> Tensor:
    """det(P), +1 or -1, of the row swaps ``pivots`` (..., k)."""
    k = pivots.shape[-1]
    swaps = (pivots != _arange(1, k + 1, dtype=pivots.dtype, device=pivots.device)).sum(-1)
    return (1 - 2 * (swaps % 2)).to(dtype)


def raise_if_failed(info: Tensor, batched: bool, message, exc=RuntimeError):
    """Raise ``exc`` with ``message(i)`` (i: the first failing element's info) for the first nonzero
    ``info``, prefixed with its batch element as PyTorch does."""
    bad = info._data.reshape(-1).nonzero()
    if bad.numel():
        b = int(bad[0, 0])
        prefix, rest = message(int(info._data.reshape(-1)[b])).split(": ", 1)
        where = f"(Batch element {b}): " if batched else ""
        raise exc(f"{prefix}: {where}{rest}")


class _LUFactor(BuiltinFunction):
    node_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, A):
        check_runnable(A)
        m, n = A.shape[-2:]
        batch = tuple(A.shape[:-2])
        LU, piv, info = K.lu_factor(flat(A._data, batch))
        LU, piv = wrap(LU.view(A.shape)), wrap(piv.view(batch + (min(m, n),)))
        ctx.save_for_backward(LU, piv)
        return LU, piv, wrap(info.view(batch))

    @staticmethod
    def backward(ctx, g, _g_pivots, _g_info):
        LU, piv = ctx.saved_tensors
        m, n = LU.shape[-2:]
        k = min(m, n)
        P, L, U = unpack(LU, perm_of(piv, m))
        gL, gU = g[..., :, :k].tril(-1), g[..., :k, :].triu()
        L1, U1 = L[..., :k, :], U[..., :, :k]  # the square factors; the rest of L or U is a solve with them
        phi_L, phi_U = L1.mT @ gL[..., :k, :], gU[..., :, :k] @ U1.mT
        if m < n:
            phi_L = phi_L - gU[..., :, k:] @ U[..., :, k:].mT
        if m > n:
            phi_U = phi_U - L[..., k:, :].mT @ gL[..., k:, :]
        Y = solve_lower(L1, phi_L.tril(-1) + phi_U.triu(), True)   # L1^-T phi
        gA = solve_lower(U1.mT, Y.mT, True).mT                   # L1^-T phi U1^-T
        if m < n:
            gA = _cat([gA, solve_lower(L1, gU[..., :, k:], True)], -1)
        if m > n:
            gA = _cat([gA, solve_lower(U1.mT, gL[..., k:, :].mT, True).mT], -2)
        return P @ gA


class _LUSolve(BuiltinFunction):
    node_name = "LinalgLuSolveBackward0"

    @staticmethod
    def forward(ctx, LU, perm, B, adjoint):
        check_runnable(LU, B)
        batch = tuple(torch.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
        X = K.lu_solve(flat(LU._data, batch), flat(perm._data, batch, 1), flat(B._data, batch), adjoint)
        out = wrap(X.view(batch + tuple(B.shape[-2:])))
        ctx.adjoint = adjoint
        ctx.save_for_backward(LU, perm, out)
        return out

    @staticmethod
    def backward(ctx, g):
        LU, perm, X = ctx.saved_tensors
        adjoint = ctx.adjoint
        gB = _LUSolve.apply(LU, perm, g, not adjoint)
        gLU = None
        if ctx.needs_input_grad[0]:  # the engine sums a batch broadcast over B back to LU's shape
            P, L, U = unpack(LU, perm)
            PtgA = P.mT @ (-(X @ gB.mT) if adjoint else -(gB @ X.mT))
            gLU = (PtgA @ U.mT).tril(-1) + (L.mT @ PtgA).triu()
        return gLU, None, gB if ctx.needs_input_grad[2] else None, None


def lu_factor(A: Tensor):
    """(LU, pivots, info) of A (..., m, n): P^T A = L U packed in LU, 1-based int32 row swaps, and per
    matrix 0 or the 1-based index of the first zero pivot (a singular U)."""
    return _LUFactor.apply(A)


def lu_solve(LU: Tensor, perm: Tensor, B: Tensor, adjoint: bool = False) -> Tensor:
    """X with A X = B (``adjoint``: A^T X = B) for A = P L U given as its packed LU (..., n, n) and
    row order ``perm`` (..., n); B (..., n, k), batches broadcast."""
    return _LUSolve.apply(LU, perm, B, bool(adjoint))
