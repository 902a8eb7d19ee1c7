"""LU factorisation with partial pivoting and the solves on it, for batches of small dense matrices:
one program per matrix, the whole matrix in registers (as the Cholesky kernel).

Factorisation of A (m, n), LAPACK's getf2 step by step, k = 0 .. min(m, n) - 1:
    p = the first row i >= k with the largest |A_ik|;  swap rows k and p;  pivots[k] = p + 1
    l_i = A_ik / A_kk (i > k),   A_ij -= l_i A_kj (i, j > k),   A_ik = l_i
giving P^T A = L U packed in one matrix (L unit lower below the diagonal, U on and above it). A zero
pivot leaves its column unscaled and sets ``info`` to k + 1 (the first such k), as LAPACK reports a
singular U; the factorisation goes on.

``perm``: the row order the swaps produce, (P^T A)_i = A_perm[i], so P[perm[i], i] = 1.

Solves with the packed factors of a square A = P L U, B (n, m):
    A X = B:     L Y = B[perm] (forward, unit diagonal),   U X = Y (backward)
    A^T X = B:   U^T W = B (forward),   L^T Z = W (backward, unit diagonal),   X[perm] = Z
The substitutions are the triangular solve's (``cholesky.substitute``). Accumulation is fp32 (fp64
for fp64 inputs).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import next_pow2
from .cholesky import load_tile, substitute

__all__ = ["lu_factor", "pivots_to_perm", "lu_solve"]


@triton.jit
def lu_factor_kernel(a_ptr, lu_ptr, piv_ptr, info_ptr, m, n, steps, a_bs, a_rs, a_cs,
                     COMPUTE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    A = load_tile(a_ptr, pid, a_bs, a_rs, a_cs, rows, cols, m, n, COMPUTE)
    piv = tl.zeros([BLOCK_M], tl.int32)
    info = tl.full([], 0, tl.int32)
    for k in range(0, steps):
        col = tl.sum(tl.where(cols[None, :] == k, A, 0.0), 1)
        live = (rows >= k) & (rows < m)
        cand = tl.where(live, tl.abs(col), -1.0)
        best = tl.max(cand, 0)
        p = tl.min(tl.where(live & (cand == best), rows, BLOCK_M), 0)
        p = tl.where(p < m, p, k)  # a NaN column matches no maximum: keep row k
        row_k = tl.sum(tl.where(rows[:, None] == k, A, 0.0), 0)
        row_p = tl.sum(tl.where(rows[:, None] == p, A, 0.0), 0)
        A = tl.where(rows[:, None] == k, row_p[None, :], tl.where(rows[:, None] == p, row_k[None, :], A))
        piv = tl.where(rows == k, p + 1, piv)
        pivot = tl.sum(tl.where(cols == k, row_p, 0.0), 0)
        info = tl.where((info == 0) & (pivot == 0), k + 1, info)
        col = tl.sum(tl.where(cols[None, :] == k, A, 0.0), 1)
        below = (rows > k) & (rows < m)
        l = tl.where(below, col / tl.where(pivot == 0, 1.0, pivot), 0.0)  # a zero pivot: column left as is
        A = tl.where(below[:, None] & (cols[None, :] > k), A - l[:, None] * row_p[None, :], A)
        A = tl.where(below[:, None] & (cols[None, :] == k), l[:, None], A)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(lu_ptr + pid * m * n + rows[:, None] * n + cols[None, :], A.to(lu_ptr.dtype.element_ty), mask=mask)
    tl.store(piv_ptr + pid * steps + rows, piv, mask=rows < steps)
    tl.store(info_ptr + pid, info)


@triton.jit
def pivots_to_perm_kernel(piv_ptr, perm_ptr, m, steps, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    perm = rows
    for k in range(0, steps):
        p = tl.load(piv_ptr + pid * steps + k).to(tl.int32) - 1
        at_k = tl.sum(tl.where(rows == k, perm, 0), 0)
        at_p = tl.sum(tl.where(rows == p, perm, 0), 0)
        perm = tl.where(rows == k, at_p, tl.where(rows == p, at_k, perm))
    tl.store(perm_ptr + pid * m + rows, perm, mask=rows < m)


@triton.jit
def lu_solve_kernel(lu_ptr, perm_ptr, b_ptr, x_ptr, n, m, lu_bs, lu_rs, lu_cs, perm_bs, b_bs, b_rs, b_cs,
                    TRANSPOSE: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    cols = tl.arange(0, BLOCK_M)
    LU = load_tile(lu_ptr, pid, lu_bs, lu_rs, lu_cs, rows, rows, n, n, COMPUTE)
    perm = tl.load(perm_ptr + pid * perm_bs + rows, mask=rows < n, other=0).to(tl.int64)
    nm_mask = (rows[:, None] < n) & (cols[None, :] < m)
    x_rows = pid * n * m + cols[None, :]
    if TRANSPOSE:
        B = load_tile(b_ptr, pid, b_bs, b_rs, b_cs, rows, cols, n, m, COMPUTE)
        W = substitute(LU, B, n, rows, True, True, False)
        Z = substitute(LU, W, n, rows, False, True, True)
        tl.store(x_ptr + x_rows + perm[:, None] * m, Z.to(x_ptr.dtype.element_ty), mask=nm_mask)
    else:
        B = tl.load(b_ptr + pid * b_bs + perm[:, None] * b_rs + cols[None, :] * b_cs, mask=nm_mask, other=0)
        Y = substitute(LU, B.to(COMPUTE), n, rows, True, False, True)
        X = substitute(LU, Y, n, rows, False, False, False)
        tl.store(x_ptr + x_rows + rows[:, None] * m, X.to(x_ptr.dtype.element_ty), mask=nm_mask)


def lu_factor(A: torch.Tensor):
    """(LU, pivots, info) for A (batch, m, n): LU (batch, m, n) packed, pivots (batch, min(m, n))
    1-based int32 row swaps, info (batch,) int32 (0, or the first zero pivot's 1-based index)."""
    batch, m, n = A.shape
    steps = min(m, n)
    LU = torch.empty((batch, m, n), dtype=A.dtype, device=A.device)
    piv = torch.empty((batch, steps), dtype=torch.int32, device=A.device)
    info = torch.zeros((batch,), dtype=torch.int32, device=A.device)
    if batch == 0 or steps == 0:
        return LU, piv, info
    launch(lu_factor_kernel, (batch,), A, LU, piv, info, m, n, steps, *A.stride(), COMPUTE=compute_dtype(A.dtype),
           BLOCK_M=max(next_pow2(m), 2), BLOCK_N=max(next_pow2(n), 2))
    return LU, piv, info


def pivots_to_perm(pivots: torch.Tensor, m: int) -> torch.Tensor:
    """The row order (batch, m) int32 that the 1-based swaps ``pivots`` (batch, steps) produce."""
    batch, steps = pivots.shape
    perm = torch.empty((batch, m), dtype=torch.int32, device=pivots.device)
    if perm.numel():
        launch(pivots_to_perm_kernel, (batch,), pivots.contiguous(), perm, m, steps, BLOCK_M=max(next_pow2(m), 2))
    return perm


def lu_solve(LU: torch.Tensor, perm: torch.Tensor, B: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    """X with A X = B (``transpose``: A^T X = B), A = P L U given as the packed LU (batch, n, n) and
    its row order ``perm`` (batch, n); B (batch, n, m). A new (batch, n, m)."""
    batch, n, m = B.shape
    X = torch.empty((batch, n, m), dtype=B.dtype, device=B.device)
    if X.numel() == 0:
        return X
    launch(lu_solve_kernel, (batch,), LU, perm, B, X, n, m, *LU.stride(), perm.stride(0), *B.stride(),
           TRANSPOSE=transpose, COMPUTE=compute_dtype(B.dtype), BLOCK_N=max(next_pow2(n), 2),
           BLOCK_M=max(next_pow2(m), 2))
    return X
