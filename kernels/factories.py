"""Tensor factories as Triton kernels: ``arange``, ``linspace``, ``eye`` and ``fill``.

Each one writes into a caller-allocated ``out`` (a torch tensor used purely as storage) and
returns it; torch itself computes nothing here.

Scalars reach the kernels bit-exactly: a Python float is passed as the ``int`` holding its IEEE-754
binary64 bits (``f64_bits``) and rebuilt in the kernel by a bitcast (``as_f64``). A plain float
argument would not do: Triton types it ``fp32`` when compiled but the interpreter keeps it a Python
(binary64) float, so CPU and CUDA would see different values, and ``fp32`` would round fp64 work.

Every compiled launch passes ``enable_fp_fusion=False`` (``compile_options``): Triton otherwise
contracts ``a + b*c`` into one fma (one rounding instead of two), so CUDA results would differ in
the last bit from the interpreter's and from the formulas documented here.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import triton
import triton.language as tl

from .runtime.launch import launch
from .helpers.layout import block_for, cdiv, collapse, element_offset
from .helpers.scalars import as_f64, f64_bits
from .runtime.target import target

__all__ = ["arange", "linspace", "eye", "fill", "f64_bits"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def compile_options(device: torch.device) -> dict:
    """Launch options of every kernel here: no fp contraction when compiled (see the module
    docstring); nothing on the CPU, where the interpreter has no such option to take."""
    if target(device) == "cpu":
        return {}
    return {"num_warps": 4, "enable_fp_fusion": False}


@triton.jit
def as_i64(v):
    """An int argument as an i64 scalar, whatever width Triton typed it with."""
    return tl.to_tensor(v).to(tl.int64)


@triton.jit
def round_bf16(v):
    """fp32 ``v`` rounded to nearest-even onto the bfloat16 grid, still as fp32 (its low 16 bits
    zero), so the final ``.to(tl.bfloat16)`` is exact. Done by hand because the interpreter's
    fp32 -> bf16 cast truncates while CUDA's rounds to nearest even; this way both agree (and agree
    with torch). Adding 0x7FFF + (bit 16) to the bits carries exactly when RNE rounds up, including
    into the exponent (to the next binade, or to inf on overflow); NaN is passed through."""
    bits = v.to(tl.uint32, bitcast=True)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return tl.where(v != v, v, bits.to(tl.float32, bitcast=True))


@triton.jit
def to_float_out(v, ty: tl.constexpr):
    """fp64/fp32 ``v`` converted to the float type ``ty`` the way torch's C++ casts do:
    fp64 -> fp32 -> fp16/bf16 (c10::Half/BFloat16 are constructed from float, so a double is
    rounded to float first), with round-to-nearest-even on every step on both backends."""
    if ty == tl.float64:
        return v.to(tl.float64)
    elif ty == tl.bfloat16:
        return round_bf16(v.to(tl.float32)).to(tl.bfloat16)
    else:
        return v.to(tl.float32).to(ty)


@triton.jit
def cast_to(v, ty: tl.constexpr):
    """``v`` (any int, bool or float block) converted to the element type ``ty`` of an output.

    Floats go through ``to_float_out``; ints reach a 16-bit float through fp32 (the interpreter
    would otherwise reinterpret the integer as bf16 *bits*); a bool output stores ``v != 0``;
    float -> int truncates toward zero (C++ semantics)."""
    if ty.is_floating():
        if v.dtype.is_floating():
            return to_float_out(v, ty)
        elif ty == tl.float64:
            return v.to(tl.float64)
        else:
            return to_float_out(v.to(tl.float32), ty)
    elif ty == tl.int1:
        return v != 0
    else:
        return v.to(ty)


# --------------------------------------------------------------------------------------------
# arange


@triton.jit
def _arange_kernel(out, start, step, numel, stride, FLOAT: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < numel
    if FLOAT:
        v = to_float_out(as_f64(start) + i.to(tl.float64) * as_f64(step), out.dtype.element_ty)
    else:
        v = cast_to(as_i64(start) + i * as_i64(step), out.dtype.element_ty)
    tl.store(out + i * stride, v, mask=mask)


def arange(out: torch.Tensor, start, step) -> torch.Tensor:
    """``out[i] = start + i * step`` for the 1-D ``out`` (written through its stride).

    Float outputs: ``start + i*step`` evaluated in fp64 (IEEE mul then add, never an fma), then
    cast fp64 -> fp32 -> fp16/bf16; that is torch's scalar formula on the CPU. torch's vectorised
    CPU kernel steps lanes from chunk bases (``base + j*step``) and its CUDA kernel works in fp32,
    so torch itself can differ from this by ~1 ulp of the range's magnitude.
    Integer outputs: computed in int64 with ``start`` and ``step`` truncated by ``int()``, as torch
    does (``Scalar.to<int64_t>()``), then wrapped into ``out``'s dtype.
    """
    if out.dim() != 1:
        raise ValueError(f"arange writes a 1-D tensor, got shape {tuple(out.shape)}")
    n = out.numel()
    if n == 0:
        return out
    is_float = out.dtype in _FLOATS
    if is_float:
        a, b = f64_bits(start), f64_bits(step)
    else:
        a, b = int(start), int(step)
    block = block_for(n, out.device)
    launch(_arange_kernel, (cdiv(n, block),), out, a, b, n, out.stride(0),
           FLOAT=is_float, BLOCK=block, **compile_options(out.device))
    return out


# --------------------------------------------------------------------------------------------
# linspace

_LIN_INT, _LIN_F32, _LIN_F64 = 0, 1, 2


@triton.jit
def _linspace_kernel(out, start, end, step, steps, halfway, stride,
                     KIND: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = i < steps
    # The two halves are anchored at their own end so that both endpoints are exact and the
    # error stays symmetric (torch's formula, replicated op for op).
    j = as_i64(steps) - 1 - i
    if KIND == 1:
        s32 = as_f64(start).to(tl.float32)
        e32 = as_f64(end).to(tl.float32)
        d32 = as_f64(step).to(tl.float32)
        v = tl.where(i < halfway, s32 + d32 * i.to(tl.float32), e32 - d32 * j.to(tl.float32))
        v = cast_to(v, out.dtype.element_ty)
    elif KIND == 2:
        s64 = as_f64(start)
        e64 = as_f64(end)
        d64 = as_f64(step)
        v = tl.where(i < halfway, s64 + d64 * i.to(tl.float64), e64 - d64 * j.to(tl.float64))
    else:
        # Integer outputs: integral start/end, fp64 step, fp64 sum truncated toward zero.
        d64 = as_f64(step)
        lo = as_i64(start).to(tl.float64) + d64 * i.to(tl.float64)
        hi = as_i64(end).to(tl.float64) - d64 * j.to(tl.float64)
        v = cast_to(tl.where(i < halfway, lo, hi).to(tl.int64), out.dtype.element_ty)
    tl.store(out + i * stride, v, mask=mask)


def linspace(out: torch.Tensor, start, end, steps: int) -> torch.Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` into the 1-D ``out``.

    Replicates torch's formula: with ``step = (end - start) / (steps - 1)`` and
    ``halfway = steps // 2``, ``out[i] = start + step*i`` for ``i < halfway`` and
    ``out[i] = end - step*(steps - 1 - i)`` otherwise, every op rounded in the output's precision
    (fp32 for fp32/fp16/bf16 outputs, then cast; fp64 for fp64). Integer outputs truncate ``start``
    and ``end`` to int, use an fp64 step, and truncate each fp64 value toward zero. ``steps == 1``
    gives ``[start]``. ``step`` is computed here on the host with numpy scalars, so the IEEE division
    is the same on CPU and CUDA.
    """
    if out.dim() != 1 or out.numel() != steps:
        raise ValueError(f"linspace needs a 1-D out of {steps} elements, got {tuple(out.shape)}")
    if steps == 0:
        return out
    if out.dtype == torch.float64:
        kind, s, e = _LIN_F64, float(start), float(end)
        d = (e - s) / (steps - 1) if steps > 1 else 0.0
    elif out.dtype in _FLOATS:
        kind, s, e = _LIN_F32, float(np.float32(start)), float(np.float32(end))
        d = float(np.float32(np.float32(e) - np.float32(s)) / np.float32(steps - 1)) if steps > 1 else 0.0
    else:
        kind, s, e = _LIN_INT, int(start), int(end)
        d = (float(e) - float(s)) / (steps - 1) if steps > 1 else 0.0
    if steps == 1:
        e = s  # one point is the start (the "upper half" formula would give end)
    halfway = steps // 2
    if kind == _LIN_INT:
        a, b = s, e
    else:
        a, b = f64_bits(s), f64_bits(e)
    block = block_for(steps, out.device)
    launch(_linspace_kernel, (cdiv(steps, block),), out, a, b, f64_bits(d), steps, halfway,
           out.stride(0), KIND=kind, BLOCK=block, **compile_options(out.device))
    return out


# --------------------------------------------------------------------------------------------
# eye


@triton.jit
def _eye_kernel(out, numel, m, stride0, stride1, BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    r = lin // m
    c = lin % m
    v = tl.where(r == c, 1, 0)
    tl.store(out + r * stride0 + c * stride1, cast_to(v, out.dtype.element_ty), mask=mask)


def eye(out: torch.Tensor) -> torch.Tensor:
    """``out[r, c] = (r == c)`` for the 2-D ``out`` of shape (n, m), any dtype and strides."""
    if out.dim() != 2:
        raise ValueError(f"eye writes a 2-D tensor, got shape {tuple(out.shape)}")
    n, m = out.shape
    numel = n * m
    if numel == 0:
        return out
    block = block_for(numel, out.device)
    launch(_eye_kernel, (cdiv(numel, block),), out, numel, m, out.stride(0), out.stride(1),
           BLOCK=block, **compile_options(out.device))
    return out


# --------------------------------------------------------------------------------------------
# fill

_FILL_INT, _FILL_FLOAT = 0, 1


@triton.jit
def _fill_kernel(out, value, numel, shape, strides, NDIM: tl.constexpr, KIND: tl.constexpr,
                 BLOCK: tl.constexpr):
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = lin < numel
    if KIND == 1:
        v = cast_to(as_f64(value), out.dtype.element_ty)  # float -> int truncates, as C++ does
    else:
        v = cast_to(as_i64(value), out.dtype.element_ty)
    v = tl.broadcast_to(v, (BLOCK,))  # (not 0 + v: that would turn -0.0 into +0.0)
    tl.store(out + element_offset(lin, shape, strides, NDIM), v, mask=mask)


def fill(out: torch.Tensor, value) -> torch.Tensor:
    """``out[...] = value`` through ``out``'s strides (so ``fill_``/``zero_`` on views work).

    bool outputs store ``value != 0``; integer outputs take an int value wrapped to their width,
    or a float value truncated toward zero; float outputs take ``float(value)`` rounded
    fp64 -> fp32 -> fp16/bf16 (what torch's ``Scalar`` conversion does).
    """
    numel = out.numel()
    if numel == 0:
        return out
    if out.dtype == torch.bool:
        kind, v = _FILL_INT, int(bool(value))
    elif out.dtype in _FLOATS or isinstance(value, float):
        if isinstance(value, float) and not math.isfinite(value) and out.dtype not in _FLOATS:
            raise ValueError(f"cannot fill an integer tensor with {value}")
        kind, v = _FILL_FLOAT, f64_bits(value)
    else:
        kind, v = _FILL_INT, int(value)
    shape, (strides,) = collapse(tuple(out.shape), [out.stride()])
    block = block_for(numel, out.device)
    launch(_fill_kernel, (cdiv(numel, block),), out, v, numel, shape, strides,
           NDIM=len(shape), KIND=kind, BLOCK=block, **compile_options(out.device))
    return out
