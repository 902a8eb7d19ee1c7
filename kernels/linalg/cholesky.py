"""Small dense linear algebra for batches of matrices (n up to a few hundred): triangular solves and
the Cholesky factorisation, one program per matrix, the whole matrix in registers.

Triangular solve, L lower triangular (its strict upper part is never read), B (n, m):
    forward substitution  X = L^-1 B:    x_i = (b_i - sum_{k<i} L_ik x_k) / L_ii,   i = 0 .. n-1
    transposed            X = L^-T B:    x_i = (b_i - sum_{k>i} L_ki x_k) / L_ii,   i = n-1 .. 0
Each step reads row i (or column i) of L out of the register tile with a masked sum; the rows of
X not yet solved are zero, and the entries of L outside the triangle are masked out.

Cholesky A = L L^T, column by column (A symmetric positive definite; only its lower part is read):
    v = A[:, j] - L[:, :j] L[j, :j]^T,   L_jj = sqrt(v_j),   L_ij = v_i / L_jj  (i > j)
A column whose pivot v_j is not positive stops the factorisation: ``info`` holds the order j + 1 of
the first leading minor that is not positive definite (0 when all are), as LAPACK reports it.
Accumulation is fp32 (fp64 for fp64 inputs).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import next_pow2

__all__ = ["solve_lower", "cholesky"]


@triton.jit
def load_tile(ptr, pid, bs, rs, cs, r, c, n_r, n_c, COMPUTE: tl.constexpr):
    """Matrix ``pid`` of a strided batch as a (len(r), len(c)) register tile, zero outside (n_r, n_c)."""
    mask = (r[:, None] < n_r) & (c[None, :] < n_c)
    return tl.load(ptr + pid * bs + r[:, None] * rs + c[None, :] * cs, mask=mask, other=0).to(COMPUTE)


@triton.jit
def substitute(T, Y, n, rows, FORWARD: tl.constexpr, BY_COLUMN: tl.constexpr, UNIT: tl.constexpr):
    """X with T' X = Y, T' the triangle of the tile T that the flags name: FORWARD solves top down
    with the part below the diagonal, backward bottom up with the part above; BY_COLUMN reads the
    transpose (columns of T); UNIT takes the diagonal as ones. Entries outside T' are never used."""
    X = tl.zeros_like(Y)
    for t in range(0, n):
        if FORWARD:
            i = t
        else:
            i = n - 1 - t
        if BY_COLUMN:
            coef = tl.sum(tl.where(rows[None, :] == i, T, 0.0), 1)
        else:
            coef = tl.sum(tl.where(rows[:, None] == i, T, 0.0), 0)
        diag = tl.sum(tl.where(rows == i, coef, 0.0), 0)
        if FORWARD:
            coef = tl.where(rows < i, coef, 0.0)
        else:
            coef = tl.where((rows > i) & (rows < n), coef, 0.0)
        x_i = tl.sum(tl.where(rows[:, None] == i, Y, 0.0), 0) - tl.sum(coef[:, None] * X, 0)
        if not UNIT:
            x_i = x_i / diag
        X = tl.where(rows[:, None] == i, x_i[None, :], X)
    return X


@triton.jit
def tri_solve_kernel(l_ptr, b_ptr, x_ptr, n, m, l_bs, l_rs, l_cs, b_bs, b_rs, b_cs,
                     TRANSPOSE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_M)
    L = load_tile(l_ptr, pid, l_bs, l_rs, l_cs, rows, rows, n, n, COMPUTE)
    B = load_tile(b_ptr, pid, b_bs, b_rs, b_cs, rows, cols, n, m, COMPUTE)
    X = substitute(L, B, n, rows, not TRANSPOSE, TRANSPOSE, False)
    nm_mask = (rows[:, None] < n) & (cols[None, :] < m)
    tl.store(x_ptr + pid * n * m + rows[:, None] * m + cols[None, :], X.to(x_ptr.dtype.element_ty), mask=nm_mask)


@triton.jit
def cholesky_kernel(a_ptr, l_ptr, info_ptr, n, a_bs, a_rs, a_cs, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    A = load_tile(a_ptr, pid, a_bs, a_rs, a_cs, rows, rows, n, n, COMPUTE)
    L = tl.zeros([BLOCK_N, BLOCK_N], COMPUTE)
    info = tl.full([], 0, tl.int32)
    for j in range(0, n):
        a_col = tl.sum(tl.where(rows[None, :] == j, A, 0.0), 1)   # A[:, j]
        l_row = tl.sum(tl.where(rows[:, None] == j, L, 0.0), 0)   # L[j, :] (zero from column j on)
        v = a_col - tl.sum(L * l_row[None, :], 1)
        pivot = tl.sum(tl.where(rows == j, v, 0.0), 0)
        # the first non-positive (or NaN) pivot: "pivot > 0" is false for both
        info = tl.where((info == 0) & ((pivot > 0) == 0), j + 1, info)
        d = tl.sqrt(tl.maximum(pivot, 0.0))
        col = tl.where(rows > j, v / d, tl.where(rows == j, d, 0.0))
        col = tl.where(rows < n, col, 0.0)
        L = tl.where(rows[None, :] == j, col[:, None], L)
    mask = (rows[:, None] < n) & (rows[None, :] < n)
    tl.store(l_ptr + pid * n * n + rows[:, None] * n + rows[None, :], L.to(l_ptr.dtype.element_ty), mask=mask)
    tl.store(info_ptr + pid, info)


def solve_lower(L: torch.Tensor, B: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    """X with L X = B (or L^T X = B), for L (batch, n, n) and B (batch, n, m): a new (batch, n, m)."""
    batch, n, m = B.shape
    X = torch.empty((batch, n, m), dtype=B.dtype, device=B.device)
    if X.numel() == 0:
        return X
    launch(tri_solve_kernel, (batch,), L, B, X, n, m, *L.stride(), *B.stride(), TRANSPOSE=transpose,
           COMPUTE=compute_dtype(B.dtype), BLOCK_N=max(next_pow2(n), 2), BLOCK_M=max(next_pow2(m), 2))
    return X


def cholesky(A: torch.Tensor):
    """(L, info) for A (batch, n, n): L lower triangular with A = L L^T; info (batch,) int32."""
    batch, n, _ = A.shape
    L = torch.empty((batch, n, n), dtype=A.dtype, device=A.device)
    info = torch.zeros((batch,), dtype=torch.int32, device=A.device)
    if batch == 0 or n == 0:
        return L, info
    launch(cholesky_kernel, (batch,), A, L, info, n, *A.stride(), COMPUTE=compute_dtype(A.dtype),
           BLOCK_N=max(next_pow2(n), 2))
    return L, info
