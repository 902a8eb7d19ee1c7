"""Symmetric eigendecomposition and singular value decomposition by cyclic Jacobi rotations, for
batches of small matrices: one program per matrix, the whole matrix in registers (as the LU and
Cholesky kernels).

A (n, n) is symmetric, read from its lower triangle (its strict upper part is never read). A sweep
visits every pair p < q once and zeroes A_pq with the rotation J (J_pp = J_qq = c, J_pq = s,
J_qp = -s) of Golub and Van Loan's sym.schur2:
    theta = (A_qq - A_pp) / (2 A_pq),   t = sign(theta) / (|theta| + sqrt(theta^2 + 1)),
    c = 1 / sqrt(t^2 + 1),   s = t c,   A <- J^T A J,   V <- V J
Sweeps repeat until the off-diagonal part is below ``tol`` times the whole (Frobenius norms), at
most ``max_sweeps`` times (convergence is quadratic: a few sweeps in practice). The eigenvalues,
the diagonal of A, are then sorted ascending with their columns of V (as LAPACK's syevd orders
them).

One launch is one sweep over every matrix of the batch, on work copies of A (G) and V that it
reads and writes back, and it reports each matrix's convergence measure; the host launches sweeps
until all have converged, then a launch sorts. (A data-dependent ``while`` inside one kernel would
do the same; the CPU executor replays such a loop, but one trace variant per pattern of sweep counts
across the batch, at most eight per signature, so host-driven sweeps replay more often.)

SVD of G = A (m, n), m >= n (a wide A is decomposed as A^T), one-sided (Hestenes) Jacobi: each pair
of columns p < q is made orthogonal by the rotation that diagonalises their Gram matrix
[[a, g], [g, b]] (a = |G_p|^2, b = |G_q|^2, g = G_p . G_q), the same (c, s) as above with
theta = (b - a) / (2 g); G <- G J, V <- V J. Sweeps repeat until every |g| <= tol sqrt(a b). Then
sigma_j = |G_j|, U_j = G_j / sigma_j, sorted descending: A = U diag(sigma) V^T; the columns of
a zero sigma are completed to orthonormal ones by a QR of U.
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
from .qr import qr

__all__ = ["eigh", "svd"]


@triton.jit
def _rotate(M, p, q, c, s, rows, BY_ROW: tl.constexpr):
    """M with its rows (BY_ROW: M <- J^T M) or columns (M <- M J) p and q rotated by (c, s)."""
    if BY_ROW:
        m_p = tl.sum(tl.where(rows[:, None] == p, M, 0.0), 0)
        m_q = tl.sum(tl.where(rows[:, None] == q, M, 0.0), 0)
        M = tl.where(rows[:, None] == p, (c * m_p - s * m_q)[None, :], M)
        M = tl.where(rows[:, None] == q, (s * m_p + c * m_q)[None, :], M)
    else:
        m_p = tl.sum(tl.where(rows[None, :] == p, M, 0.0), 1)
        m_q = tl.sum(tl.where(rows[None, :] == q, M, 0.0), 1)
        M = tl.where(rows[None, :] == p, (c * m_p - s * m_q)[:, None], M)
        M = tl.where(rows[None, :] == q, (s * m_p + c * m_q)[:, None], M)
    return M


@triton.jit
def _swap_columns(M, k, j, cols):
    """M with its columns k and j exchanged."""
    m_k = tl.sum(tl.where(cols[None, :] == k, M, 0.0), 1)
    m_j = tl.sum(tl.where(cols[None, :] == j, M, 0.0), 1)
    return tl.where(cols[None, :] == k, m_j[:, None], tl.where(cols[None, :] == j, m_k[:, None], M))


@triton.jit
def _rotation(a, b, g):
    """(c, s) of the rotation that zeroes g in [[a, g], [g, b]]; the identity where g = 0."""
    theta = (b - a) / (2.0 * tl.where(g == 0, 1.0, g))
    t = tl.where(theta >= 0, 1.0, -1.0) / (tl.abs(theta) + tl.sqrt(theta * theta + 1.0))
    t = tl.where(g == 0, 0.0, t)
    c = 1.0 / tl.sqrt(t * t + 1.0)
    return c, t * c


@triton.jit
def eigh_sweep_kernel(a_ptr, w_ptr, v_ptr, off_ptr, n, a_bs, a_rs, a_cs,
                      FIRST: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    square = (rows[:, None] < n) & (rows[None, :] < n)
    work = pid * n * n + rows[:, None] * n + rows[None, :]
    if FIRST:
        low = load_tile(a_ptr, pid, a_bs, a_rs, a_cs, rows, rows, n, n, COMPUTE)
        low_t = load_tile(a_ptr, pid, a_bs, a_cs, a_rs, rows, rows, n, n, COMPUTE)  # its upper part is A's lower
        A = tl.where(rows[:, None] >= rows[None, :], low, low_t)
        V = tl.where(square & (rows[:, None] == rows[None, :]), 1.0, 0.0).to(COMPUTE)
    else:
        A = tl.load(w_ptr + work, mask=square, other=0).to(COMPUTE)
        V = tl.load(v_ptr + work, mask=square, other=0).to(COMPUTE)
    for p in range(0, n - 1):
        for q in range(p + 1, n):
            row_p = tl.sum(tl.where(rows[:, None] == p, A, 0.0), 0)
            a_pp = tl.sum(tl.where(rows == p, row_p, 0.0), 0)
            a_pq = tl.sum(tl.where(rows == q, row_p, 0.0), 0)
            a_qq = tl.sum(tl.sum(tl.where((rows[:, None] == q) & (rows[None, :] == q), A, 0.0), 1), 0)
            c, s = _rotation(a_pp, a_qq, a_pq)
            A = _rotate(_rotate(A, p, q, c, s, rows, True), p, q, c, s, rows, False)
            pq = ((rows[:, None] == p) & (rows[None, :] == q)) | ((rows[:, None] == q) & (rows[None, :] == p))
            A = tl.where(pq, 0.0, A)  # zero by construction; rounding would leave ~eps |A| there
            V = _rotate(V, p, q, c, s, rows, False)
    total = tl.sum(tl.sum(A * A, 1), 0)
    off = tl.sum(tl.sum(tl.where(rows[:, None] != rows[None, :], A * A, 0.0), 1), 0)
    tl.store(w_ptr + work, A.to(w_ptr.dtype.element_ty), mask=square)
    tl.store(v_ptr + work, V.to(v_ptr.dtype.element_ty), mask=square)
    tl.store(off_ptr + pid, tl.sqrt(off / tl.where(total > 0, total, 1.0)).to(off_ptr.dtype.element_ty))


@triton.jit
def eigh_sort_kernel(w_ptr, v_ptr, vals_ptr, vecs_ptr, n, COMPUTE: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_N)
    square = (rows[:, None] < n) & (rows[None, :] < n)
    work = pid * n * n + rows[:, None] * n + rows[None, :]
    A = tl.load(w_ptr + work, mask=square, other=0).to(COMPUTE)
    V = tl.load(v_ptr + work, mask=square, other=0).to(COMPUTE)
    w = tl.sum(tl.where(rows[:, None] == rows[None, :], A, 0.0), 1)
    for k in range(0, n):  # selection sort, ascending; V's columns follow
        live = (rows >= k) & (rows < n)
        cand = tl.where(live, w, float("inf"))
        best = tl.min(cand, 0)
        j = tl.min(tl.where(live & (cand == best), rows, BLOCK_N), 0)
        j = tl.where(j < n, j, k)  # NaN: no minimum, no swap
        w_k = tl.sum(tl.where(rows == k, w, 0.0), 0)
        w_j = tl.sum(tl.where(rows == j, w, 0.0), 0)
        w = tl.where(rows == k, w_j, tl.where(rows == j, w_k, w))
        V = _swap_columns(V, k, j, rows)
    tl.store(vals_ptr + pid * n + rows, w.to(vals_ptr.dtype.element_ty), mask=rows < n)
    tl.store(vecs_ptr + work, V.to(vecs_ptr.dtype.element_ty), mask=square)


@triton.jit
def _svd_work(pid, m, n, rows, cols):
    """Masks and offsets of matrix ``pid`` in the contiguous work buffers G (m, n) and V (n, n)."""
    mn = (rows[:, None] < m) & (cols[None, :] < n)
    square = (cols[:, None] < n) & (cols[None, :] < n)
    return mn, square, pid * m * n + rows[:, None] * n + cols[None, :], pid * n * n + cols[:, None] * n + cols[None, :]


@triton.jit
def svd_sweep_kernel(a_ptr, g_ptr, v_ptr, off_ptr, m, n, a_bs, a_rs, a_cs,
                     FIRST: tl.constexpr, COMPUTE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mn, square, g_work, v_work = _svd_work(pid, m, n, rows, cols)
    if FIRST:
        G = load_tile(a_ptr, pid, a_bs, a_rs, a_cs, rows, cols, m, n, COMPUTE)
        V = tl.where(square & (cols[:, None] == cols[None, :]), 1.0, 0.0).to(COMPUTE)
    else:
        G = tl.load(g_ptr + g_work, mask=mn, other=0).to(COMPUTE)
        V = tl.load(v_ptr + v_work, mask=square, other=0).to(COMPUTE)
    worst = tl.full([], 0.0, COMPUTE)
    for p in range(0, n - 1):
        for q in range(p + 1, n):
            g_p = tl.sum(tl.where(cols[None, :] == p, G, 0.0), 1)
            g_q = tl.sum(tl.where(cols[None, :] == q, G, 0.0), 1)
            a = tl.sum(g_p * g_p, 0)
            b = tl.sum(g_q * g_q, 0)
            g = tl.sum(g_p * g_q, 0)
            scale = tl.sqrt(a * b)
            worst = tl.maximum(worst, tl.where(scale > 0, tl.abs(g) / tl.where(scale > 0, scale, 1.0), 0.0))
            c, s = _rotation(a, b, g)
            G = tl.where(cols[None, :] == p, (c * g_p - s * g_q)[:, None],
                         tl.where(cols[None, :] == q, (s * g_p + c * g_q)[:, None], G))
            V = _rotate(V, p, q, c, s, cols, False)
    tl.store(g_ptr + g_work, G.to(g_ptr.dtype.element_ty), mask=mn)
    tl.store(v_ptr + v_work, V.to(v_ptr.dtype.element_ty), mask=square)
    tl.store(off_ptr + pid, worst.to(off_ptr.dtype.element_ty))


@triton.jit
def svd_sort_kernel(g_ptr, v_ptr, u_ptr, s_ptr, vecs_ptr, m, n,
                    COMPUTE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mn, square, g_work, v_work = _svd_work(pid, m, n, rows, cols)
    G = tl.load(g_ptr + g_work, mask=mn, other=0).to(COMPUTE)
    V = tl.load(v_ptr + v_work, mask=square, other=0).to(COMPUTE)
    sigma = tl.sqrt(tl.sum(G * G, 0))
    for k in range(0, n):  # selection sort, descending; the columns of G and V follow
        live = (cols >= k) & (cols < n)
        cand = tl.where(live, sigma, -1.0)
        best = tl.max(cand, 0)
        j = tl.min(tl.where(live & (cand == best), cols, BLOCK_N), 0)
        j = tl.where(j < n, j, k)
        s_k = tl.sum(tl.where(cols == k, sigma, 0.0), 0)
        s_j = tl.sum(tl.where(cols == j, sigma, 0.0), 0)
        sigma = tl.where(cols == k, s_j, tl.where(cols == j, s_k, sigma))
        G = _swap_columns(G, k, j, cols)
        V = _swap_columns(V, k, j, cols)
    U = G / tl.where(sigma == 0, 1.0, sigma)[None, :]
    tl.store(u_ptr + g_work, U.to(u_ptr.dtype.element_ty), mask=mn)
    tl.store(s_ptr + pid * n + cols, sigma.to(s_ptr.dtype.element_ty), mask=cols < n)
    tl.store(vecs_ptr + v_work, V.to(vecs_ptr.dtype.element_ty), mask=square)


def _warps(block):
    """A GPU program holds whole matrices (and V): past 16 rows over 8 warps, as at 4 a 32 x 32 fp64
    sweep spilled 64 B a thread and a 64 x 64 one 1 KB."""
    return 8 if block >= 32 else 4


def _work_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def _sweep(kernel, grid, A, work, V, off, sizes, max_sweeps, **meta):
    """Launch sweeps until every matrix's measure is at most the compute precision (or max_sweeps)."""
    tol = torch.finfo(off.dtype).eps
    for first in range(max_sweeps):
        launch(kernel, grid, A, work, V, off, *sizes, *A.stride(), FIRST=first == 0, **meta)
        if not max(off.tolist()) > tol:  # a host read of the measures (NaN stops too)
            break


def eigh(A: torch.Tensor, max_sweeps: int = 30):
    """(w, V) for symmetric A (batch, n, n) read from its lower triangle: eigenvalues w (batch, n)
    ascending and orthonormal eigenvectors, the columns of V (batch, n, n), with A V = V diag(w)."""
    batch, n, _ = A.shape
    w = torch.empty((batch, n), dtype=A.dtype, device=A.device)
    V = torch.empty((batch, n, n), dtype=A.dtype, device=A.device)
    if batch == 0 or n == 0:
        return w, V
    wd = _work_dtype(A.dtype)
    work, vwork = (torch.empty((batch, n, n), dtype=wd, device=A.device) for _ in range(2))
    off = torch.empty((batch,), dtype=wd, device=A.device)
    block = max(next_pow2(n), 2)
    meta = dict(COMPUTE=compute_dtype(A.dtype), BLOCK_N=block, num_warps=_warps(block))
    _sweep(eigh_sweep_kernel, (batch,), A, work, vwork, off, (n,), max_sweeps, **meta)
    launch(eigh_sort_kernel, (batch,), work, vwork, w, V, n, **meta)
    return w, V


def svd(A: torch.Tensor, max_sweeps: int = 30):
    """(U, S, V) for A (batch, m, n) with m >= n: U (batch, m, n) with orthonormal columns, S (batch,
    n) descending, V (batch, n, n) orthogonal, A = U diag(S) V^T."""
    batch, m, n = A.shape
    U = torch.empty((batch, m, n), dtype=A.dtype, device=A.device)
    S = torch.empty((batch, n), dtype=A.dtype, device=A.device)
    V = torch.empty((batch, n, n), dtype=A.dtype, device=A.device)
    if batch == 0 or n == 0:
        return U, S, V
    wd = _work_dtype(A.dtype)
    work, vwork = torch.empty((batch, m, n), dtype=wd, device=A.device), torch.empty_like(V, dtype=wd)
    off = torch.empty((batch,), dtype=wd, device=A.device)
    bm, bn = max(next_pow2(m), 2), max(next_pow2(n), 2)
    meta = dict(COMPUTE=compute_dtype(A.dtype), BLOCK_M=bm, BLOCK_N=bn, num_warps=_warps(bm))
    _sweep(svd_sweep_kernel, (batch,), A, work, vwork, off, (m, n), max_sweeps, **meta)
    launch(svd_sort_kernel, (batch,), work, vwork, U, S, V, m, n, **meta)
    _complete_zero_columns(U, S)
    return U, S, V


def _complete_zero_columns(U, S):
    """Give the columns of U whose singular value is 0 (left zero by the sweeps) an orthonormal
    completion: the same columns of Q in U = Q R (Householder), which at a zero column reflects
    nothing and so keeps a unit vector orthogonal to the columns before it."""
    zeros = [(b, j) for b, row in enumerate(S.tolist()) for j, s in enumerate(row) if s == 0]
    if zeros:
        Q, _ = qr(U)
        for b, j in zeros:
            U[b, :, j].copy_(Q[b, :, j])
