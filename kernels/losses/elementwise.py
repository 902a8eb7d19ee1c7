"""Elementwise losses, reduced in the same launch, and their fused backward.

For input x, target y (broadcast by strides, never copied), optional weight w and, for BCE with
logits, pos_weight q, with d = x - y and parameter c (beta or delta):

    mse          l = d^2                                   dl/dx = 2d                 dl/dy = -dl/dx
    l1           l = |d|                                   dl/dx = sign d             dl/dy = -dl/dx
    smooth_l1    l = d^2 / 2c if |d| < c else |d| - c/2    dl/dx = d/c or sign d      dl/dy = -dl/dx
    huber        l = d^2 / 2 if |d| < c else c(|d| - c/2)  dl/dx = clamp(d, -c, c)    dl/dy = -dl/dx
    bce          l = -(y max(ln x, -100) + (1-y) max(ln(1-x), -100))
                 dl/dx = (x - y) / max(x(1-x), 1e-12)      dl/dy = max(ln(1-x), -100) - max(ln x, -100)
    bce_logits   l = (1-y) x + L sp(-x),  L = 1 + (q-1) y,  sp(z) = max(z, 0) + ln(1 + e^-|z|)
                 dl/dx = L sigmoid(x) - q y                dl/dy = (q-1) sp(-x) - x

(PyTorch's formulas, including BCE's clamp of the logs at -100 and its 1e-12 floor in the
gradient; without pos_weight q = 1.) Every loss is multiplied by w when given. Each row is a pair
of ``@triton.jit`` formulas (``LOSSES``), the loss and its derivative, that the two kernels take as
compile-time constants; the recorded backward of create_graph traces the same derivative.

With a reduction, each program sums its elements' losses (fp32, fp64 for fp64) into one partial;
one program (always, interpreted) stores the final sum or mean itself, several store partials that
``finish_sum`` adds up in a fixed order (deterministic: no atomics). BCE also counts inputs outside
[0, 1] (NaN included), which the caller turns into PyTorch's error after the launch.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from ..runtime.capture import is_capturing
from ..helpers.dtypes import accumulate_dtype, compute_dtype
from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, collapse, element_offset
from ..elementwise.elementary import log1p
from ..helpers.scalars import as_f64, f64_bits
from ..runtime.target import target, sm_count

__all__ = ["Loss", "LOSSES", "loss_forward", "loss_backward", "finish_sum", "programs_for"]

# A loss is ``loss(x, y, q, p)`` and ``loss_bwd(x, y, q, g, p) -> (g dl/dx, g dl/dy)``, p = (c, c).

@triton.jit
def _sign(d):  # in d's dtype (traced, a 0-d g times a float32 sign would come out float32)
    return tl.where(d > 0, 1.0, tl.where(d < 0, -1.0, tl.zeros_like(d)))


@triton.jit
def _softplus_neg(x):  # sp(-x) = ln(1 + e^-x), stable for any x
    return tl.maximum(-x, 0.0) + log1p(tl.exp(-tl.abs(x)))


@triton.jit
def mse(x, y, q, p):
    d = x - y
    return d * d


@triton.jit
def mse_bwd(x, y, q, g, p):
    gx = g * (2.0 * (x - y))
    return gx, -gx


@triton.jit
def l1(x, y, q, p):
    return tl.abs(x - y)


@triton.jit
def l1_bwd(x, y, q, g, p):
    gx = g * _sign(x - y)
    return gx, -gx


@triton.jit
def smooth_l1(x, y, q, p):
    d = x - y
    ad = tl.abs(d)
    return tl.where(ad < p[0], 0.5 * d * d / p[0], ad - 0.5 * p[0])


@triton.jit
def smooth_l1_bwd(x, y, q, g, p):
    d = x - y
    gx = g * tl.where(d > p[0], 1.0, tl.where(d < -p[0], -1.0, d / p[0]))  # NaN passes, as PyTorch
    return gx, -gx


@triton.jit
def huber(x, y, q, p):
    d = x - y
    ad = tl.abs(d)
    return tl.where(ad < p[0], 0.5 * d * d, p[0] * (ad - 0.5 * p[0]))


@triton.jit
def huber_bwd(x, y, q, g, p):  # clamp(d, -c, c), whose derivative is 1 on [-c, c] inclusive
    d = x - y
    gx = g * tl.where(d < -p[0], -p[0], tl.where(d > p[0], p[0], d))
    return gx, -gx


@triton.jit
def bce(x, y, q, p):
    return -(y * tl.maximum(tl.log(x), -100.0) + (1.0 - y) * tl.maximum(log1p(-x), -100.0))


@triton.jit
def bce_bwd(x, y, q, g, p):
    # d/dy is PyTorch's unclamped log-odds: +-inf at x = 0 or 1 (only the loss clamps its logs)
    return (g * ((x - y) / tl.maximum(x * (1.0 - x), 1e-12)),
            g * (log1p(-x) - tl.log(x)))


@triton.jit
def bce_logits(x, y, q, p):
    return (1.0 - y) * x + (1.0 + (q - 1.0) * y) * _softplus_neg(x)


@triton.jit
def bce_logits_bwd(x, y, q, g, p):
    return (g * ((1.0 + (q - 1.0) * y) / (1.0 + tl.exp(-x)) - q * y),
            g * ((q - 1.0) * _softplus_neg(x) - x))


class Loss(NamedTuple):
    forward: object  # loss(x, y, q, p)
    backward: object  # loss_bwd(x, y, q, g, p) -> (g dl/dx, g dl/dy)
    unit_inputs: bool = False  # x must lie in [0, 1]: the kernel counts (and NaNs) the others


LOSSES = {"mse": Loss(mse, mse_bwd), "l1": Loss(l1, l1_bwd), "smooth_l1": Loss(smooth_l1, smooth_l1_bwd),
          "huber": Loss(huber, huber_bwd), "bce": Loss(bce, bce_bwd, unit_inputs=True),
          "bce_logits": Loss(bce_logits, bce_logits_bwd)}


@triton.jit
def _at(ptr, lin, mask, shape, strides, NDIM: tl.constexpr, CONTIGUOUS: tl.constexpr,
        COMPUTE: tl.constexpr):
    if CONTIGUOUS:
        v = tl.load(ptr + lin, mask=mask, other=0)
    else:
        v = tl.load(ptr + element_offset(lin, shape, strides, NDIM), mask=mask, other=0)
    return v.to(COMPUTE)


@triton.jit
def loss_fwd_kernel(x_ptr, y_ptr, w_ptr, q_ptr, out_ptr, part_ptr, bad_ptr, numel, per_prog, shape,
                    xs, ys, ws, qs, c_bits, div_bits, LOSS: tl.constexpr, UNIT_INPUTS: tl.constexpr,
                    HAS_W: tl.constexpr, HAS_Q: tl.constexpr, REDUCE: tl.constexpr, FINAL: tl.constexpr,
                    NDIM: tl.constexpr, CONTIGUOUS: tl.constexpr, COMPUTE: tl.constexpr,
                    BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    first = pid * per_prog
    last = tl.minimum(first + per_prog, numel)
    c = as_f64(c_bits).to(COMPUTE)
    acc = tl.zeros([BLOCK], COMPUTE)
    n_bad = tl.zeros([BLOCK], tl.int32)
    for start in range(first, last, BLOCK):
        lin = start + tl.arange(0, BLOCK)
        mask = lin < last
        x = _at(x_ptr, lin, mask, shape, xs, NDIM, CONTIGUOUS, COMPUTE)
        y = _at(y_ptr, lin, mask, shape, ys, NDIM, CONTIGUOUS, COMPUTE)
        q = 1.0
        if HAS_Q:
            q = _at(q_ptr, lin, mask, shape, qs, NDIM, CONTIGUOUS, COMPUTE)
        loss = LOSS(x, y, q, (c, c))
        if HAS_W:
            loss = loss * _at(w_ptr, lin, mask, shape, ws, NDIM, CONTIGUOUS, COMPUTE)
        if UNIT_INPUTS:  # not (0 <= x <= 1) also catches NaN
            outside = mask & ~((x >= 0.0) & (x <= 1.0))
            n_bad += outside.to(tl.int32)
            loss = tl.where(outside, float("nan"), loss)  # the host raises too, outside a graph capture
        if REDUCE == 0:
            tl.store(out_ptr + lin, loss.to(out_ptr.dtype.element_ty), mask=mask)
        else:
            acc += tl.where(mask, loss, 0.0)
    if UNIT_INPUTS:
        tl.atomic_max(bad_ptr, tl.sum(n_bad, 0))  # a max is order-independent
    if REDUCE != 0:
        total = tl.sum(acc, 0)
        tl.store(part_ptr + pid, total)
        if FINAL:
            if REDUCE == 2:
                total = total / as_f64(div_bits).to(COMPUTE)
            tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


@triton.jit
def loss_bwd_kernel(x_ptr, y_ptr, w_ptr, q_ptr, g_ptr, dx_ptr, dy_ptr, numel, shape, xs, ys, ws, qs,
                    gs, c_bits, div_bits, LOSS_BWD: tl.constexpr, HAS_W: tl.constexpr, HAS_Q: tl.constexpr,
                    REDUCE: tl.constexpr, NEED_DX: tl.constexpr, NEED_DY: tl.constexpr,
                    NDIM: tl.constexpr, CONTIGUOUS: tl.constexpr, COMPUTE: tl.constexpr,
                    BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    c = as_f64(c_bits).to(COMPUTE)
    x = _at(x_ptr, lin, mask, shape, xs, NDIM, CONTIGUOUS, COMPUTE)
    y = _at(y_ptr, lin, mask, shape, ys, NDIM, CONTIGUOUS, COMPUTE)
    if REDUCE == 0:
        g = _at(g_ptr, lin, mask, shape, gs, NDIM, CONTIGUOUS, COMPUTE)
    else:
        g = tl.load(g_ptr).to(COMPUTE)
        if REDUCE == 2:
            g = g / as_f64(div_bits).to(COMPUTE)
    q = 1.0
    if HAS_Q:
        q = _at(q_ptr, lin, mask, shape, qs, NDIM, CONTIGUOUS, COMPUTE)
    if HAS_W:
        g = g * _at(w_ptr, lin, mask, shape, ws, NDIM, CONTIGUOUS, COMPUTE)
    dx, dy = LOSS_BWD(x, y, q, g, (c, c))
    if NEED_DX:
        tl.store(dx_ptr + lin, dx.to(dx_ptr.dtype.element_ty), mask=mask)
    if NEED_DY:
        tl.store(dy_ptr + lin, dy.to(dy_ptr.dtype.element_ty), mask=mask)


@triton.jit
def finish_sum_kernel(part_ptr, out_ptr, tot_ptr, P, div_bits, WIDTH: tl.constexpr,
                      MEAN: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """Sums the (P, WIDTH) partials column by column; a mean divides by the sum of column 1 when
    there is one, else by the given divisor."""
    acc0 = tl.zeros([BLOCK], COMPUTE)
    acc1 = tl.zeros([BLOCK], COMPUTE)
    for start in range(0, P, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < P
        acc0 += tl.load(part_ptr + i * WIDTH, mask=m, other=0)
        if WIDTH == 2:
            acc1 += tl.load(part_ptr + i * WIDTH + 1, mask=m, other=0)
    total = tl.sum(acc0, 0)
    tl.store(tot_ptr, total)
    if WIDTH == 2:
        den = tl.sum(acc1, 0)
        tl.store(tot_ptr + 1, den)
        if MEAN:
            total = total / den
    elif MEAN:
        total = total / as_f64(div_bits).to(COMPUTE)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def finish_sum(part: torch.Tensor, out: torch.Tensor, mean: bool, divisor=1.0) -> torch.Tensor:
    """``out[()] = sum(part[:, 0])``, summed in a fixed order; for ``mean`` divided by
    ``sum(part[:, 1])`` when ``part`` has two columns, else by ``divisor``. Returns the column
    totals (WIDTH,) in part's dtype."""
    P, width = part.shape
    tot = torch.empty((width,), dtype=part.dtype, device=part.device)
    block = min(triton.next_power_of_2(P), 1024)
    launch(finish_sum_kernel, (1,), part, out, tot, P, f64_bits(divisor), WIDTH=width, MEAN=mean,
           COMPUTE=compute_dtype(part.dtype), BLOCK=block, num_warps=4)
    return tot


def programs_for(n_blocks: int, device: torch.device) -> int:
    """How many programs walk ``n_blocks`` blocks when each sums its share into one partial: one
    interpreted (it pays per op, not per program), a few per SM compiled."""
    if target(device) == "cpu":
        return 1
    sms = sm_count(device)
    return max(1, min(n_blocks, 4 * sms))


def _geometry(shape, tensors):
    views = [t.expand(shape) for t in tensors]
    cshape, strides = collapse(tuple(shape), [v.stride() for v in views])
    contiguous = all(st == (1,) for st in strides)
    return views, cshape, strides, contiguous


def loss_forward(mode, x, y, weight=None, pos_weight=None, param=0.0, reduction="mean",
                 out_dtype=None):
    """Loss ``mode`` (a key of ``LOSSES``) of x against y over their broadcast shape (weight and
    pos_weight broadcast too). Returns ``(loss, n_bad)``: loss is the full-shape tensor for
    reduction 'none', else 0-d; n_bad is the count of BCE inputs outside [0, 1] (0 otherwise)."""
    shape = torch.broadcast_shapes(*(t.shape for t in (x, y, weight, pos_weight) if t is not None))
    out_dtype = out_dtype or x.dtype
    numel = math.prod(shape)
    reduce_code = {"none": 0, "sum": 1, "mean": 2}[reduction]
    out = torch.empty(shape if reduce_code == 0 else (), dtype=out_dtype, device=x.device)
    if numel == 0:
        return out.fill_(0.0 if reduce_code == 1 else float("nan")), 0
    tensors = [x, y] + [t for t in (weight, pos_weight) if t is not None]
    views, cshape, strides, contiguous = _geometry(shape, tensors)
    xs, ys = strides[0], strides[1]
    ws = strides[2] if weight is not None else xs
    qs = strides[-1] if pos_weight is not None else xs
    block = block_for(numel, x.device)
    programs = programs_for(cdiv(numel, block), x.device)
    per_prog = cdiv(cdiv(numel, block), programs) * block
    programs = cdiv(numel, per_prog)
    acc = accumulate_dtype(out_dtype)
    part = torch.empty((programs, 1), dtype=acc, device=x.device)
    bad = torch.zeros((1,), dtype=torch.int32, device=x.device)
    final = programs == 1
    launch(loss_fwd_kernel, (programs,), views[0], views[1],
           views[2] if weight is not None else views[0],
           views[-1] if pos_weight is not None else views[0], out, part, bad, numel, per_prog,
           cshape, xs, ys, ws, qs, f64_bits(param), f64_bits(numel), LOSS=LOSSES[mode].forward,
           UNIT_INPUTS=LOSSES[mode].unit_inputs, HAS_W=weight is not None, HAS_Q=pos_weight is not None, REDUCE=reduce_code, FINAL=final,
           NDIM=len(cshape), CONTIGUOUS=contiguous, COMPUTE=compute_dtype(acc), BLOCK=block,
           num_warps=4)
    if reduce_code and not final:
        finish_sum(part, out, mean=reduce_code == 2, divisor=numel)
    # a captured graph cannot stop to read back; the kernel makes those losses NaN
    n_bad = int(bad.item()) if LOSSES[mode].unit_inputs and not is_capturing() else 0
    return out, n_bad


def loss_backward(mode, x, y, g, weight=None, pos_weight=None, param=0.0, reduction="mean",
                  need_dx=True, need_dy=False):
    """``(dx, dy)``, each over the broadcast shape (contiguous, of g's dtype) or None: the
    gradients of ``loss_forward`` given the upstream gradient ``g`` (0-d for a reduction)."""
    shape = torch.broadcast_shapes(*(t.shape for t in (x, y, weight, pos_weight) if t is not None))
    reduce_code = {"none": 0, "sum": 1, "mean": 2}[reduction]
    numel = math.prod(shape)
    dx = torch.empty(shape, dtype=g.dtype, device=g.device) if need_dx else None
    dy = torch.empty(shape, dtype=g.dtype, device=g.device) if need_dy else None
    if numel == 0:
        return dx, dy
    tensors = [x, y] + [t for t in (weight, pos_weight) if t is not None]
    if reduce_code == 0:
        tensors.append(g)
    views, cshape, strides, contiguous = _geometry(shape, tensors)
    xs, ys = strides[0], strides[1]
    ws = strides[2] if weight is not None else xs
    qs = strides[2 + (weight is not None)] if pos_weight is not None else xs
    gs = strides[-1] if reduce_code == 0 else xs
    block = block_for(numel, x.device)
    acc = accumulate_dtype(g.dtype)
    launch(loss_bwd_kernel, (cdiv(numel, block),), views[0], views[1],
           views[2] if weight is not None else views[0],
           views[2 + (weight is not None)] if pos_weight is not None else views[0], g,
           dx if dx is not None else dy, dy if dy is not None else dx, numel, cshape, xs, ys, ws, qs,
           gs, f64_bits(param), f64_bits(numel), LOSS_BWD=LOSSES[mode].backward, HAS_W=weight is not None,
           HAS_Q=pos_weight is not None, REDUCE=reduce_code, NEED_DX=need_dx, NEED_DY=need_dy,
           NDIM=len(cshape), CONTIGUOUS=contiguous, COMPUTE=compute_dtype(acc), BLOCK=block,
           num_warps=4)
    return dx, dy
