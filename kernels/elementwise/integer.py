"""Integer and bitwise formulas (``@triton.jit``, called by ``pointwise_kernel`` like those of
``arithmetic.py``), computed in the operands' own integer dtype: no floating point on the way, so
``2 ** 62`` and ``(2 ** 53 + 1) // 1`` are exact. None is differentiable. Also PyTorch's floor
division of floating point numbers (``div_floor_floating``), whose corner cases (``-0.5 // inf``
is -1) a floor of the quotient misses.

Triton's ``//`` and ``%`` on integers truncate (C); Python's and PyTorch's floor: the quotient is
corrected where the remainder's sign differs from the divisor's. Division by zero is refused by the
caller (PyTorch raises ZeroDivisionError), never reached here.
"""
import triton
import triton.language as tl

__all__ = ["floor_divide_int", "trunc_divide_int", "remainder_int", "floor_divide_float", "pow_int",
           "pow_int_scalar", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "left_shift",
           "right_shift", "any_zero", "trunc_divide_float"]


@triton.jit
def floor_divide_int(a, b, p):   # floor(a / b), b != 0
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def trunc_divide_int(a, b, p):   # trunc(a / b), b != 0: C's division
    q = a // b
    r = a - q * b
    # whichever rounding the backend uses, move a floor back towards zero
    return tl.where((r != 0) & ((r < 0) != (a < 0)), q + 1, q)


@triton.jit
def remainder_int(a, b, p):      # a - floor(a / b) b: the sign of b
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def floor_divide_float(a, b, p):  # PyTorch's div_floor_floating: fmod-based, exact at ties and at inf
    mod = a % b
    mod = tl.where((mod != 0) & ((mod < 0) != (a < 0)), mod - b, mod)  # C fmod: the sign of a
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    r = tl.where(div != 0, fl, (a / b) * 0.0)  # a zero quotient takes the sign of a / b
    return tl.where(b == 0, a / b, r)


@triton.jit
def pow_int(a, b, p):            # a^b by squaring, in a's integer dtype (wrapping as C); b < 0: 0 unless |a| = 1
    r = tl.zeros_like(a) + 1
    base = a
    e = b
    for _ in range(64):  # a loop, not 64 unrolled steps: unrolled, ptxas spilled 384 B a thread
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    neg = tl.where(a == 1, 1, tl.where(a == -1, tl.where((b & 1) != 0, -1, 1), 0))
    return tl.where(b < 0, neg.to(r.dtype), r)


@triton.jit
def pow_int_scalar(a, p):        # a^e for an integer exponent e = p[0] >= 0
    return pow_int(a, tl.zeros_like(a) + p[0], p)


@triton.jit
def bitwise_and(a, b, p):
    return a & b


@triton.jit
def bitwise_or(a, b, p):
    return a | b


@triton.jit
def bitwise_xor(a, b, p):
    return a ^ b


@triton.jit
def bitwise_not(x, p):
    return ~x


@triton.jit
def left_shift(a, b, p):         # 0 once the shift reaches the width (or is negative), as PyTorch
    bits = a.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < bits)
    return tl.where(ok, a << tl.where(ok, b, 0).to(a.dtype), 0)


@triton.jit
def right_shift(a, b, p):        # arithmetic; the sign fills the value once the shift reaches the width
    bits = a.dtype.primitive_bitwidth
    ok = (b >= 0) & (b < bits)
    return a >> tl.where(ok, b, bits - 1).to(a.dtype)


@triton.jit
def any_zero(x, p):              # the mask a division by zero is detected from
    return x == 0


@triton.jit
def trunc_divide_float(a, b, p):  # trunc(a / b), as PyTorch's div_trunc
    q = a / b
    return tl.where(q < 0, tl.ceil(q), tl.floor(q))
