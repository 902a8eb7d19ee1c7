"""``MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)``, kept as its
Cholesky factor L (covariance L L^T):

    rsample = loc + L eps,   log p(x) = -(n log 2 pi + |L^-1 (x - loc)|^2) / 2 - sum log diag L
    entropy = n (1 + log 2 pi) / 2 + sum log diag L
A covariance matrix is factorised (``tgrad.kernels.linalg`` Cholesky); a precision matrix P = Lp Lp^T
gives the covariance Lp^-T Lp^-1 first. Solves are triangular-solve kernels, all differentiable."""
from __future__ import annotations

import math

import torch

import tgrad
from tgrad._dtype import Size
from ._linalg import cholesky, diagonal, solve_lower
from .distribution import Distribution

__all__ = ["MultivariateNormal"]


class MultivariateNormal(Distribution):
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if given.ndim < 2:
            name = ("scale_tril" if scale_tril is not None else "covariance_matrix" if covariance_matrix is not None
                    else "precision_matrix")
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             f"dimensions")
        batch = torch.broadcast_shapes(tuple(given.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        if given.shape[-1] != n or given.shape[-2] != n:
            raise ValueError(f"Incompatible shapes: loc {tuple(loc.shape)} and matrix {tuple(given.shape)}")
        self._given = (scale_tril, covariance_matrix, precision_matrix)
        self.loc = loc.expand(tuple(batch) + (n,))
        self._validate_now = validate_args if validate_args is not None else Distribution._validate_args
        if self._validate_now:
            self._check_matrix(scale_tril, covariance_matrix, precision_matrix)
        try:
            self._unbroadcasted_scale_tril = self._scale_tril_of(scale_tril, covariance_matrix, precision_matrix)
        except RuntimeError:  # not positive-definite: with validation, PyTorch's constraint error
            if self._validate_now and scale_tril is None:
                name = "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
                self._check_param(name, given, tgrad.tensor(False), "PositiveDefinite()")
            raise
        super().__init__(batch, (n,), validate_args)

    @staticmethod
    def _scale_tril_of(scale_tril, cov, prec):
        if scale_tril is not None:
            return scale_tril
        if cov is not None:
            return cholesky(cov)
        Lp = cholesky(prec)
        eye = tgrad.eye(Lp.shape[-1], dtype=Lp.dtype, device=Lp.device).expand(tuple(Lp.shape))
        inv_lp = solve_lower(Lp, eye)                       # Lp^-1
        return cholesky(solve_lower(Lp, inv_lp, transpose=True))  # chol(Lp^-T Lp^-1)

    def _check_matrix(self, scale_tril, cov, prec):
        if scale_tril is not None:
            ok = self._strict_upper_zero(scale_tril) & (diagonal(scale_tril) > 0).all()
            self._check_param("scale_tril", scale_tril, ok, "LowerCholesky()")
        else:
            m = cov if cov is not None else prec
            name = "covariance_matrix" if cov is not None else "precision_matrix"
            self._check_param(name, m, ((m - m.mT).abs() <= 1e-6 * (1 + m.abs())).all(), "PositiveDefinite()")

    @staticmethod
    def _strict_upper_zero(m):
        n = m.shape[-1]
        i = tgrad.arange(n, device=m.device)
        upper = (i[:, None] < i[None, :]).to(m.dtype)
        return ((m * upper) == 0).all()

    @property
    def scale_tril(self):
        if self._given[0] is not None:
            return self._given[0].expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def covariance_matrix(self):
        shape = tuple(self._batch_shape) + tuple(self._event_shape) * 2
        if self._given[1] is not None:  # the matrix given, as torch keeps it (its gradient passes straight)
            return self._given[1].expand(shape)
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(shape)

    @property
    def precision_matrix(self):
        if self._given[2] is not None:
            return self._given[2].expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)
        L = self._unbroadcasted_scale_tril
        n = L.shape[-1]
        eye = tgrad.eye(n, dtype=L.dtype, device=L.device).expand(tuple(L.shape))
        inv = solve_lower(L, eye)
        return (inv.mT @ inv).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @property
    def mean(self):
        return self.loc

    mode = mean

    @property
    def variance(self):
        L = self._unbroadcasted_scale_tril
        return (L ** 2).sum(-1).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        eps = self._noise(sample_shape, tgrad.randn, self.loc)
        # L eps as a broadcast product and a row sum: two launches for any batch (a batched matmul
        # of many tiny matrices is one program per matrix)
        return self.loc + (self._unbroadcasted_scale_tril * eps.unsqueeze(-2)).sum(-1)

    def _half_log_det(self):
        return diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        self._check_value(value, value == value if isinstance(value, tgrad.Tensor) else None,
                          "IndependentConstraint(Real(), 1)")
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + self._mahalanobis(value - self.loc)) - self._half_log_det()

    def _mahalanobis(self, diff):
        """|L^-1 diff|^2 over the last dim. Sample dims of ``diff`` become columns of one solve per
        batch matrix (not one solve per sample)."""
        batch = tuple(self._batch_shape)
        full = torch.broadcast_shapes(tuple(diff.shape[:-1]), batch)
        diff = diff.expand(full + (diff.shape[-1],))
        lead = full[:len(full) - len(batch)]
        k, n = len(batch), diff.shape[-1]
        cols = diff.reshape((-1,) + batch + (n,)).permute(*range(1, k + 2), 0)  # (batch..., n, S)
        z = solve_lower(self._unbroadcasted_scale_tril, cols)
        m = (z ** 2).sum(-2)                                                 # (batch..., S)
        return m.permute(k, *range(k)).reshape(lead + batch)

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if tuple(h.shape) != tuple(self._batch_shape) else h

    def __repr__(self):  # as PyTorch's: loc and the matrix given, at their broadcast shapes
        n = self.loc.shape[-1]
        name = next(k for k, m in zip(("scale_tril", "covariance_matrix", "precision_matrix"), self._given)
                    if m is not None)
        return f"MultivariateNormal(loc: {self.loc.size()}, {name}: {Size(tuple(self.loc.shape) + (n,))})"
