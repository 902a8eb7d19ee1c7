"""Fused steps of Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop: one launch per (device, dtype) of
a parameter group, through a pointer table as in ``tgrad.kernels.optim``, here with one more
per-parameter scalar and a flag:

    row = [param_ptr, grad_ptr, state0_ptr, state1_ptr, state2_ptr, n, c0_bits, c1_bits, c2_bits, flag]

``c0..c2`` are fp64 bits of the scalars that depend on the parameter's own step count (computed on
the host in fp64, as PyTorch computes them in Python floats); ``flag`` is a per-parameter branch the
host decides (RAdam's rectification, ASGD's averaging). Group hyperparameters arrive as fp64 bits
``h0..h7`` and are rounded to the compute dtype (fp32 for fp16/fp32 parameters, fp64 for fp64).

The updates are PyTorch's single-tensor ones, with ``g`` the gradient (negated when ``MAXIMIZE``),
``p`` the parameter and ``lerp(a, b, w)`` torch.lerp's two-sided formula:

    Adadelta  g += wd p;  sq = rho sq + (1 - rho) g^2;  d = sqrt(acc + eps) / sqrt(sq + eps) * g;
              acc = rho acc + (1 - rho) d^2;  p -= lr d
    Adamax    g += wd p;  m = lerp(m, g, 1 - beta1);  u = max(beta2 u, |g| + eps);  p -= c0 m / u
              (c0 = lr / (1 - beta1^t))
    NAdam     p *= 1 - lr wd (decoupled) or g += wd p;  m = lerp(m, g, 1 - beta1);
              v = beta2 v + (1 - beta2) g^2;  den = sqrt(v / c0) + eps;  p += c1 g / den;  p += c2 m / den
              (c0 = 1 - beta2^t, c1 = -lr (1 - mu_t) / (1 - prod mu), c2 = -lr mu_t+1 / (1 - prod mu * mu_t+1))
    RAdam     weight decay as NAdam;  m, v as NAdam;  b = m / c0 * lr;
              p -= b * (c1 / (sqrt(v) + eps)) * c2 when flag (rho_t > 5), else p -= b
              (c0 = 1 - beta1^t, c1 = sqrt(1 - beta2^t), c2 = the rectification term)
    ASGD      g += wd p;  p = p * c2 - c0 g;  ax += (p - ax) mu when flag (mu != 1), else ax = p
              (c0 = eta, c1 = mu, c2 = 1 - lambd eta)
    Rprop     s = etaplus, etaminus or 1 as g prev > 0, < 0 or = 0 (NaN stays NaN);
              step = clamp(step s, min, max);  g = 0 where s = etaminus;  p -= sign(g) step;  prev = g
    axpy      p += alpha g, ``g`` any vector (LBFGS adds its flat direction to every parameter)
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .runtime.launch import launch
from .optim import _chunk, _upload
from .helpers.scalars import as_f64, f64_bits
from .runtime.target import target

__all__ = ["ALGORITHMS_MORE", "fused_step_more"]

ALGORITHMS_MORE = {"adadelta": 0, "adamax": 1, "nadam": 2, "radam": 3, "asgd": 4, "rprop": 5, "axpy": 6}
ROW = tl.constexpr(10)  # int64 entries per table row (layout in the module docstring)
_COMPUTE = {torch.float32: tl.float32, torch.float16: tl.float32, torch.float64: tl.float64}


@triton.jit
def _ptr(row_base, col: tl.constexpr, like):
    return tl.load(row_base + col).to(tl.pointer_type(like.dtype.element_ty))


@triton.jit
def _sqrt(x, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def _div(a, b, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return a / b
    else:
        return tl.div_rn(a, b)


@triton.jit
def _lerp(a, b, w):
    """torch.lerp: a + w (b - a) for |w| < 0.5, else b - (b - a)(1 - w)."""
    return tl.where(w < 0.5, a + w * (b - a), b - (b - a) * (1.0 - w))


@triton.jit
def _scalar(row_base, col: tl.constexpr, COMPUTE: tl.constexpr):
    return as_f64(tl.load(row_base + col)).to(COMPUTE)


@triton.jit
def _optim_more_kernel(table, like, rows_per_program, h0, h1, h2, h3, h4, h5, h6, h7,
                       ALGO: tl.constexpr, MAXIMIZE: tl.constexpr, WEIGHT_DECAY: tl.constexpr,
                       DECOUPLED: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    # group constants, decoded once (the interpreter pays per op); their meaning is per algorithm
    k0 = as_f64(h0).to(COMPUTE)
    k1 = as_f64(h1).to(COMPUTE)
    k2 = as_f64(h2).to(COMPUTE)
    k3 = as_f64(h3).to(COMPUTE)
    k4 = as_f64(h4).to(COMPUTE)
    k5 = as_f64(h5).to(COMPUTE)
    k6 = as_f64(h6).to(COMPUTE)
    first_row = tl.program_id(0).to(tl.int64) * rows_per_program
    for row in range(first_row, first_row + rows_per_program):
        row_base = table + row * ROW
        p_ptr = _ptr(row_base, 0, like)
        g_ptr = _ptr(row_base, 1, like)
        if ALGO != 6:
            s0_ptr = _ptr(row_base, 2, like)
        if ALGO != 4 and ALGO != 6:
            s1_ptr = _ptr(row_base, 3, like)
        n = tl.load(row_base + 5)
        if ALGO == 1 or ALGO == 2 or ALGO == 3 or ALGO == 4:
            c0 = _scalar(row_base, 6, COMPUTE)
        if ALGO == 2 or ALGO == 3:
            c1 = _scalar(row_base, 7, COMPUTE)
        if ALGO == 2 or ALGO == 3 or ALGO == 4:
            c2 = _scalar(row_base, 8, COMPUTE)
        if ALGO == 3 or ALGO == 4:
            flag = tl.load(row_base + 9) != 0
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            if MAXIMIZE:
                g = -g
            if ALGO != 6:
                s0 = tl.load(s0_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            if ALGO != 4 and ALGO != 6:
                s1 = tl.load(s1_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            if ALGO == 0:
                # Adadelta. k0 = lr, k1 = rho, k2 = 1 - rho, k3 = eps, k4 = weight_decay
                if WEIGHT_DECAY:
                    g = g + k4 * p
                s0 = s0 * k1 + k2 * g * g
                d = _div(_sqrt(s1 + k3, COMPUTE), _sqrt(s0 + k3, COMPUTE), COMPUTE) * g
                s1 = s1 * k1 + k2 * d * d
                p = p - k0 * d
            elif ALGO == 1:
                # Adamax. k0 = 1 - beta1, k1 = beta2, k2 = eps, k3 = weight_decay; c0 = lr / (1 - beta1^t)
                if WEIGHT_DECAY:
                    g = g + k3 * p
                s0 = _lerp(s0, g, k0)
                s1 = tl.maximum(s1 * k1, tl.abs(g) + k2)
                p = p - _div(c0 * s0, s1, COMPUTE)
            elif ALGO == 2 or ALGO == 3:
                # NAdam / RAdam. k0 = 1 - beta1, k1 = beta2, k2 = 1 - beta2, k3 = eps, k4 = weight_decay,
                # k5 = 1 - lr wd, k6 = lr (RAdam)
                if WEIGHT_DECAY:
                    if DECOUPLED:
                        p = p * k5
                    else:
                        g = g + k4 * p
                s0 = _lerp(s0, g, k0)
                s1 = s1 * k1 + k2 * g * g
                if ALGO == 2:
                    den = _sqrt(_div(s1, c0, COMPUTE), COMPUTE) + k3
                    p = p + _div(c1 * g, den, COMPUTE)
                    p = p + _div(c2 * s0, den, COMPUTE)
                else:
                    b = _div(s0, c0, COMPUTE) * k6
                    adaptive = _div(c1, _sqrt(s1, COMPUTE) + k3, COMPUTE)
                    p = p - tl.where(flag, b * adaptive * c2, b)
            elif ALGO == 4:
                # ASGD. k0 = weight_decay; c0 = eta, c1 = mu (read below), c2 = 1 - lambd eta
                if WEIGHT_DECAY:
                    g = g + k0 * p
                p = p * c2
                p = p - c0 * g
                mu = _scalar(row_base, 7, COMPUTE)
                s0 = tl.where(flag, s0 + (p - s0) * mu, p)
            elif ALGO == 6:
                # axpy. k0 = alpha
                p = p + k0 * g
            else:
                # Rprop. k0 = etaminus, k1 = etaplus, k2 = step_size_min, k3 = step_size_max;
                # s0 = prev, s1 = step size
                gp = g * s0
                s = tl.where(gp > 0, k1, tl.where(gp < 0, k0, tl.where(gp == 0, 1.0, gp))).to(COMPUTE)
                s1 = s1 * s
                s1 = tl.where(s1 < k2, k2, s1)
                s1 = tl.where(s1 > k3, k3, s1)
                g = tl.where(s == k0, 0.0, g).to(COMPUTE)
                sign = tl.where(g > 0, 1.0, tl.where(g < 0, -1.0, g)).to(COMPUTE)
                p = p - sign * s1
                s0 = g
            if ALGO != 6:
                tl.store(s0_ptr + offs, s0.to(s0_ptr.dtype.element_ty), mask=mask)
            if ALGO != 4 and ALGO != 6:
                tl.store(s1_ptr + offs, s1.to(s1_ptr.dtype.element_ty), mask=mask)
            tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


def fused_step_more(algo: str, params, grads, states, scalars, flags, hyper, *, maximize=False,
                    weight_decay=False, decoupled=False):
    """Update ``params`` (torch tensors) in place, one launch per (device, dtype).

    ``states``: per parameter the state tensors the algorithm reads (s0, s1), each shaped, typed
    and placed like the parameter; ``scalars``: per parameter up to three floats (c0, c1, c2);
    ``flags``: per parameter bool; ``hyper``: up to eight group coefficients (module docstring).
    Non-contiguous tensors are updated through contiguous copies written back afterwards."""
    code = ALGORITHMS_MORE[algo]
    buckets: dict = {}
    for i, p in enumerate(params):
        buckets.setdefault((p.device, p.dtype), []).append(i)
    h = [f64_bits(x) for x in hyper] + [0] * (8 - len(hyper))
    for (device, dtype), idx in buckets.items():
        if dtype not in _COMPUTE:
            if dtype == torch.bfloat16 and device.type == "cpu":
                raise RuntimeError("bfloat16 parameters cannot be optimized on the CPU: Triton's interpreter "
                                   "computes bfloat16 wrongly. Use float32 on the CPU.")
            if not dtype.is_floating_point:
                raise TypeError(f"optimizers update floating-point parameters, got {dtype}")
            raise TypeError(f"{algo} updates float16, float32 and float64 parameters, got {dtype}")
        chunk, block = _chunk(device, max(params[i].numel() for i in idx))
        item = params[idx[0]].element_size()
        rows, keep, write_back = [], [], []
        for i in idx:
            tensors = [params[i], grads[i]] + list(states[i]) + [None] * (3 - len(states[i]))
            ptrs = []
            for k, t in enumerate(tensors):
                if t is None:
                    ptrs.append(0)  # the kernel never dereferences an unused slot
                    continue
                if t.dtype != dtype or t.device != device or t.shape != params[i].shape:
                    raise ValueError(f"optimizer tensors of one parameter must share its shape, dtype and device: "
                                     f"got {tuple(t.shape)} {t.dtype} {t.device} for {tuple(params[i].shape)} "
                                     f"{dtype} {device}")
                if not t.is_contiguous():
                    c = t.contiguous()
                    if k != 1:  # gradients are only read
                        write_back.append((t, c))
                    t = c
                keep.append(t)
                ptrs.append(t.data_ptr())
            c = [f64_bits(x) for x in scalars[i]] + [0] * (3 - len(scalars[i]))
            n = params[i].numel()
            for start in range(0, n, chunk):
                off = start * item
                rows.extend([*(ptr + off if ptr else 0 for ptr in ptrs), min(chunk, n - start), *c, int(flags[i])])
        if not rows:
            continue
        table = _upload(rows, device)[0]
        n_rows = table.numel() // ROW.value
        grid, per_program = ((1,), n_rows) if target(device) == "cpu" else ((n_rows,), 1)
        launch(_optim_more_kernel, grid, table, keep[0], per_program, *h, ALGO=code, MAXIMIZE=bool(maximize),
               WEIGHT_DECAY=bool(weight_decay), DECOUPLED=bool(decoupled), COMPUTE=_COMPUTE[dtype], BLOCK=block,
               num_warps=4, keep_alive=keep)
        for dst, src in write_back:
            dst.copy_(src)
