"""``tgrad.linalg``: the parts of ``torch.linalg`` that compose from tgrad's kernels.

- ``vector_norm``: tgrad's p-norm reduction (any real ord, +-inf, 0).
- ``matrix_norm``: 'fro' = the 2-norm over both dims; ord 1 / -1 = max / min over columns of the
  column sums of |A|; inf / -inf the same over rows (as PyTorch composes them, so the gradients
  at ties agree). 'nuc', 2 and -2 need singular values, which tgrad has no kernel for.
- ``norm``: a vector norm, or a matrix norm for a string ord or a 2-d A with a number ord.
- ``cross``, ``vecdot`` (sum(x * y, dim)), ``matmul``, ``diagonal``.
- ``matrix_power`` (n >= 0, by repeated squaring), ``multi_dot`` (left to right), ``vander``
  (a cumulative product of x, as PyTorch builds it).
- ``cholesky`` and ``solve_triangular`` on the triangular-solve and Cholesky kernels
  (``tgrad.kernels.linalg``); an upper-triangular system is the lower one transposed.
- ``lu_factor``/``lu_factor_ex``/``lu``/``lu_solve`` on the LU kernel with partial pivoting
  (``tgrad.linalg_lu``), and from them ``solve``/``solve_ex`` (X A = B as A^T X^T = B^T), ``inv``/
  ``inv_ex`` (a solve against I), ``det`` (det P times the product of U's diagonal), ``slogdet`` and
  ``logdet``; their gradients follow from those of the factorisation and the solve. (PyTorch's
  top-level names for these, ``torch.det`` and the like, are in ``tgrad.linalg_aliases``.)
- ``eigh``/``eigvalsh`` and ``svd``/``svdvals`` on the Jacobi kernels (``tgrad.linalg_spectral``), and
  from the singular values ``pinv``, ``matrix_rank``, ``lstsq`` (pinv(A) B, the minimum-norm
  solution, as the default gelsy driver reports it: rank, no residuals) and the matrix norms
  'nuc', 2 and -2; ``cond`` (2/-2 from singular values, the other orders as norm(A) norm(A^-1),
  inf for a singular A).
- ``matrix_exp``: scaling and squaring with the [13/13] Pade approximant (Higham 2005), one
  squaring count for the batch; its derivative is that of the composition (solve and products).
- ``qr`` on the Householder kernel (``tgrad.linalg_qr``), R's signs as LAPACK's.
"""
from __future__ import annotations

import math

import torch

from . import linalg_lu as _lu
from . import linalg_spectral as _spectral
from .linalg_qr import qr as _qr
from . import return_types
from .distributions import _linalg
from .ops import reduce as _reduce
from .ops import statistics as _statistics
from .ops.matmul import matmul
from .ops.arrange import diagonal as _diagonal
from .ops.random import eye as _eye
from .ops.arrange import cumprod as _cumprod
from .ops.joins import cat as _cat
from .ops.elementwise import where as _where
from .ops.factories import ones as _ones
from .ops.products import cross_along
from .tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "diagonal", "cholesky",
           "solve_triangular", "matrix_power", "multi_dot", "vander", "LinAlgError",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "solve", "solve_ex", "inv", "inv_ex", "det", "slogdet",
           "logdet", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq", "qr", "cond", "matrix_exp"]

LinAlgError = torch.linalg.LinAlgError


def _float_input(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg.{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype.scalar_type}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    _float_input(x, "vector_norm")
    if isinstance(ord, str):
        raise TypeError("linalg.vector_norm(): argument 'ord' must be Number, not str")
    if ord < 0 and x.numel() == 0:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                           "operation does not have an identity")
    return _statistics.norm(x, ord, dim, keepdim, dtype)


def _matrix_dims(A, dim, fn):
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")
    d0, d1 = (A._dim(d) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.{fn}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    _float_input(A, "matrix_norm")
    d0, d1 = _matrix_dims(A, dim, "matrix_norm")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return _statistics.norm(A, 2, (d0, d1), keepdim)
    if ord in (1, -1, math.inf, -math.inf):
        if ord in (math.inf, -math.inf):
            d0, d1 = d1, d0
        sums = A.abs().sum(d0, keepdim=True)
        out = _reduce.amax(sums, d1, True) if ord > 0 else _reduce.amin(sums, d1, True)
        return out if keepdim else out.squeeze((d0, d1) if d0 < d1 else (d1, d0))
    if ord in ("nuc", 2, -2):
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        out = S.sum(-1) if ord == "nuc" else (_reduce.amax(S, -1) if ord == 2 else _reduce.amin(S, -1))
        return out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1)) if keepdim else out
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(ord, str) or (ord is not None and dim is not None and len(dim) == 2) or \
            (ord is not None and dim is None and A.ndim == 2):
        if dim is None and A.ndim != 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if ord is not None and dim is None and A.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.ndim}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1):  # noqa: A002
    return cross_along(input, other, dim, "linalg.cross")


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _diagonal(A, offset, dim1, dim2)


def cholesky(A, *, upper=False):
    L = _linalg.cholesky(A)
    return L.mT if upper else L


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    if unitriangular:
        n = A.shape[-1]
        eye = _eye(n, dtype=A.dtype, device=A.device)
        A = A * (1 - eye) + eye
    if upper:  # U X = B  <=>  (U^T)^T X = B, U^T lower
        return _linalg.solve_lower(A.mT, B, transpose=True)
    return _linalg.solve_lower(A, B)


def matrix_power(A, n):
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim >= 2 else None} by {A.shape[-1] if A.ndim else None} matrices")
    if n < 0:
        A, n = inv(A), -n
    if n == 0:
        return _eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(*A.shape).clone()
    result, square = None, A
    while n:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result


def multi_dot(tensors):
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if t.ndim != 2 and not (t.ndim == 1 and i in (0, len(tensors) - 1)):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    if first_vec:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vec:
        tensors[-1] = tensors[-1].unsqueeze(1)
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    if first_vec:
        out = out.squeeze(0)
    if last_vec:
        out = out.squeeze(-1)
    return out


def vander(x, *, N=None):
    n = (x.shape[-1] if x.ndim else 0) if N is None else N
    if n <= 1 or x.ndim < 1:
        raise RuntimeError("N must be greater than 1.")
    ones = _ones((*x.shape, 1), dtype=x.dtype, device=x.device)
    return _cumprod(_cat([ones, x.unsqueeze(-1).expand(*x.shape, n - 1)], -1), -1)


def _square(A, fn):
    _float_input(A, fn)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _factor(A, fn, pivot=True):
    """(LU, pivots, info) of A, after PyTorch's checks of ``fn``."""
    _float_input(A, fn)
    if A.ndim < 2:
        raise RuntimeError(f"torch.{fn}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           "instead")
    if not pivot:
        raise RuntimeError(f"linalg.{fn}: LU without pivoting is not implemented on the CPU")
    return _lu.lu_factor(A)


def _singular_u(fn):
    return lambda i: (f"torch.linalg.{fn}: U[{i},{i}] is zero and using it on lu_solve would result in a division "
                      "by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) "
                      "or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    LU, pivots, info = _factor(A, "lu_factor", pivot)
    if check_errors:
        _lu.raise_if_failed(info, A.ndim > 2, _singular_u("lu_factor_ex"))
    return return_types.linalg_lu_factor_ex(LU, pivots, info)


def lu_factor(A, *, pivot=True):
    LU, pivots, info = _factor(A, "lu_factor", pivot)
    _lu.raise_if_failed(info, A.ndim > 2, _singular_u("lu_factor"))
    return return_types.linalg_lu_factor(LU, pivots)


def lu(A, *, pivot=True):
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    LU, pivots, _ = _factor(A, "lu", pivot)
    return return_types.linalg_lu(*_lu.unpack(LU, _lu.perm_of(pivots, A.shape[-2])))


def _rhs(A, B, left, fn):
    """B as the right-hand side (..., n, k) of the A X = B (or A^T X = B^T) that is solved, and
    whether B was a vector."""
    if B.dtype != A.dtype:
        raise RuntimeError(f"linalg.{fn}: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.scalar_type} and B of type {B.dtype.scalar_type} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector and not left:
        raise RuntimeError(f"linalg.{fn}: Vector broadcasting of the left hand side is not supported for left=False. "
                           f"In this case linalg.{fn} is equivalent to B / A.squeeze(-1)")
    if vector:
        B = B.unsqueeze(-1)
    rhs = B if left else B.mT
    if rhs.ndim < 2 or rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.{fn}: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} = B"
                           f" ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2] if B.ndim >= 2 else None}x"
                           f"{B.shape[-1] if B.ndim else None})")
    return rhs, vector


def _solved(LU, pivots, rhs, vector, left, adjoint=False):
    """The solution of the system ``_rhs`` set up: left, A X = B; else X A = B, i.e. A^T X^T = B^T
    (``adjoint``: A^T in place of A)."""
    X = _lu.lu_solve(LU, _lu.perm_of(pivots, LU.shape[-1]), rhs, adjoint=adjoint == left)
    return X.squeeze(-1) if vector else (X if left else X.mT)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2] if LU.ndim >= 2 else None} by {LU.shape[-1] if LU.ndim else None} matrices")
    rhs, vector = _rhs(LU, B, left, "lu_solve")
    return _solved(LU, pivots, rhs, vector, left, adjoint)


def solve_ex(A, B, *, left=True, check_errors=False):
    _square(A, "solve")
    rhs, vector = _rhs(A, B, left, "solve")
    LU, pivots, info = _lu.lu_factor(A)
    if check_errors:
        _lu.raise_if_failed(info, A.ndim > 2, lambda i: "torch.linalg.solve_ex: The solver failed because the input "
                            "matrix is singular.", LinAlgError)
    return return_types.linalg_solve_ex(_solved(LU, pivots, rhs, vector, left), info)


def solve(A, B, *, left=True):
    _square(A, "solve")
    rhs, vector = _rhs(A, B, left, "solve")
    LU, pivots, info = _lu.lu_factor(A)
    _lu.raise_if_failed(info, A.ndim > 2, lambda i: "torch.linalg.solve: The solver failed because the input matrix "
                        "is singular.", LinAlgError)
    return _solved(LU, pivots, rhs, vector, left)


def _inverse(A, fn, check_errors):
    _square(A, fn)
    LU, pivots, info = _lu.lu_factor(A)
    if check_errors:
        _lu.raise_if_failed(info, A.ndim > 2, lambda i: f"linalg.{fn}: The diagonal element {i} is zero, the inversion "
                            "could not be completed because the input matrix is singular.", LinAlgError)
    eye = _eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return _solved(LU, pivots, eye, False, True), info


def inv_ex(A, *, check_errors=False):
    return return_types.linalg_inv_ex(*_inverse(A, "inv_ex", check_errors))


def inv(A):
    return _inverse(A, "inv", True)[0]


def det(A):
    _square(A, "det")
    LU, pivots, _ = _lu.lu_factor(A)
    return _diagonal(LU, 0, -2, -1).prod(-1) * _lu.perm_sign(pivots, A.dtype)


def _slogdet(A, fn):
    _square(A, fn)
    LU, pivots, _ = _lu.lu_factor(A)
    d = _diagonal(LU, 0, -2, -1)
    return _lu.perm_sign(pivots, A.dtype) * d.sign().prod(-1), d.abs().log().sum(-1)


def slogdet(A):
    return return_types.linalg_slogdet(*_slogdet(A, "slogdet"))


def logdet(A):
    sign, logabsdet = _slogdet(A, "logdet")
    return _where(sign < 0, math.nan, logabsdet)



def _uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO == "U"


def eigh(A, UPLO="L"):
    _square(A, "eigh")
    return return_types.linalg_eigh(*_spectral.eigh(A.mT if _uplo(UPLO) else A))


def eigvalsh(A, UPLO="L"):
    _square(A, "eigvalsh")
    return _spectral.eigh(A.mT if _uplo(UPLO) else A)[0]


def _at_least_2d(A, fn):
    _float_input(A, fn)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")


def _completed(W):
    """W (..., r, k) with orthonormal columns, extended to an orthogonal (..., r, r): the other
    columns of Q in W = Q R. They carry no gradient (PyTorch's derivative ignores them too)."""
    return _cat([W, _qr(W.detach(), "complete")[0][..., W.shape[-1]:]], -1)


def svd(A, full_matrices=True, *, driver=None):
    _at_least_2d(A, "svd")
    U, S, Vh = _spectral.svd(A)
    m, n = A.shape[-2:]
    if full_matrices and m > n:
        U = _completed(U)
    elif full_matrices and m < n:
        Vh = _completed(Vh.mT).mT
    return return_types.linalg_svd(U, S, Vh)


def svdvals(A, *, driver=None):
    _at_least_2d(A, "svdvals")
    return _spectral.svd(A)[1]


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    _at_least_2d(A, "pinv")
    return _spectral.pinv(A, atol, rtol, hermitian)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    _float_input(A, "matrix_rank")
    S = _spectral.eigh(A)[0].abs() if hermitian else _spectral.svd(A)[1]
    return (S > _spectral.cutoff(S, A, atol, rtol)).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    _at_least_2d(A, "lstsq")
    if B.ndim < 2 or B.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    X = pinv(A, rtol=rcond) @ B
    empty = A.new_zeros((0,))
    return return_types.linalg_lstsq(X, empty, matrix_rank(A.detach(), rtol=rcond), empty)


def qr(A, mode="reduced"):
    _at_least_2d(A, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    return return_types.linalg_qr(*_qr(A, mode))


def cond(A, p=None):
    _at_least_2d(A, "cond")
    if p in (None, 2, -2):
        S = svdvals(A)
        big, small = _reduce.amax(S, -1), _reduce.amin(S, -1)
        return small / big if p == -2 else big / small
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are {A.shape[-2]} "
                           f"by {A.shape[-1]} matrices")
    inverse, info = _inverse(A, "cond", False)
    return _where(info > 0, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)


def matrix_exp(A):
    _square(A, "matrix_exp")
    if A.numel() == 0:
        return A.clone()
    b = _PADE13
    norm = float(_reduce.amax(A.abs().sum(-2), -1).max())  # the 1-norm, the largest of the batch
    squarings = max(0, math.ceil(math.log2(norm / 5.371920351148152))) if norm > 0 and math.isfinite(norm) else 0
    A = A / 2.0 ** squarings
    eye = _eye(A.shape[-1], dtype=A.dtype, device=A.device)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = solve(V - U, V + U)
    for _ in range(squarings):
        R = R @ R
    return R
