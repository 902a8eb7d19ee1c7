"""Counter-based random numbers (Philox-4x32-10) as Triton kernels.

Every fill is a pure function of ``(seed, offset)``: element ``i`` of ``out`` (its row-major
*logical* index, whatever ``out``'s strides) draws the four 32-bit words
``x0, x1, x2, x3 = Philox4x32-10(counter = offset + i, key = seed)``
(``tl.randint4x``: the 64-bit counter is split into its low and high 32-bit halves, the 64-bit
seed into the two key words). Nothing else enters, so the same ``(seed, offset)`` gives the same
numbers interpreted on the CPU and compiled on CUDA, and disjoint counter ranges give independent
streams. The caller (tgrad's generator state) owns ``(seed, offset)``; each fill returns how many
counters it used (``numel`` rounded up to a multiple of 4) so the caller can advance its offset
past them.

Values are written through ``out``'s strides, so in-place ``uniform_``/``normal_`` on a
transposed or stepped view writes exactly the viewed elements.

Uniform, randint and Bernoulli values are bit-identical on both backends (integer Philox, then
IEEE +,*, launched with ``enable_fp_fusion=False`` so CUDA does not contract ``low + u*d`` into an
fma that rounds differently). Normals pass through log/cos/sqrt, whose last bits differ between
numpy (interpreter) and CUDA's fast math, so they agree to ~1e-6 relative, not bitwise.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import triton
import triton.language as tl

from ..factories import as_i64, cast_to, compile_options
from ..helpers.scalars import as_f64, f64_bits
from ..runtime.launch import launch
from ..helpers.layout import block_for, cdiv, collapse, element_offset

__all__ = ["fill_uniform", "fill_normal", "fill_randint", "fill_bernoulli", "counters_for", "set_philox_state",
           "philox_key_and_base", "philox_block", "bernoulli", "uniform53", "as_int64_bits"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@triton.jit
def uniform53(x0, x1):
    """A uniform fp64 on the 2^53-point grid ``k * 2^-53``, ``0 <= k < 2^53``, from two words:
    ``k = (x0 >> 5) * 2^26 + (x1 >> 6)`` (27 + 26 bits; the same construction as numpy's doubles)."""
    k = (x0 >> 5).to(tl.int64) * 67108864 + (x1 >> 6).to(tl.int64)
    return k.to(tl.float64) * 1.1102230246251565e-16  # 2^-53, exact in any float type


@triton.jit
def philox_key_and_base(seed, offset, state, FROM_STATE: tl.constexpr):
    """(Philox key, first counter) of a draw: the host's ``(seed, offset)``; or, in a captured
    graph (FROM_STATE), the key and base counter the graph writes to ``state`` before each replay,
    with ``offset`` the draw's counter within the graph -- so every replay draws fresh numbers,
    the ones eager steps would have drawn."""
    if FROM_STATE:
        return tl.load(state), tl.load(state + 1) + as_i64(offset)
    else:
        return seed, as_i64(offset)


@triton.jit
def philox_block(seed, offset, state, numel, FROM_STATE: tl.constexpr, BLOCK: tl.constexpr):
    """This program's block of a draw over ``numel`` elements: (lin, mask, key, ctr), ctr the 64-bit
    Philox counter of each logical element."""
    lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    key, base = philox_key_and_base(seed, offset, state, FROM_STATE)
    return lin, lin < numel, key, base + lin


@triton.jit
def _set_state_kernel(state, seed, offset):
    tl.store(state, as_i64(seed))
    tl.store(state + 1, as_i64(offset))


def set_philox_state(state: torch.Tensor, seed: int, offset: int) -> None:
    """``state[:] = (seed, offset)`` (int64 bits) on state's device: what a replayed graph's random
    kernels read (a launch, so a CUDA replay needs no host-to-device copy)."""
    launch(_set_state_kernel, (1,), state, as_int64_bits(seed), as_int64_bits(offset), num_warps=1)


# Each distribution is a formula ``draw(key, ctr, p0, p1, p2, WIDE)`` -> the values of one block:
# the kernel below takes it as a compile-time constant, as pointwise takes its op.

@triton.jit
def uniform(key, ctr, p0, p1, p2, WIDE: tl.constexpr):  # p = (low, high, cap) as fp64 bits
    x0, x1, _, _ = tl.randint4x(key, ctr)
    if WIDE:
        u = uniform53(x0, x1)
        low = as_f64(p0)
        high = as_f64(p1)
        cap = as_f64(p2)
    else:
        # 24 random bits: every grid point k * 2^-24 is exact in fp32, and u <= 1 - 2^-24.
        u = (x0 >> 8).to(tl.float32) * 5.960464477539063e-08  # 2^-24
        low = as_f64(p0).to(tl.float32)
        high = as_f64(p1).to(tl.float32)
        cap = as_f64(p2).to(tl.float32)
    # low + u*(high-low) can round up to high (or the later cast to a 16-bit type can);
    # clamping to ``cap`` (the largest value of out's dtype below high) keeps it < high, and
    # rounding is monotonic, so the store cannot round a value <= cap above cap.
    return tl.minimum(low + u * (high - low), cap)


@triton.jit
def normal(key, ctr, p0, p1, p2, WIDE: tl.constexpr):  # p = (mean, std) as fp64 bits
    n = tl.randn(key, ctr)  # Box-Muller on x0, x1 (fp32)
    if WIDE:
        y = as_f64(p0) + as_f64(p1) * n.to(tl.float64)
    else:
        y = as_f64(p0).to(tl.float32) + as_f64(p1).to(tl.float32) * n
    return y


@triton.jit
def randint(key, ctr, p0, p1, p2, WIDE: tl.constexpr):  # p = (low, span)
    x0, x1, _, _ = tl.randint4x(key, ctr)
    low = as_i64(p0)
    span = as_i64(p1)  # high - low >= 1
    # floor(u * span) with a 53-bit u: bias at most span / 2^53. The fp64 product may round
    # up to span itself when span is large, hence the clamp to span - 1.
    k = (uniform53(x0, x1) * span.to(tl.float64)).to(tl.int64)  # >= 0, so truncation is floor
    return low + tl.minimum(k, span - 1)


@triton.jit
def bernoulli(key, ctr, p0, p1, p2, WIDE: tl.constexpr):  # p = (threshold,)
    x0, _, _, _ = tl.randint4x(key, ctr)
    # u < p with u = x0 * 2^-32  <=>  x0 < threshold = ceil(p * 2^32) (host-computed)
    return x0.to(tl.int64) < as_i64(p0)


@triton.jit
def _random_kernel(out, seed, offset, state, p0, p1, p2, numel, shape, strides,
                   DRAW: tl.constexpr, WIDE: tl.constexpr, NDIM: tl.constexpr,
                   FROM_STATE: tl.constexpr, BLOCK: tl.constexpr):
    lin, mask, key, ctr = philox_block(seed, offset, state, numel, FROM_STATE, BLOCK)
    y = DRAW(key, ctr, p0, p1, p2, WIDE)
    tl.store(out + element_offset(lin, shape, strides, NDIM), cast_to(y, out.dtype.element_ty), mask=mask)


def counters_for(numel: int) -> int:
    """Philox counters a fill of ``numel`` elements consumes: numel rounded up to a multiple of 4
    (element i uses counter offset+i; the rounding keeps generator offsets 4-aligned, as torch's
    CUDA generator does)."""
    return (int(numel) + 3) // 4 * 4


def as_int64_bits(x: int) -> int:
    """An unsigned/any 64-bit quantity as the signed int64 with the same bits, so Triton types it
    i32 or i64 (never u64) whatever its value."""
    x = int(x) & 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x >= (1 << 63) else x


def _largest_below(high: float, dtype: torch.dtype) -> float:
    """The largest value representable in ``dtype`` that is strictly less than ``high``
    (host-side scalar arithmetic with numpy; bf16 is an fp32 with the low 16 bits zero)."""
    if dtype == torch.float64:
        return math.nextafter(high, -math.inf)
    if dtype in (torch.float32, torch.float16):
        t = np.float32 if dtype == torch.float32 else np.float16
        with np.errstate(over="ignore"):
            x = t(high)
        if float(x) >= high:
            x = np.nextafter(x, t(-np.inf))
        return float(x)
    # bfloat16: the largest fp32 below high, then rounded toward -inf onto the bf16 grid
    x = np.float32(high)
    if float(x) >= high:
        x = np.nextafter(x, np.float32(-np.inf))
    bits = int(np.array(x, dtype=np.float32).view(np.uint32))
    if bits & 0xFFFF:
        if float(x) > 0:
            bits &= 0xFFFF0000  # toward zero is toward -inf for positives
        else:
            bits = (bits & 0xFFFF0000) + 0x10000  # one bf16 step further from zero
    return float(np.array(bits, dtype=np.uint32).view(np.float32))


def _run(out, seed, offset, params, draw, wide, state):
    numel = out.numel()
    if numel == 0:
        return 0
    shape, (strides,) = collapse(tuple(out.shape), [out.stride()])
    block = block_for(numel, out.device)
    launch(_random_kernel, (cdiv(numel, block),), out, as_int64_bits(seed),
           as_int64_bits(offset), out if state is None else state, *params, numel, shape, strides,
           DRAW=draw, WIDE=wide, NDIM=len(shape), FROM_STATE=state is not None, BLOCK=block,
           **compile_options(out.device))
    return counters_for(numel)


def _check_float(out, what):
    if out.dtype not in _FLOATS:
        raise TypeError(f"{what} fills a floating tensor, got {out.dtype}")


def fill_uniform(out: torch.Tensor, seed: int, offset: int, low: float = 0.0,
                 high: float = 1.0, *, state=None) -> int:
    """``out[i] ~ U[low, high)``; returns the counters consumed.

    fp16/bf16/fp32 ``out``: ``u = (x0 >> 8) * 2^-24`` and ``y = low + u*(high-low)`` in fp32.
    fp64 ``out``: ``u = ((x0 >> 5) * 2^26 + (x1 >> 6)) * 2^-53`` and the formula in fp64.
    Either way ``y`` is then clamped to the largest value of ``out``'s dtype below ``high``, so
    after the store ``low <= out[i] < high`` (for ``low < high``; ``low == high`` gives ``low``).
    """
    _check_float(out, "fill_uniform")
    low, high = float(low), float(high)
    if not low <= high:
        raise ValueError(f"fill_uniform needs low <= high, got [{low}, {high})")
    cap = _largest_below(high, out.dtype) if high > low else high
    return _run(out, seed, offset, (f64_bits(low), f64_bits(high), f64_bits(cap)), uniform,
                out.dtype == torch.float64, state)


def fill_normal(out: torch.Tensor, seed: int, offset: int, mean: float = 0.0,
                std: float = 1.0, *, state=None) -> int:
    """``out[i] = mean + std * n_i``; returns the counters consumed.

    ``n_i`` is Triton's Box-Muller normal (``tl.randn``): ``u1, u2`` from ``x0, x1`` on a 2^-31 grid,
    ``n = sqrt(-2 ln max(u1, 1e-7)) * cos(2 pi u2)`` in fp32 (so ``|n| <= 5.68``). The affine map is
    in fp32, or in fp64 for an fp64 ``out`` (whose ``n`` still has fp32 resolution).
    """
    _check_float(out, "fill_normal")
    return _run(out, seed, offset, (f64_bits(mean), f64_bits(std), 0), normal,
                out.dtype == torch.float64, state)


def fill_randint(out: torch.Tensor, seed: int, offset: int, low: int, high: int, *, state=None) -> int:
    """``out[i]`` uniform over the integers ``low <= k < high``; returns the counters consumed.

    ``k = low + min(floor(u * (high - low)), high - low - 1)`` with the 53-bit ``u`` of an fp64
    ``fill_uniform``, computed in int64/fp64 and cast to ``out``'s dtype (any dtype). The
    non-uniformity is at most ``(high - low) / 2^53`` relative, negligible for any span below
    2^40 or so; spans up to 2^63 - 1 are accepted.
    """
    low, high = int(low), int(high)
    if high <= low:
        raise ValueError(f"fill_randint needs low < high, got [{low}, {high})")
    span = high - low
    if span >= 1 << 63 or not (-(1 << 63) <= low < (1 << 63)):
        raise ValueError(f"fill_randint range [{low}, {high}) does not fit in int64")
    return _run(out, seed, offset, (low, span, 0), randint, True, state)


def fill_bernoulli(out: torch.Tensor, seed: int, offset: int, p: float, *, state=None) -> int:
    """``out[i] = (u_i < p)`` as ``out``'s dtype (bool, int or float 0/1), so P(out[i] = 1) = p;
    returns the counters consumed.

    ``u_i = x0 * 2^-32``; the test is done exactly in integers as ``x0 < ceil(p * 2^32)``, so
    ``p <= 0`` gives all 0, ``p >= 1`` all 1, and the probability is ``ceil(p * 2^32) / 2^32``.
    For a dropout keep-mask pass ``p = 1 - drop_probability``.
    """
    p = float(p)
    if math.isnan(p):
        raise ValueError("fill_bernoulli: p is nan")
    threshold = min(max(math.ceil(p * 4294967296.0), 0), 1 << 32)
    return _run(out, seed, offset, (threshold, 0, 0), bernoulli, False, state)
