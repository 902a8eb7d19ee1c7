"""Cross-entropy (fused log-softmax + NLL) and NLL loss, forward and backward, one launch each.

The input is viewed as (N, C, I): rows r = (n, i) of C class scores x_c reached through strides,
no copy. Per row, with lse = log sum_c exp x_c and log-probabilities lp_c = x_c - lse (lp_c = x_c
for ``nll_loss``), the loss is -sum_c a_c lp_c with coefficients a_c:

    class-index target t:   a_c = (1 - eps) w_t [c = t] + (eps / C) w_c      (0 for t = ignore_index)
    probability target p:   a_c = w_c (p_c (1 - eps) + eps / C)

(eps the label smoothing, w the class weights or 1). This is PyTorch's ``cross_entropy`` including
its label-smoothing and weight conventions; 'mean' divides by sum_r w_{t_r} over the rows not
ignored for class targets and by the number of rows for probability targets. With A = sum_c a_c,

    dL/dx_c = g_r (A softmax_c - a_c)          (g_r: the row's upstream gradient, 0 if ignored)
    dL/dp_c = -g_r (1 - eps) w_c lp_c          (probability targets)

The forward keeps per row only the max m and log s = log sum_c exp(x_c - m) (and A for probability
targets), never the softmax, which the backward recomputes. lse = m + log s is never formed:
lp_c = (x_c - m) - log s keeps its accuracy where lse would be rounded to the size of m (a logit of
1e4 and a log-probability of 1e-4 in float32). Rows longer than one block take one online pass:
the max m, sum exp(x - m) and S = sum a_c (x_c - m) are carried across chunks, rescaled whenever m
grows (S by A * dm).

Class targets are checked in the same launch: lanes with a target outside [0, C) (and not
ignore_index) read nothing and record their row with an atomic min, which the host reads once to
raise PyTorch's ``IndexError('Target 5 is out of bounds.')``. Reductions sum per program, then
(several programs only) ``losses.finish_sum`` adds the partials in a fixed order.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ..runtime.capture import is_capturing
from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch
from ..helpers.layout import block_shape_2d, cdiv
from ..reductions.logsumexp import lse_shift, online_logsumexp
from .elementwise import finish_sum, programs_for
from ..helpers.scalars import as_f64, f64_bits

__all__ = ["cross_entropy_forward", "cross_entropy_backward"]

_REDUCE = {"none": 0, "sum": 1, "mean": 2}


@triton.jit
def _target(t_ptr, rows, row_mask, n, i, ts0, ts2, ignore_index, C):
    """(t, valid, bad) for class targets; invalid lanes get t = 0 so nothing reads far."""
    t = tl.load(t_ptr + (n * ts0 + i * ts2), mask=row_mask, other=0).to(tl.int64)
    live = row_mask & (t != ignore_index)
    ok = (t >= 0) & (t < C)
    return tl.where(live & ok, t, 0), live & ok, live & ~ok


@triton.jit
def _coef(t_ptr, w_ptr, rows_t, cols, mask, t, w_t, ts1, ws, eps, C,
          PROB: tl.constexpr, HAS_W: tl.constexpr, SMOOTH: tl.constexpr, COMPUTE: tl.constexpr):
    """a_c on a [rows, cols] tile (0 on masked lanes)."""
    if HAS_W:
        w = tl.load(w_ptr + cols * ws, mask=cols < C, other=0).to(COMPUTE)[None, :]
    else:
        w = 1.0
    if PROB:
        p = tl.load(t_ptr + (rows_t[:, None] + cols[None, :] * ts1), mask=mask, other=0).to(COMPUTE)
        if SMOOTH:
            p = p * (1.0 - eps) + eps / C
        a = p * w
    else:
        a = tl.where(cols[None, :] == t[:, None], ((1.0 - eps) * w_t)[:, None], 0.0)
        if SMOOTH:
            a = a + (eps / C) * w
    return tl.where(mask, a, 0.0)


@triton.jit
def cross_entropy_fwd_kernel(x_ptr, t_ptr, w_ptr, loss_ptr, lse_ptr, aux_ptr, part_ptr, bad_ptr,
                             R, C, I, xs0, xs1, xs2, ts0, ts1, ts2, ws, ignore_index, eps_bits,
                             rows_per_prog, SOFTMAX: tl.constexpr, PROB: tl.constexpr,
                             HAS_W: tl.constexpr, SMOOTH: tl.constexpr, REDUCE: tl.constexpr,
                             FINAL: tl.constexpr, COMPUTE: tl.constexpr, ONE_CHUNK: tl.constexpr,
                             BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    first = pid * rows_per_prog
    last = tl.minimum(first + rows_per_prog, R)
    eps = as_f64(eps_bits).to(COMPUTE)
    acc_loss = tl.zeros([BLOCK_R], COMPUTE)
    acc_den = tl.zeros([BLOCK_R], COMPUTE)
    first_bad = first * 0 + R
    for r0 in range(first, last, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        row_mask = rows < last
        n = rows // I
        i = rows % I
        x_row = n * xs0 + i * xs2
        t_row = n * ts0 + i * ts2
        t = rows * 0
        valid = row_mask
        w_t = tl.where(row_mask, 1.0, 0.0).to(COMPUTE)
        x_t = tl.zeros([BLOCK_R], COMPUTE)
        if not PROB:
            t, valid, bad = _target(t_ptr, rows, row_mask, n, i, ts0, ts2, ignore_index, C)
            first_bad = tl.minimum(first_bad, tl.min(tl.where(bad, rows, R), 0))
            if HAS_W:
                w_t = tl.load(w_ptr + t * ws, mask=valid, other=0).to(COMPUTE)
            else:
                w_t = tl.where(valid, 1.0, 0.0).to(COMPUTE)
            x_t = tl.load(x_ptr + (x_row + t * xs1), mask=valid, other=0).to(COMPUTE)
        shift = tl.zeros([BLOCK_R], COMPUTE)  # lse = shift + log_s, kept apart (module doc)
        log_s = tl.zeros([BLOCK_R], COMPUTE)
        s_lin = tl.zeros([BLOCK_R], COMPUTE)  # sum_c a_c lp_c (smoothing or probability targets)
        a_sum = tl.zeros([BLOCK_R], COMPUTE)
        if SOFTMAX:
            if ONE_CHUNK:
                cols = tl.arange(0, BLOCK_C).to(tl.int64)
                mask = row_mask[:, None] & (cols < C)[None, :]
                x = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * xs1), mask=mask,
                            other=float("-inf")).to(COMPUTE)
                m = tl.max(tl.where(x == x, x, float("-inf")), 1)  # NaN is left to exp()
                shift = tl.where(m == float("-inf"), 0.0, m)
                log_s = tl.log(tl.sum(tl.exp(x - shift[:, None]), 1))
                if PROB or SMOOTH:
                    a = _coef(t_ptr, w_ptr, t_row, cols, mask, t, w_t, ts1, ws, eps, C,
                              PROB, HAS_W, SMOOTH, COMPUTE)
                    s_lin = tl.sum(tl.where(mask, a * ((x - shift[:, None]) - log_s[:, None]), 0.0), 1)
                    a_sum = tl.sum(a, 1)
            else:  # online: m the running max, s = sum exp(x - shift), shift = lse_shift(m)
                m = tl.full([BLOCK_R], float("-inf"), COMPUTE)
                s = tl.zeros([BLOCK_R], COMPUTE)
                for start in range(0, C, BLOCK_C):
                    cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
                    mask = row_mask[:, None] & (cols < C)[None, :]
                    x = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * xs1), mask=mask,
                                other=float("-inf")).to(COMPUTE)
                    m, s = online_logsumexp(m, s, x)
                    new_shift = lse_shift(m)
                    if PROB or SMOOTH:
                        a = _coef(t_ptr, w_ptr, t_row, cols, mask, t, w_t, ts1, ws, eps, C,
                                  PROB, HAS_W, SMOOTH, COMPUTE)
                        s_lin = (s_lin + a_sum * (shift - new_shift)
                                 + tl.sum(tl.where(mask, a * (x - new_shift[:, None]), 0.0), 1))
                        a_sum += tl.sum(a, 1)
                    shift = new_shift
                log_s = tl.log(s)
                s_lin = s_lin - a_sum * log_s
            tl.store(lse_ptr + rows, shift, mask=row_mask)
            tl.store(lse_ptr + R + rows, log_s, mask=row_mask)
        if PROB:
            tl.store(aux_ptr + rows, a_sum, mask=row_mask)
        if PROB or SMOOTH:  # s_lin holds the whole sum_c a_c lp_c, target term included
            loss = -s_lin
        else:
            loss = -w_t * ((x_t - shift) - log_s)
        loss = tl.where(valid, loss, 0.0)
        if not PROB:  # an out-of-range target poisons its loss (the host raises too, outside a graph capture)
            loss = tl.where(bad, float("nan"), loss)
        if REDUCE == 0:
            tl.store(loss_ptr + rows, loss.to(loss_ptr.dtype.element_ty), mask=row_mask)
        else:
            acc_loss += loss
            acc_den += w_t
    if not PROB:
        tl.atomic_min(bad_ptr, first_bad)  # a min is order-independent
    if REDUCE != 0:
        total = tl.sum(acc_loss, 0)
        den = tl.sum(acc_den, 0)
        tl.store(part_ptr + pid * 2, total)
        tl.store(part_ptr + pid * 2 + 1, den)
        if FINAL:
            if REDUCE == 2:
                total = total / den
            tl.store(loss_ptr, total.to(loss_ptr.dtype.element_ty))


@triton.jit
def cross_entropy_bwd_kernel(x_ptr, t_ptr, w_ptr, lse_ptr, aux_ptr, g_ptr, tot_ptr, dx_ptr, dt_ptr,
                             R, C, I, xs0, xs1, xs2, ts0, ts1, ts2, ws, gs0, gs1, ignore_index,
                             eps_bits, SOFTMAX: tl.constexpr, PROB: tl.constexpr,
                             HAS_W: tl.constexpr, SMOOTH: tl.constexpr, REDUCE: tl.constexpr,
                             NEED_DX: tl.constexpr, NEED_DT: tl.constexpr, COMPUTE: tl.constexpr,
                             BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < R
    n = rows // I
    i = rows % I
    x_row = n * xs0 + i * xs2
    t_row = n * ts0 + i * ts2
    out_row = n * C * I + i  # dx and dt are contiguous (N, C, I)
    eps = as_f64(eps_bits).to(COMPUTE)
    if REDUCE == 0:
        g = tl.load(g_ptr + (n * gs0 + i * gs1), mask=row_mask, other=0).to(COMPUTE)
    else:
        g = tl.zeros([BLOCK_R], COMPUTE) + tl.load(g_ptr).to(COMPUTE)
        if REDUCE == 2:
            g = g / tl.load(tot_ptr + 1).to(COMPUTE)
    t = rows * 0
    valid = row_mask
    w_t = tl.zeros([BLOCK_R], COMPUTE)
    if PROB:
        a_sum = tl.load(aux_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
    else:
        t, valid, _ = _target(t_ptr, rows, row_mask, n, i, ts0, ts2, ignore_index, C)
        if HAS_W:
            w_t = tl.load(w_ptr + t * ws, mask=valid, other=0).to(COMPUTE)
        else:
            w_t = tl.where(valid, 1.0, 0.0).to(COMPUTE)
        a_sum = (1.0 - eps) * w_t
        if SMOOTH:  # + eps/C * sum_c w_c
            if HAS_W:
                w_acc = tl.zeros([BLOCK_C], COMPUTE)
                for start in range(0, C, BLOCK_C):
                    cols = tl.arange(0, BLOCK_C) + start
                    w_acc += tl.load(w_ptr + cols * ws, mask=cols < C, other=0).to(COMPUTE)
                a_sum = a_sum + (eps / C) * tl.sum(w_acc, 0)
            else:
                a_sum = a_sum + eps
    g = tl.where(valid, g, 0.0)
    shift = tl.zeros([BLOCK_R], COMPUTE)
    log_s = tl.zeros([BLOCK_R], COMPUTE)
    if SOFTMAX:
        shift = tl.load(lse_ptr + rows, mask=row_mask, other=0).to(COMPUTE)
        log_s = tl.load(lse_ptr + R + rows, mask=row_mask, other=0).to(COMPUTE)
    for start in range(0, C, BLOCK_C):
        cols = tl.arange(0, BLOCK_C).to(tl.int64) + start
        col_mask = cols < C
        mask = row_mask[:, None] & col_mask[None, :]
        a = _coef(t_ptr, w_ptr, t_row, cols, mask, t, w_t, ts1, ws, eps, C, PROB, HAS_W, SMOOTH,
                  COMPUTE)
        out = out_row[:, None] + cols[None, :] * I
        if SOFTMAX:
            x = tl.load(x_ptr + (x_row[:, None] + cols[None, :] * xs1), mask=mask,
                        other=0).to(COMPUTE)
            lp = (x - shift[:, None]) - log_s[:, None]
            if NEED_DX:
                dx = g[:, None] * (a_sum[:, None] * tl.exp(lp) - a)
                tl.store(dx_ptr + out, tl.where(valid[:, None], dx, 0.0).to(dx_ptr.dtype.element_ty),
                         mask=mask)
            if NEED_DT:
                if HAS_W:
                    w = tl.load(w_ptr + cols * ws, mask=col_mask, other=0).to(COMPUTE)[None, :]
                else:
                    w = 1.0
                dt = -g[:, None] * (1.0 - eps) * w * lp
                tl.store(dt_ptr + out, dt.to(dt_ptr.dtype.element_ty), mask=mask)
        else:
            tl.store(dx_ptr + out, (-g[:, None] * a).to(dx_ptr.dtype.element_ty), mask=mask)


def _strides3(t):
    return t.stride(0), t.stride(1), t.stride(2)


def cross_entropy_forward(x, target, weight=None, ignore_index=-100, label_smoothing=0.0,
                          reduction="mean", softmax=True):
    """Loss of scores ``x`` (N, C, I) against ``target``: class indices (N, I) of any integer
    dtype, or probabilities (N, C, I) (floating, softmax only); ``weight`` (C,) or None.
    ``softmax=False`` is ``nll_loss`` (x already log-probabilities). Returns ``(loss, saved)``:
    loss is (N, I) for 'none', else 0-d, of x's dtype; ``saved`` is what the backward takes."""
    N, C, I = x.shape
    R = N * I
    prob = target.is_floating_point()
    acc = accumulate_dtype(x.dtype)
    red = _REDUCE[reduction]
    dev = x.device
    loss = torch.empty((N, I) if red == 0 else (), dtype=x.dtype, device=dev)
    lse = torch.empty((2, R), dtype=acc, device=dev)  # per row: the max, then log sum exp(x - max)
    aux = torch.empty((R,) if prob else (1,), dtype=acc, device=dev)
    t3 = target if prob else target.unsqueeze(1)
    block_r, block_c, warps = block_shape_2d(R, C, dev)
    programs = programs_for(cdiv(max(R, 1), block_r), dev)
    rows_per_prog = cdiv(cdiv(max(R, 1), block_r), programs) * block_r
    programs = cdiv(max(R, 1), rows_per_prog)
    part = torch.zeros((programs, 2), dtype=acc, device=dev)
    bad = torch.full((1,), R, dtype=torch.int64, device=dev)
    launch(cross_entropy_fwd_kernel, (programs,), x, t3, x if weight is None else weight, loss, lse,
           aux, part, bad, R, C, I, *_strides3(x), *_strides3(t3),
           0 if weight is None else weight.stride(0), int(ignore_index), f64_bits(label_smoothing),
           rows_per_prog, SOFTMAX=softmax, PROB=prob, HAS_W=weight is not None,
           SMOOTH=label_smoothing > 0, REDUCE=red, FINAL=programs == 1, COMPUTE=compute_dtype(acc),
           ONE_CHUNK=C <= block_c, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    if not prob and not is_capturing():  # a captured graph cannot stop to read back; NaN marks bad rows
        pos = int(bad.item())
        if pos < R:
            raise IndexError(f"Target {int(target[pos // I, pos % I].item())} is out of bounds.")
    # (sum, divisor): the backward of 'mean' divides by the divisor
    tot = finish_sum(part, loss, mean=red == 2) if red and programs > 1 else part[0]
    return loss, (lse, aux, tot)


def cross_entropy_backward(x, target, weight, saved, g, ignore_index=-100, label_smoothing=0.0,
                           reduction="mean", softmax=True, need_dx=True, need_target=False):
    """``(dx, dtarget)`` (contiguous (N, C, I) of g's dtype, or None) for ``cross_entropy_forward``
    given the upstream gradient ``g`` ((N, I) for 'none', else 0-d)."""
    N, C, I = x.shape
    R = N * I
    lse, aux, tot = saved
    prob = target.is_floating_point()
    acc = accumulate_dtype(g.dtype)
    red = _REDUCE[reduction]
    dx = torch.empty((N, C, I), dtype=g.dtype, device=g.device) if need_dx else None
    dt = torch.empty((N, C, I), dtype=g.dtype, device=g.device) if need_target else None
    if R == 0 or C == 0:
        return dx, dt
    t3 = target if prob else target.unsqueeze(1)
    block_r, block_c, warps = block_shape_2d(R, C, x.device)
    gs = (g.stride(0), g.stride(1)) if red == 0 else (0, 0)
    launch(cross_entropy_bwd_kernel, (cdiv(R, block_r),), x, t3,
           x if weight is None else weight, lse, aux, g, tot, dx if dx is not None else dt,
           dt if dt is not None else dx, R, C, I, *_strides3(x), *_strides3(t3),
           0 if weight is None else weight.stride(0), *gs, int(ignore_index),
           f64_bits(label_smoothing), SOFTMAX=softmax, PROB=prob, HAS_W=weight is not None,
           SMOOTH=label_smoothing > 0, REDUCE=red, NEED_DX=need_dx, NEED_DT=need_target,
           COMPUTE=compute_dtype(acc), BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)
    return dx, dt
