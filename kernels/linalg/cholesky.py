"""Small dense linear algebra for batches of matrices (n up to a few hundred): triangular solves and
the Cholesky factorisation, one program per matrix, the whole matrix in registers.

Triangular solve, L lower triangular (its strict upper part is never read), B (n, m):
    forward substitution  X = L^-1 B:    x_i = (b_i - sum_{k<i} L_ik x_k) / L_ii,   i = 0 .. n-1
    transposed            X = L^-T B:    x_i = (b_i - sum_{k>i} L_ki x_k) / L_ii,   i = n-1 .. 0
Each step reads row i (or column i) of L out of the register tile with a masked sum; the rows of
X not yet solved are zero, so the entries of L outside the triangle multiply zeros.

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
def tri_solve_kernel(l_ptr, b_ptr, x_ptr, n, m, l_bs, l_rs, l_cs, b_bs, b_rs, b_cs,
                     TRANSPOSE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_M)
    nn_mask = (rows[:, None] < n) & (rows[None, :] < n)
    nm_mask = (rows[:, None] < n) & (cols[None, :] < m)
    L = tl.load(l_ptr + pid * l_bs + rows[:, None] * l_rs + rows[None, :] * l_cs, mask=nn_mask, other=0).to(COMPUTE)
    B = tl.load(b_ptr + pid * b_bs + rows[:, None] * b_rs + cols[None, :] * b_cs, mask=nm_mask, other=0).to(COMPUTE)
    X = tl.zeros([BLOCK_N, BLOCK_M], COMPUTE)
    for t in range(0, n):
        if TRANSPOSE:
            i = n - 1 - t
            coef = tl.sum(tl.where(rows[None, :] == i, L, 0.0), 1)  # column i of L, indexed by k
        else:
            i = t
            coef = tl.sum(tl.where(rows[:, None] == i, L, 0.0), 0)  # row i of L, indexed by k
        diag = tl.sum(tl.where(rows == i, coef, 0.0), 0)
        coef = tl.where(rows == i, 0.0, coef)
        b_i = tl.sum(tl.where(rows[:, None] == i, B, 0.0), 0)
        x_i = (b_i - tl.sum(coef[:, None] * X, 0)) / diag
        X = tl.where(rows[:, None] == i, x_i[None, :], X)
    tl.store(x_ptr + pid * n * m + rows[:, None] * m + cols[None, :], X.to(x_ptr.dtype.element_ty), mask=nm_mask)


@triton.jit
def cholesky_kernel(a_ptr, l_ptr, info_ptr, n, a_bs, a_rs, a_cs, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n) & (rows[None, :] < n)
    A = tl.load(a_ptr + pid * a_bs + rows[:, None] * a_rs + rows[None, :] * a_cs, mask=mask, other=0).to(COMPUTE)
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
