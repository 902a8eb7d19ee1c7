"""Arithmetic formulas, each beside its local derivative (micrograd style).

The conventions of every formula of this package (``pointwise_kernel`` calls them on loaded values):
``f(x, p)`` for one input, ``f(a, b, p)`` for two, ``f(a, b, c, p)`` for three, where ``p`` is a
pair of scalar parameters (in the compute dtype; a caller that passes none gets zeros, so a
formula that reads ``p`` must be given its parameters). A ``*_bwd`` formula takes what the forward
saved (the input ``x`` or the output ``y``) and the upstream gradient ``g`` and returns
``g * dy/dx``; two-input ``*_bwd`` formulas return a pair (da, db). Values arrive in fp32 (fp16/bf16
widened) or fp64.

Here: negation, absolute value, reciprocal, the clamps, powers (``real_pow``: a^b for real a, b;
``scalar_pow``: x^e for a scalar e), sign and rounding, copies and fills, add/sub/mul/div,
maximum and minimum:

    add      y = a + alpha b          dy/da = 1, dy/db = alpha
    mul      y = a b                  dy/da = b, dy/db = a
    div      y = a / b                dy/da = 1/b, dy/db = -a/b^2
    pow_     y = a^b                  dy/da = b a^(b-1), dy/db = a^b ln a
    maximum  y = max(a, b)            ties split the gradient evenly, as torch
"""
import triton
import triton.language as tl

__all__ = ["neg", "neg_bwd", "abs_", "abs_bwd", "reciprocal", "reciprocal_bwd", "clamp", "clamp_bwd", "clamp_t",
           "clamp_t_x", "clamp_t_lo", "clamp_t_hi", "pow_scalar", "pow_scalar_bwd", "scalar_pow", "sign", "floor",
           "ceil", "round_", "identity", "second", "fill", "real_pow", "add", "sub", "add_plain", "sub_plain",
           "mul", "mul_bwd", "mul_self_bwd", "div", "div_bwd", "pow_", "pow_bwd", "maximum", "maximum_bwd",
           "minimum", "minimum_bwd"]


@triton.jit
def neg(x, p):                 # y = -x                  dy/dx = -1
    return -x

@triton.jit
def neg_bwd(g, p):
    return -g

@triton.jit
def abs_(x, p):                # y = |x|                 dy/dx = sign(x), 0 at 0
    return tl.abs(x)

@triton.jit
def abs_bwd(x, g, p):
    return tl.where(x > 0, g, tl.where(x < 0, -g, 0.0 * g))

@triton.jit
def reciprocal(x, p):          # y = 1/x                 dy/dx = -y^2
    return 1.0 / x

@triton.jit
def reciprocal_bwd(y, g, p):
    return -g * y * y

@triton.jit
def clamp(x, p):               # y = min(max(x, lo), hi); p = (lo, hi), +-inf when absent; NaN (x or a bound) kept
    return clamp_t(x, tl.zeros_like(x) + p[0], tl.zeros_like(x) + p[1], p)

@triton.jit
def clamp_bwd(x, g, p):        # dy/dx = [lo <= x <= hi]
    return tl.where((x >= p[0]) & (x <= p[1]), g, tl.zeros_like(g))

@triton.jit
def clamp_t(x, lo, hi, p):     # tensor bounds (a missing one is +-inf): y = min(max(x, lo), hi), NaN propagated
    r = tl.where((x < lo) | (lo != lo), lo, x)
    return tl.where((r > hi) | (hi != hi), hi, r)

@triton.jit
def clamp_t_x(x, lo, hi, p):   # where dy/dx = 1
    return (x >= lo) & (x <= hi)

@triton.jit
def clamp_t_lo(x, lo, hi, p):  # where dy/dlo = 1 (PyTorch: below a minimum that is under the maximum;
    r = x < lo                  # with no maximum, p[0] = 1, below any minimum, +inf too)
    if p[0] == 0.0:
        r = r & (lo < hi)
    return r

@triton.jit
def clamp_t_hi(x, lo, hi, p):  # where dy/dhi = 1 (above the maximum, or everywhere once max < min)
    return (x > hi) | (hi < lo)

@triton.jit
def pow_scalar(x, p):          # y = x^e; p = (e, 1 for an integer result)    dy/dx = e x^(e-1)
    return _round_if(scalar_pow(x, p[0]), p[1] > 0.0)

@triton.jit
def pow_scalar_bwd(x, g, p):   # p[1] = -1: e x^(e-1) even for e = 0 (PyTorch's x ** False)
    e = p[0]
    if e == 0.0 and p[1] >= 0.0:
        r = tl.zeros_like(g)
    else:
        r = g * e * scalar_pow(x, e - 1.0)
    return r

@triton.jit
def scalar_pow(x, e):
    """x^e for a scalar e: exact products for the exponents models use most (x**2 is 27. at x=3,
    as in PyTorch, not exp(3 ln 3)); exp/log otherwise."""
    if e == 1.0:
        r = x
    elif e == 2.0:
        r = x * x
    elif e == 3.0:
        r = x * x * x
    elif e == 0.0:
        r = tl.zeros_like(x) + 1.0
    elif e == 0.5:  # as PyTorch (float32/64): sqrt, so sqrt(-inf) is NaN
        r = tl.sqrt(x)
    elif e == -0.5:  # as PyTorch (float32/64): rsqrt, so (-0.0)^-0.5 is -inf
        r = 1.0 / tl.sqrt(x)
    elif e == -1.0:
        r = 1.0 / x
    elif e == -2.0:
        r = 1.0 / (x * x)
    else:
        r = real_pow(x, tl.zeros_like(x) + e)  # not e + 0 * x: that is NaN at x = +-inf
    return r

@triton.jit
def sign(x, p):                # zero gradient for sign/floor/ceil/round
    return tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)  # sign(NaN) is 0, as PyTorch

@triton.jit
def floor(x, p):
    return tl.floor(x)

@triton.jit
def ceil(x, p):
    return tl.ceil(x)

@triton.jit
def round_(x, p):              # round half to even, as torch.round
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0.0
    r = tl.where(tie & odd, r - 1.0, r)
    r = tl.where(r == 0.0, x * 0.0, r)  # round(-0.4) is -0.0
    big = 4503599627370496.0 if x.dtype == tl.float64 else 8388608.0  # already integral past this
    return tl.where(tl.abs(x) >= big, x, r)

@triton.jit
def identity(x, p):            # copies and dtype casts
    return x

@triton.jit
def second(a, b, p):           # copy_: b (broadcast, cast) into a
    return b

@triton.jit
def fill(x, p):                # every element = p[0]; x only sets the shape (never 0*x: inf*0 is nan)
    return tl.zeros_like(x) + p[0]

@triton.jit
def _round_if(r, flag):
    """Integer powers are computed in fp64 through exp/log (3^5 comes out 242.99...): rounded to the
    nearest integer when ``flag`` is set, so the cast to the integer result is exact."""
    if flag:
        r = tl.floor(r + 0.5)
    return r

@triton.jit
def _square_step(r, base, e):
    """One bit of exponentiation by squaring: r times base if e is odd; base squared; e halved."""
    odd = (e - 2.0 * tl.floor(e * 0.5)) != 0.0
    return tl.where(odd, r * base, r), base * base, tl.floor(e * 0.5)

@triton.jit
def real_pow(a, b):
    """a^b for any real a, b: exp(b ln|a|) with the sign of a for odd integer b; 0^0 = 1. An integer
    b with |b| <= 127 multiplies (2.0 ** 3.0 is 8 exactly, as C's pow gives; exp/log gives 7.99...)."""
    # in fp64: exp(b ln|a|) in fp32 loses |b ln a| ulps (a float32 2.5^20 off in the 4th digit)
    mag = tl.exp(b.to(tl.float64) * tl.log(tl.abs(a).to(tl.float64))).to(a.dtype)
    small = (tl.floor(b) == b) & (tl.abs(b) <= 127.0)
    e = tl.where(small, tl.abs(b), 0.0).to(tl.float64)
    r = tl.zeros_like(e) + 1.0
    base = a.to(tl.float64)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    r, base, e = _square_step(r, base, e)
    by_squaring = tl.where(b < 0, 1.0 / r, r).to(a.dtype)
    b_int = tl.floor(b) == b
    b_inf = tl.abs(b) == float("inf")
    b_odd = b_int & (~b_inf) & ((b - 2.0 * tl.floor(b * 0.5)) != 0.0)
    negative = (a < 0) | ((a == 0) & (1.0 / a < 0))  # -0.0 too: (-0.0)^-1 is -inf
    r = tl.where(negative & b_odd, -mag, mag)
    r = tl.where((a < 0) & (~b_int), float("nan"), r)
    r = tl.where((a == float("-inf")) & (b == b), tl.where(b < 0, 0.0, float("inf")) * tl.where(b_odd, -1.0, 1.0), r)
    r = tl.where((a == -1.0) & b_inf, 1.0, r)  # C pow: (-1)^+-inf = 1
    r = tl.where(small & (a == a), by_squaring, r)
    return tl.where((b == 0.0) | (a == 1.0), 1.0, r)  # 1^NaN = NaN^0 = 1

@triton.jit
def add(a, b, p):              # y = a + alpha b; p = (alpha,)
    return a + p[0] * b

@triton.jit
def sub(a, b, p):              # y = a - alpha b
    return a - p[0] * b

@triton.jit
def add_plain(a, b, p):        # y = a + b: alpha = 1 needs no parameter to decode (fewer ops interpreted)
    return a + b

@triton.jit
def sub_plain(a, b, p):        # y = a - b
    return a - b

@triton.jit
def mul(a, b, p):              # y = a b                 dy/da = b, dy/db = a
    return a * b

@triton.jit
def mul_bwd(a, b, g, p):
    return g * b, g * a

@triton.jit
def mul_self_bwd(a, g, p):       # x * x: both gradients at once, 2 (g x) = g x + g x exactly
    return (g * a) * 2.0

@triton.jit
def div(a, b, p):              # y = a / b               dy/da = 1/b, dy/db = -a/b^2
    return a / b

@triton.jit
def div_bwd(a, b, g, p):
    gb = g / b
    return gb, -gb * a / b

@triton.jit
def pow_(a, b, p):             # y = a^b; p = (_, 1 for an integer result)    dy/da = b a^(b-1), dy/db = a^b ln a
    return _round_if(real_pow(a, b), p[1] != 0.0)

@triton.jit
def pow_bwd(a, b, g, p):
    da = tl.where(b == 0.0, tl.zeros_like(g), g * b * real_pow(a, b - 1.0))
    db = tl.where((a == 0.0) & (b >= 0.0), 0.0 * g, g * real_pow(a, b) * tl.log(a))
    return da, db

@triton.jit
def maximum(a, b, p):          # ties split the gradient evenly, as torch; a tie returns a (-0.0 vs 0.0), NaN wins
    return tl.where(b != b, b, tl.where(a < b, b, a))

@triton.jit
def maximum_bwd(a, b, g, p):   # selects; a NaN on either side sends g to both (as PyTorch's masked_fill)
    half = 0.5 * g
    return (tl.where(a < b, tl.zeros_like(g), tl.where(a == b, half, g)),
            tl.where(a > b, tl.zeros_like(g), tl.where(a == b, half, g)))

@triton.jit
def minimum(a, b, p):
    return tl.where(b != b, b, tl.where(b < a, b, a))

@triton.jit
def minimum_bwd(a, b, g, p):
    half = 0.5 * g
    return (tl.where(a > b, tl.zeros_like(g), tl.where(a == b, half, g)),
            tl.where(a < b, tl.zeros_like(g), tl.where(a == b, half, g)))
