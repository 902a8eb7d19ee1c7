"""PyTorch's top-level linear-algebra names and their Tensor methods (``torch.det``,
``Tensor.inverse``, the older spellings ``torch.svd``, ``torch.qr``, ``torch.cholesky``, ...) on
``tgrad.linalg``, listed with the op registry; ``tgrad/__init__`` imports this module, so they exist
from ``import tgrad`` on.

- ``svd(some=True, compute_uv=True)`` returns V (not V^T); with ``compute_uv=False`` U and V are
  zero-filled (m, m) and (n, n), as PyTorch's.
- ``cholesky_solve(B, L)``: X with (L L^T) X = B, two triangular solves; ``cholesky_inverse(L)``
  the same against I.
"""
from __future__ import annotations

from . import linalg as LA
from . import linalg_lu as _lu
from . import return_types
from .distributions._linalg import solve_lower
from .ops.registry import op
from .ops.random import eye as _eye

__all__ = ["det", "inverse", "logdet", "slogdet", "svd", "qr", "pinverse", "cholesky", "cholesky_solve",
           "cholesky_inverse", "lu_unpack", "matrix_exp"]

det = op("det")(LA.det)
inverse = op("inverse")(LA.inv)
logdet = op("logdet")(LA.logdet)
matrix_exp = op("matrix_exp")(LA.matrix_exp)


@op("slogdet")
def slogdet(input):  # noqa: A002
    return return_types.slogdet(*LA.slogdet(input))


@op("svd")
def svd(input, some=True, compute_uv=True):  # noqa: A002
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        S = LA.svdvals(input)
        return return_types.svd(S.new_zeros(batch + (m, m)), S, S.new_zeros(batch + (n, n)))
    U, S, Vh = LA.svd(input, full_matrices=not some)
    return return_types.svd(U, S, Vh.mT)


@op("qr")
def qr(input, some=True):  # noqa: A002
    return return_types.qr(*LA.qr(input, "reduced" if some else "complete"))


@op("pinverse")
def pinverse(input, rcond=1e-15):  # noqa: A002
    return LA.pinv(input, rtol=rcond)


@op("cholesky")
def cholesky(input, upper=False):  # noqa: A002
    return LA.cholesky(input, upper=upper)


@op("cholesky_solve")
def cholesky_solve(input, input2, upper=False):  # noqa: A002
    L = input2.mT if upper else input2
    return solve_lower(L, solve_lower(L, input), True)  # L^-T L^-1 B


@op("cholesky_inverse")
def cholesky_inverse(input, upper=False):  # noqa: A002
    return cholesky_solve(_eye(input.shape[-1], dtype=input.dtype, device=input.device), input, upper)


@op("lu_unpack", method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    return return_types.lu_unpack(*_lu.unpack(LU_data, _lu.perm_of(LU_pivots, LU_data.shape[-2])))

