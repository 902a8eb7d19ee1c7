"""Elementary functions (logs and exponentials, trigonometric and hyperbolic, their inverses, and
the binary ones built from them), each formula beside its derivative.

The conventions of ``arithmetic.py`` hold: ``f(x, p)`` forward, ``f_bwd(saved, g, p)`` returns
``g * dy/dx`` (a pair for two inputs). Triton's interpreter has no libdevice, so every function past
exp/log/sqrt/sin/cos/erf is written out here, in forms that keep full precision near 0 and give
IEEE/C99 special values (inf, NaN, signed zeros) as PyTorch does.
"""
import triton
import triton.language as tl

from .integer import floor_divide_float

__all__ = ["expm1", "log1p", "tanh", "atan", "exp", "mul_bwd_y", "log", "log_bwd", "sqrt", "sqrt_bwd", "rsqrt",
           "rsqrt_bwd", "log1p_", "log1p_bwd", "expm1_", "expm1_bwd", "log2", "log2_bwd", "log10", "log10_bwd",
           "exp2", "exp2_bwd", "erf", "erf_bwd", "sin", "sin_bwd", "cos", "cos_bwd", "tan", "tan_bwd", "asin",
           "asin_bwd", "acos", "acos_bwd", "atan_", "atan_bwd", "tanh_", "tanh_bwd", "sinh", "sinh_bwd", "cosh",
           "cosh_bwd", "asinh", "asinh_bwd", "acosh", "acosh_bwd", "atanh", "atanh_bwd", "atan2", "atan2_bwd",
           "hypot", "hypot_bwd", "xlogy", "xlogy_bwd", "logaddexp", "logaddexp_bwd", "fmod", "fmod_bwd",
           "remainder", "remainder_bwd", "lerp", "lerp_bwd"]


# ----------------------------------------------------------------------------- helpers

@triton.jit
def expm1(x):
    """exp(x) - 1 without cancellation near 0 (Kahan: (u-1) * x / log(u))."""
    u = tl.exp(x)
    um1 = u - 1.0
    safe = tl.where(um1 == 0.0, 1.0, um1)
    r = um1 * x / tl.log(tl.where(u == 1.0, 2.0, u))
    r = tl.where(u == 1.0, x, r)
    r = tl.where(um1 == -1.0, -1.0, r)
    return tl.where(safe != safe, um1, tl.where(u == float("inf"), u, r))

@triton.jit
def log1p(x):
    """log(1 + x) without cancellation near 0 (Goldberg: log(u) * x / (u - 1), u = 1 + x)."""
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * x / tl.where(d == 0.0, 1.0, d))

@triton.jit
def tanh(x):
    """tanh(|x|) = -t / (t + 2) with t = expm1(-2|x|); the sign is put back after."""
    t = expm1(-2.0 * tl.abs(x))
    r = -t / (t + 2.0)
    return tl.where(x == 0, x, tl.where(x < 0, -r, r))  # tanh(-0.0) is -0.0


@triton.jit
def atan(x):
    """atan x. |x| > 1 uses atan x = pi/2 - atan(1/x); three halvings atan t = 2 atan(t / (1 +
    sqrt(1 + t^2))) bring t under tan(pi/32) ~ 0.1, where the odd series to t^17 is exact to
    double precision (computed in fp64: the halvings cost a float32 result ~3 ulps, and tan(acos 0)
    would show them). atan(+-0) keeps its sign."""
    a = tl.abs(x).to(tl.float64)
    inv = a > 1.0
    t = tl.where(inv, 1.0 / a, a)
    t = t / (1.0 + tl.sqrt(1.0 + t * t))
    t = t / (1.0 + tl.sqrt(1.0 + t * t))
    t = t / (1.0 + tl.sqrt(1.0 + t * t))
    t2 = t * t
    s = 1.0 / 17.0
    s = -1.0 / 15.0 + t2 * s
    s = 1.0 / 13.0 + t2 * s
    s = -1.0 / 11.0 + t2 * s
    s = 1.0 / 9.0 + t2 * s
    s = -1.0 / 7.0 + t2 * s
    s = 1.0 / 5.0 + t2 * s
    s = -1.0 / 3.0 + t2 * s
    r = 8.0 * (t + t * t2 * s)
    r = tl.where(inv, 1.5707963267948966 - r, r).to(x.dtype)
    return tl.where(x == 0.0, x, tl.where(x < 0, -r, r))


@triton.jit
def _negative(x):
    """x < 0, counting -0.0 (whose reciprocal is -inf) as negative: the sign bit."""
    return (x < 0) | ((x == 0.0) & (1.0 / tl.where(x == 0.0, x, 1.0) < 0))


@triton.jit
def _big_exp(a):
    """e^a / 2 for a >= 0, in float64, without overflowing before the result does: e^a * 0.5 (exact
    halving), and (e^(a/2) / 2) e^(a/2) where e^a alone would overflow. (e^(a - ln 2) loses a
    few ulps per unit of a: the argument's rounding error grows with a.)"""
    a = a.to(tl.float64)
    h = tl.exp(a * 0.5)
    return tl.where(a < 709.78, tl.exp(a) * 0.5, (h * 0.5) * h)


# ----------------------------------------------------------------------------- logs and exponentials

@triton.jit
def exp(x, p):                 # y = e^x                 dy/dx = y
    return tl.exp(x)

@triton.jit
def mul_bwd_y(y, g, p):        # g * y: the backward of exp (and of anything whose derivative is y)
    return g * y

@triton.jit
def log(x, p):                 # y = ln x                dy/dx = 1/x
    return tl.log(x)

@triton.jit
def log_bwd(x, g, p):
    return g / x

@triton.jit
def sqrt(x, p):                # y = sqrt x              dy/dx = 1/(2y)
    return tl.sqrt(x)

@triton.jit
def sqrt_bwd(y, g, p):
    return g / (2.0 * y)

@triton.jit
def rsqrt(x, p):               # y = x^-1/2              dy/dx = -y^3/2
    return tl.rsqrt(x)

@triton.jit
def rsqrt_bwd(y, g, p):
    return -0.5 * g * y * y * y

@triton.jit
def log1p_(x, p):              # y = ln(1 + x)           dy/dx = 1/(1 + x)
    return tl.where(x == float("inf"), x, log1p(x))

@triton.jit
def log1p_bwd(x, g, p):
    return g / (1.0 + x)

@triton.jit
def expm1_(x, p):              # y = e^x - 1             dy/dx = y + 1
    return expm1(x.to(tl.float64)).to(x.dtype)  # (fp64 inside, here and below: float32 results as exact as PyTorch's)

@triton.jit
def expm1_bwd(y, g, p):
    return g * (y + 1.0)

@triton.jit
def log2(x, p):                # y = log2 x              dy/dx = 1/(x ln 2)
    return tl.log2(x)

@triton.jit
def log2_bwd(x, g, p):
    return g / (x * 0.6931471805599453)

@triton.jit
def log10(x, p):               # y = log10 x             dy/dx = 1/(x ln 10)
    return tl.log(x) * 0.4342944819032518

@triton.jit
def log10_bwd(x, g, p):
    return g / (x * 2.302585092994046)

@triton.jit
def exp2(x, p):                # y = 2^x                 dy/dx = y ln 2
    return tl.exp2(x)

@triton.jit
def exp2_bwd(y, g, p):
    return g * y * 0.6931471805599453

@triton.jit
def erf(x, p):                 # y = erf x               dy/dx = 2/sqrt(pi) e^(-x^2)
    return tl.math.erf(x)

@triton.jit
def erf_bwd(x, g, p):
    return g * 1.1283791670955126 * tl.exp(-x * x)

# ----------------------------------------------------------------------------- trigonometric

@triton.jit
def sin(x, p):                 # y = sin x               dy/dx = cos x
    return tl.sin(x)

@triton.jit
def sin_bwd(x, g, p):
    return g * tl.cos(x)

@triton.jit
def cos(x, p):                 # y = cos x               dy/dx = -sin x
    return tl.cos(x)

@triton.jit
def cos_bwd(x, g, p):
    return -g * tl.sin(x)

@triton.jit
def tan(x, p):                 # y = tan x               dy/dx = 1 + y^2
    w = x.to(tl.float64)
    return (tl.sin(w) / tl.cos(w)).to(x.dtype)

@triton.jit
def tan_bwd(y, g, p):
    return g * (1.0 + y * y)

@triton.jit
def asin(x, p):                # y = asin x              dy/dx = 1/sqrt(1 - x^2)
    w = x.to(tl.float64)  # (fp64 throughout: a correctly rounded float32 result)
    return atan(w / tl.sqrt((1.0 - w) * (1.0 + w))).to(x.dtype)

@triton.jit
def asin_bwd(x, g, p):
    return g / tl.sqrt((1.0 - x) * (1.0 + x))

@triton.jit
def acos(x, p):                # y = acos x = 2 atan sqrt((1-x)/(1+x))      dy/dx = -1/sqrt(1 - x^2)
    w = x.to(tl.float64)
    return (2.0 * atan(tl.sqrt((1.0 - w) / (1.0 + w)))).to(x.dtype)

@triton.jit
def acos_bwd(x, g, p):
    return -g / tl.sqrt((1.0 - x) * (1.0 + x))

@triton.jit
def atan_(x, p):               # y = atan x              dy/dx = 1/(1 + x^2)
    return atan(x)

@triton.jit
def atan_bwd(x, g, p):
    return g / (1.0 + x * x)

# ----------------------------------------------------------------------------- hyperbolic

@triton.jit
def tanh_(x, p):               # y = tanh x              dy/dx = 1 - y^2   (in fp64: rounded once, as PyTorch's)
    return tanh(x.to(tl.float64)).to(x.dtype)

@triton.jit
def tanh_bwd(y, g, p):
    return g * (1.0 - y * y)

@triton.jit
def sinh(x, p):                # y = sinh x              dy/dx = cosh x
    return _sinh(x.to(tl.float64)).to(x.dtype)

@triton.jit
def _sinh(x):
    a = tl.abs(x)
    u = expm1(a)               # near 0: (e^a - e^-a)/2 = (u + u/(u+1))/2 without cancellation
    e = _big_exp(a)
    r = tl.where(a < 1.0, 0.5 * (u + u / (u + 1.0)), e - 0.25 / e)
    return tl.where(x == 0.0, x, tl.where(x < 0, -r, r))

@triton.jit
def sinh_bwd(x, g, p):
    e = _big_exp(tl.abs(x))
    return (g * (e + 0.25 / e)).to(g.dtype)

@triton.jit
def cosh(x, p):                # y = cosh x = e^a/2 + e^-a/2                dy/dx = sinh x
    e = _big_exp(tl.abs(x).to(tl.float64))
    return (e + 0.25 / e).to(x.dtype)

@triton.jit
def cosh_bwd(x, g, p):
    return g * sinh(x, p)

@triton.jit
def asinh(x, p):               # y = asinh x = log1p(a + a^2/(1 + sqrt(1 + a^2))), a = |x|
    a = tl.abs(x).to(tl.float64)
    small = log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 1e8, tl.log(a) + 0.6931471805599453, small).to(x.dtype)   # a^2 would overflow
    return tl.where(x == 0.0, x, tl.where(x < 0, -r, r))

@triton.jit
def asinh_bwd(x, g, p):        # dy/dx = 1/sqrt(x^2 + 1)
    return g / tl.sqrt(x * x + 1.0)

@triton.jit
def acosh(x, p):               # y = acosh x = log1p((x-1) + sqrt((x-1)(x+1))), x >= 1
    w = x.to(tl.float64)
    r = log1p((w - 1.0) + tl.sqrt((w - 1.0) * (w + 1.0)))
    return tl.where(w > 1e8, tl.log(w) + 0.6931471805599453, r).to(x.dtype)

@triton.jit
def acosh_bwd(x, g, p):        # dy/dx = 1/sqrt(x^2 - 1)
    return g / tl.sqrt(x * x - 1.0)

@triton.jit
def atanh(x, p):               # y = atanh x = log1p(2x/(1-x)) / 2          dy/dx = 1/(1 - x^2)
    w = x.to(tl.float64)
    return (0.5 * tl.where(w == 1.0, float("inf"), log1p(2.0 * w / (1.0 - w)))).to(x.dtype)

@triton.jit
def atanh_bwd(x, g, p):
    return g / ((1.0 - x) * (1.0 + x))

# ----------------------------------------------------------------------------- binary

@triton.jit
def atan2(y, x, p):            # angle of (x, y) in (-pi, pi], C99's special values
    ay = tl.abs(y)
    ax = tl.abs(x)
    r = tl.where(ax >= ay, atan(ay / ax), 1.5707963267948966 - atan(ax / ay))
    r = tl.where((ax == 0.0) & (ay == 0.0), 0.0, r)
    r = tl.where((ax == float("inf")) & (ay == float("inf")), 0.7853981633974483, r)
    r = tl.where(_negative(x), 3.141592653589793 - r, r)
    r = tl.where(_negative(y), -r, r)
    return tl.where((x != x) | (y != y), x + y, r)

@triton.jit
def atan2_bwd(y, x, g, p):     # dy: x/(x^2 + y^2), dx: -y/(x^2 + y^2); 0 at the origin, as PyTorch
    d = x * x + y * y
    r = tl.where(d == 0.0, 0.0, 1.0 / tl.where(d == 0.0, 1.0, d))
    return g * x * r, g * -y * r

@triton.jit
def hypot(a, b, p):            # sqrt(a^2 + b^2) scaled by the larger, inf if either is inf
    aa = tl.abs(a)
    ab = tl.abs(b)
    m = tl.where(aa > ab, aa, ab)
    n = tl.where(aa > ab, ab, aa)
    q = n / tl.where(m == 0.0, 1.0, m)
    r = m * tl.sqrt(1.0 + q * q)
    return tl.where((aa == float("inf")) | (ab == float("inf")), float("inf"), r)

@triton.jit
def hypot_bwd(a, b, r, g, p):  # da: a/r, db: b/r, from the saved result r (as PyTorch)
    return g * a / r, g * b / r

@triton.jit
def xlogy(x, y, p):            # x ln y, 0 where x = 0 (unless y is NaN)
    return tl.where((x == 0.0) & (y == y), 0.0, x * tl.log(y))

@triton.jit
def xlogy_bwd(x, y, g, p):     # dx: ln y (0 where x = 0 and y <= 0, or y NaN for a number y: p[0]), dy: x/y
    number_y = (tl.zeros_like(y) + p[0]) != 0.0
    masked = (x == 0.0) & ((y <= 0.0) | (number_y & (y != y)))
    return tl.where(masked, 0.0, xlogy(g, y, p)), g * x / y  # PyTorch's xlogy(g, y): 0 for g = 0 too

@triton.jit
def logaddexp(a, b, p):        # ln(e^a + e^b) = max + log1p(e^-|a-b|)
    m = tl.where(a > b, a, b)
    r = m + log1p(tl.exp(-tl.abs(a - b)))
    return tl.where((a == b) & ((a == float("inf")) | (a == float("-inf"))), a, r)

@triton.jit
def logaddexp_bwd(a, b, g, p):  # da: 1/(1 + e^(b-a)), db: 1/(1 + e^(a-b))
    return g / (1.0 + tl.exp(b - a)), g / (1.0 + tl.exp(a - b))

@triton.jit
def fmod(a, b, p):             # C fmod: the remainder of a/b truncated, the sign of a
    return a % b

@triton.jit
def fmod_bwd(a, b, g, p):      # da: 1, db: -trunc(a/b)
    q = a / b
    return g, -g * tl.where(q < 0, tl.ceil(q), tl.floor(q))

@triton.jit
def remainder(a, b, p):        # Python's %: the sign of b
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)

@triton.jit
def remainder_bwd(a, b, g, p):  # da: 1, db: -floor(a/b), PyTorch's floor division (NaN for an infinite a)
    return g, -g * floor_divide_float(a, b, p)

@triton.jit
def lerp(start, end, weight, p):   # start + w (end - start), from the nearer end (as PyTorch)
    return tl.where(tl.abs(weight) < 0.5, start + weight * (end - start), end + (weight - 1.0) * (end - start))

@triton.jit
def lerp_bwd(start, end, weight, g, p):
    return g * (1.0 - weight), g * weight, g * (end - start)
