"""Differentiable symmetric eigendecomposition and SVD (Jacobi kernels in ``tgrad.kernels.linalg.jacobi``)
and what ``tgrad.linalg`` builds on them. Each backward is PyTorch's formula written with tgrad ops
on the saved outputs, so it is differentiable again (create_graph). Real matrices:

    eigh, A = V diag(w) V^T:  gA = V (diag(gw) + skew(V^T gV) / 2E) V^T,  E_ij = w_j - w_i (i != j)
    svd, A = U diag(S) V^T, k = min(m, n):
        J = (skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS),  E_ij = S_j^2 - S_i^2 (i != j),
        skew(X) = X - X^T;  gA = U J V^T, plus (I - U U^T) gU S^-1 V^T for m > k, or
        U S^-1 gV^T (I - V V^T) for n > k
    pinv: PyTorch's closed form in pinv(A) and A (for any A, also with hermitian=True)
Where eigenvalues or singular values repeat, E has zeros off the diagonal and the gradients of the
vectors are inf/nan, PyTorch's documented ill-conditioning; the values' gradients alone stay finite.
"""
from __future__ import annotations

import torch

from .autograd.function import BuiltinFunction
from .kernels.linalg import jacobi as K
from .linalg_lu import flat
from .ops import reduce as _reduce
from .ops.common import check_runnable, wrap
from .ops.elementwise import where as _where
from .ops.random import eye as _eye
from .tensor import Tensor

__all__ = ["eigh", "svd", "pinv", "cutoff"]


def _eye_like(x: Tensor, n: int) -> Tensor:
    return _eye(n, dtype=x.dtype, device=x.device)


class _Eigh(BuiltinFunction):
    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A):
        n, batch = A.shape[-1], tuple(A.shape[:-2])
        check_runnable(A)
        w, V = K.eigh(flat(A._data, batch))
        w, V = wrap(w.view(batch + (n,))), wrap(V.view(A.shape))
        ctx.set_materialize_grads(False)  # an unused V must not bring its 1/E terms (eigvalsh)
        ctx.save_for_backward(w, V)
        return w, V

    @staticmethod
    def backward(ctx, gw, gV):
        w, V = ctx.saved_tensors
        eye = _eye_like(w, w.shape[-1])
        inner = 0
        if gV is not None:
            X = V.mT @ gV
            E = w.unsqueeze(-2) - w.unsqueeze(-1) + eye  # the diagonal of X - X^T is 0: any nonzero divisor
            inner = (X - X.mT) * 0.5 / E
        if gw is not None:
            inner = inner + gw.unsqueeze(-1) * eye
        return V @ inner @ V.mT


class _SVD(BuiltinFunction):
    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A):
        (m, n), batch = A.shape[-2:], tuple(A.shape[:-2])
        check_runnable(A)
        k, wide = min(m, n), m < n
        U, S, V = K.svd(flat((A.mT if wide else A)._data, batch))
        if wide:  # A^T = U S V^T  <=>  A = V S U^T
            U, V = V, U
        U, S, Vh = wrap(U.view(batch + (m, k))), wrap(S.view(batch + (k,))), wrap(V.mT.reshape(batch + (k, n)))
        ctx.set_materialize_grads(False)  # unused U and V must not bring their 1/E terms (svdvals)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        if gU is None and gVh is None:
            return (U * gS.unsqueeze(-2)) @ Vh
        eye = _eye_like(S, k)
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
        J = 0
        if gU is not None:
            UhgU = U.mT @ gU
            J = (UhgU - UhgU.mT) * S.unsqueeze(-2)
        if gVh is not None:
            VhgV = Vh @ gVh.mT
            J = J + S.unsqueeze(-1) * (VhgV - VhgV.mT)
        J = J / E
        if gS is not None:
            J = J + gS.unsqueeze(-1) * eye
        if m > k and gU is not None:
            gUSinv = gU / S.unsqueeze(-2)
            return (U @ J + gUSinv - U @ (U.mT @ gUSinv)) @ Vh
        if n > k and gVh is not None:
            SinvgVh = gVh / S.unsqueeze(-1)
            return U @ (J @ Vh + SinvgVh - (SinvgVh @ Vh.mT) @ Vh)
        return U @ J @ Vh


def eigh(A: Tensor):
    """(w, V) of symmetric A (..., n, n), read from its lower triangle: w ascending, A = V diag(w) V^T."""
    return _Eigh.apply(A)


def svd(A: Tensor):
    """(U, S, Vh) of A (..., m, n), reduced (k = min(m, n)): S descending, A = U diag(S) Vh."""
    return _SVD.apply(A)


def cutoff(S: Tensor, A: Tensor, atol, rtol) -> Tensor:
    """PyTorch's threshold for pinv and matrix_rank: max(atol, rtol * the largest of S), per matrix,
    keepdim; rtol defaults to eps * max(m, n) unless a positive atol is given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else torch.finfo(A.dtype.torch).eps * max(A.shape[-2:])
    top = _reduce.amax(S, -1, True) if S.shape[-1] else S.sum(-1, keepdim=True)
    return (top * rtol).clamp(min=atol) if atol is not None else top * rtol


class _Pinv(BuiltinFunction):
    node_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        if hermitian:
            w, V = eigh(A)
            inv_w = _where(w.abs() > cutoff(w.abs(), A, atol, rtol), 1 / w, 0.0)
            out = (V * inv_w.unsqueeze(-2)) @ V.mT
        else:
            U, S, Vh = svd(A)
            out = (Vh.mT * _where(S > cutoff(S, A, atol, rtol), 1 / S, 0.0).unsqueeze(-2)) @ U.mT
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, g):
        A, P = ctx.saved_tensors
        m, n = A.shape[-2:]
        Ph, gh = P.mT, g.mT
        if m <= n:
            K = gh @ P
            KPh = K @ Ph
            gA = -(P @ K).mT + KPh - (A @ P) @ KPh + (Ph @ P) @ (gh - K @ A)
        else:
            K = P @ gh
            PhK = Ph @ K
            gA = -(K @ P).mT + (gh - A @ K) @ P @ Ph + PhK - PhK @ P @ A
        return gA, None, None, None


def pinv(A: Tensor, atol=None, rtol=None, hermitian=False) -> Tensor:
    """The pseudo-inverse of A (..., m, n) from its SVD (``hermitian``: its eigendecomposition),
    singular values at or below ``cutoff`` taken as zero."""
    return _Pinv.apply(A, atol, rtol, bool(hermitian))
