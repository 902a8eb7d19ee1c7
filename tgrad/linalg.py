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
"""
from __future__ import annotations

import math

import torch

from .distributions import _linalg
from .ops import reduce as _reduce
from .ops import statistics as _statistics
from .ops.matmul import matmul
from .ops.arrange import diagonal as _diagonal
from .ops.random import eye as _eye
from .ops.arrange import cumprod as _cumprod
from .ops.shape import cat as _cat
from .ops.factories import ones as _ones
from .ops.products import cross_along
from .tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "diagonal", "cholesky",
           "solve_triangular", "matrix_power", "multi_dot", "vander", "LinAlgError"]

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
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs singular values, which tgrad has no "
                                  "kernel for (it supports 'fro', 1, -1, inf and -inf)")
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
        raise NotImplementedError("linalg.matrix_power: a negative power needs the inverse, which tgrad has no "
                                  "kernel for")
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
