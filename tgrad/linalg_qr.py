"""Differentiable QR (the Householder kernel in ``tgrad.kernels.linalg.qr``). The backward is
PyTorch's formula written with tgrad ops and the triangular solve, so it is differentiable again.
A = Q R (m, n), k = min(m, n), copyltu(M) = tril(M, -1) + tril(M, -1)^T + diag(M):

    m >= n (reduced):  M = R gR^T - gQ^T Q,   gA = (gQ + Q copyltu(M)) R^-T
    m < n:             R = [U | V] (U: k x k),  Y = Q V,  gA = [the above with (gQ + Y gV^T, gU, Q, U) | Q gV]
"""
from __future__ import annotations

from .autograd.function import BuiltinFunction
from .distributions._linalg import solve_lower
from .kernels.linalg import qr as K
from .linalg_lu import flat
from .ops.common import check_runnable, wrap
from .ops.random import eye as _eye
from .ops.joins import cat as _cat
from .tensor import Tensor

__all__ = ["qr"]


def _square_backward(gQ, gR, Q, R):
    """gA of A = Q R with R square (k x k)."""
    M = R @ gR.mT - gQ.mT @ Q
    low = M.tril(-1)
    X = gQ + Q @ (low + low.mT + M * _eye(M.shape[-1], dtype=M.dtype, device=M.device))
    return solve_lower(R.mT, X.mT, True).mT  # X R^-T


class _QR(BuiltinFunction):
    node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        (m, n), batch = A.shape[-2:], tuple(A.shape[:-2])
        check_runnable(A)
        Q, R = K.qr(flat(A._data, batch))
        rows = m if mode == "complete" else min(m, n)
        Q, R = wrap(Q[:, :, :rows].reshape(batch + (m, rows))), wrap(R[:, :rows].reshape(batch + (rows, n)))
        ctx.mode = mode
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _square_backward(gQ, gR, Q, R), None
        gU, gV = gR[..., :m], gR[..., m:]
        return _cat([_square_backward(gQ + (Q @ R[..., m:]) @ gV.mT, gU, Q, R[..., :m]), Q @ gV], -1), None


def qr(A: Tensor, mode: str = "reduced"):
    """(Q, R) of A (..., m, n) with A = Q R: ``mode`` 'reduced' (Q m x k, R k x n), 'complete'
    (Q m x m, R m x n) or 'r' (R only, Q empty)."""
    Q, R = _QR.apply(A, mode)
    return (Q.new_zeros((0,)) if mode == "r" else Q), R
