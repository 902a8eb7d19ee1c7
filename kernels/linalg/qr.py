"""QR by Householder reflections, for batches of small matrices: one program per matrix, the whole
matrix in registers (as the LU, Cholesky and Jacobi kernels).

For k = 0 .. min(m, n) - 1, with x = R[k:, k] (R starts as A (m, n), Q as I (m, m)):
    beta = -sign(x_0) |x|   (sign(0) = +1),   v = x - beta e_0,   v <- v / |v|
    R <- (I - 2 v v^T) R,   Q <- Q (I - 2 v v^T)
as LAPACK's geqrf/dlarfg choose it (so R's diagonal carries the same signs as PyTorch's); where x
has nothing below its first entry the reflection is the identity (dlarfg's tau = 0). Q (m, m) and
R (m, n) upper triangular come out whole; the reduced factors are their leading columns / rows.
Accumulation is fp32 (fp64 for fp64 inputs).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.launch import launch
from ..helpers.dtypes import compute_dtype
from ..helpers.layout import next_pow2
from .cholesky import load_tile

__all__ = ["qr"]


@triton.jit
def qr_kernel(a_ptr, q_ptr, r_ptr, m, n, steps, a_bs, a_rs, a_cs,
              COMPUTE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    R = load_tile(a_ptr, pid, a_bs, a_rs, a_cs, rows, cols, m, n, COMPUTE)
    mm = (rows[:, None] < m) & (rows[None, :] < m)
    Q = tl.where(mm & (rows[:, None] == rows[None, :]), 1.0, 0.0).to(COMPUTE)
    for k in range(0, steps):
        x = tl.sum(tl.where(cols[None, :] == k, R, 0.0), 1)
        below = (rows > k) & (rows < m)
        x_k = tl.sum(tl.where(rows == k, x, 0.0), 0)
        rest = tl.sum(tl.where(below, x * x, 0.0), 0)
        beta = tl.where(x_k >= 0, -1.0, 1.0) * tl.sqrt(x_k * x_k + rest)
        v = tl.where(rows == k, x_k - beta, tl.where(below, x, 0.0))
        v_norm = tl.sqrt(tl.sum(v * v, 0))
        v = tl.where(rest > 0, v / tl.where(v_norm > 0, v_norm, 1.0), 0.0)
        R = R - 2.0 * v[:, None] * tl.sum(v[:, None] * R, 0)[None, :]
        R = tl.where(below[:, None] & (cols[None, :] == k), 0.0, R)  # exact zeros under the diagonal
        Q = Q - 2.0 * tl.sum(Q * v[None, :], 1)[:, None] * v[None, :]
    tl.store(q_ptr + pid * m * m + rows[:, None] * m + rows[None, :], Q.to(q_ptr.dtype.element_ty), mask=mm)
    tl.store(r_ptr + pid * m * n + rows[:, None] * n + cols[None, :], R.to(r_ptr.dtype.element_ty),
             mask=(rows[:, None] < m) & (cols[None, :] < n))


def qr(A: torch.Tensor):
    """(Q, R) for A (batch, m, n): Q (batch, m, m) orthogonal, R (batch, m, n) upper triangular, A = Q R."""
    batch, m, n = A.shape
    Q = torch.empty((batch, m, m), dtype=A.dtype, device=A.device)
    R = torch.empty((batch, m, n), dtype=A.dtype, device=A.device)
    if batch == 0 or m == 0:
        return Q, R
    launch(qr_kernel, (batch,), A, Q, R, m, n, min(m, n), *A.stride(), COMPUTE=compute_dtype(A.dtype),
           BLOCK_M=max(next_pow2(m), 2), BLOCK_N=max(next_pow2(n), 2))
    return Q, R
