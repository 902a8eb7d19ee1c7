"""Special functions: the gamma family (``lgamma``, ``digamma``, ``polygamma``) and ``erfinv``,
each formula beside its derivative (the conventions of ``arithmetic.py``; ``i0`` is bessel.py's).

Each computes in float64 (a float32 result rounded once). Where PyTorch's own CPU kernel is an
approximation short of double precision (its trigamma, erfinv's Newton steps, polygamma's Hurwitz
zeta), the formula is that algorithm, so gradients agree with PyTorch's to
the last digits; lgamma, where PyTorch calls the C library, is written to double precision.
"""
import triton
import triton.language as tl

from .arithmetic import real_pow
from .elementary import log1p, tan

__all__ = ["lgamma", "lgamma_bwd", "digamma", "digamma_bwd", "erfinv", "erfinv_bwd", "lgamma_of", "digamma_of",
           "trigamma_of", "polygamma_of", "polygamma", "polygamma_bwd"]

# pi and 2^-53 are literals: a GPU compile reads only tl.constexpr globals, and the interpreter keeps
# a tl.constexpr times a tensor as a constexpr, which tl.sin and .to() reject

# ----------------------------------------------------------------------------- lgamma

@triton.jit
def _lgamma2(z):
    """ln Gamma(2 + z) for |z| <= 1/2: (1 - gamma) z + sum_k>=2 (-1)^k (zeta(k) - 1) / k z^k
    (Abramowitz & Stegun 6.1.33 with log1p taken out), zero at z = 0 exactly."""
    s = 5.731367241678862e-10
    s = -1.1921401405860912e-09 + z * s
    s = 2.4836745438024785e-09 + z * s
    s = -5.183475041970047e-09 + z * s
    s = 1.0838659214896955e-08 + z * s
    s = -2.2711094608943164e-08 + z * s
    s = 4.7698101693639804e-08 + z * s
    s = -1.0043224823968099e-07 + z * s
    s = 2.1207184805554665e-07 + z * s
    s = -4.492469198764566e-07 + z * s
    s = 9.55141213040742e-07 + z * s
    s = -2.039215753801366e-06 + z * s
    s = 4.374866789907488e-06 + z * s
    s = -9.439488275268397e-06 + z * s
    s = 2.050721277567069e-05 + z * s
    s = -4.492623673813314e-05 + z * s
    s = 9.945751278180853e-05 + z * s
    s = -0.00022315475845357939 + z * s
    s = 0.0005096695247430425 + z * s
    s = -0.001192753911703261 + z * s
    s = 0.0028905103307415234 + z * s
    s = -0.007385551028673986 + z * s
    s = 0.020580808427784546 + z * s
    s = -0.0673523010531981 + z * s
    s = 0.3224670334241132 + z * s
    return z * (0.42278433509846713 + z * s)


@triton.jit
def _lgamma_positive(w):
    """ln Gamma(w) for w > 0 (float64): Stirling's series from 10 on; below, the recurrence down
    into [1.5, 2.5) (a product of the factors, one log) and the series about 2, about 1 and
    (with -ln w) about 0."""
    big = w >= 10.0
    v = tl.where(big, 2.0, w)
    prod = tl.zeros_like(v) + 1.0
    for _ in range(8):
        down = v >= 2.5
        prod = tl.where(down, prod * (v - 1.0), prod)
        v = tl.where(down, v - 1.0, v)
    z = tl.where(v < 0.5, v, tl.where(v < 1.5, v - 1.0, v - 2.0))
    small = _lgamma2(z) + tl.log(prod)
    small = small - tl.where(v < 1.5, log1p(z), 0.0) - tl.where(v < 0.5, tl.log(v), 0.0)
    b = tl.where(big, w, 10.0)
    t = 1.0 / b
    t2 = t * t
    s = 1.0 / 156.0
    s = -691.0 / 360360.0 + t2 * s
    s = 1.0 / 1188.0 + t2 * s
    s = -1.0 / 1680.0 + t2 * s
    s = 1.0 / 1260.0 + t2 * s
    s = -1.0 / 360.0 + t2 * s
    s = 1.0 / 12.0 + t2 * s
    stirling = (b - 0.5) * tl.log(b) - b + 0.9189385332046728 + t * s
    return tl.where(big, stirling, small)


@triton.jit
def lgamma_of(x):
    """ln |Gamma(x)|; x <= 0 through the reflection ln(pi / |sin(pi x)|) - ln Gamma(1 - x), the sine
    taken of the distance to the nearest integer (exact), +inf at the poles."""
    w = x.to(tl.float64)
    neg = w <= 0.0
    pos = _lgamma_positive(tl.where(neg, 1.0 - w, w))
    d = tl.abs(w - tl.floor(w + 0.5))
    reflected = tl.log(3.141592653589793 / tl.sin(3.141592653589793 * tl.where(d == 0.0, 0.5, d))) - pos
    r = tl.where(neg, tl.where(d == 0.0, float("inf"), reflected), pos)
    r = tl.where((w == float("inf")) | (w == -float("inf")), float("inf"), r)
    return tl.where(w != w, w, r).to(x.dtype)


# ----------------------------------------------------------------------------- digamma, trigamma

@triton.jit
def _digamma_positive(x):
    """PyTorch's calc_digamma for x > 0: the recurrence up to 10 (psi(10) itself there), then the
    asymptotic series."""
    r = tl.zeros_like(x)
    for _ in range(10):
        up = x < 10.0
        r = tl.where(up, r - 1.0 / tl.where(up, x, 1.0), r)
        x = tl.where(up, x + 1.0, x)
    z = 1.0 / (x * x)
    y = -2.10927960927960927961E-2 + z * 8.33333333333333333333E-2
    y = 7.57575757575757575758E-3 + z * y
    y = -4.16666666666666666667E-3 + z * y
    y = 3.96825396825396825397E-3 + z * y
    y = -8.33333333333333333333E-3 + z * y
    y = 8.33333333333333333333E-2 + z * y
    y = tl.where(x < 1.0e17, z * y, 0.0)
    return tl.where(x == 10.0, r + 2.25175258906672110764, r + tl.log(x) - 0.5 / x - y)


@triton.jit
def digamma_of(x):
    """psi(x) as PyTorch computes it: -+inf at +-0, NaN at the negative integers and -inf, the
    reflection psi(1 - x) - pi / tan(pi frac(x)) below 0."""
    w = x.to(tl.float64)
    neg = w < 0.0
    r = _digamma_positive(tl.where(neg, 1.0 - w, w))
    frac = w - tl.ceil(w)
    r = tl.where(neg, r - 3.141592653589793 / tan(3.141592653589793 * frac, 0.0), r)
    r = tl.where(neg & (frac == 0.0), float("nan"), r)
    zero = w == 0.0
    r = tl.where(zero & (1.0 / tl.where(zero, w, 1.0) < 0), float("inf"), tl.where(zero, -float("inf"), r))
    return r.to(x.dtype)


@triton.jit
def trigamma_of(x):
    """psi'(x), PyTorch's calc_trigamma: the reflection below 1/2, six steps of the recurrence, then
    the asymptotic series to x^-7."""
    w = x.to(tl.float64)
    low = w < 0.5
    s = tl.sin(3.141592653589793 * w)
    r = tl.where(low, -(3.141592653589793 * 3.141592653589793) / (s * s), 0.0)
    w = tl.where(low, 1.0 - w, w)
    for _ in range(6):
        r = r + 1.0 / (w * w)
        w = w + 1.0
    ixx = 1.0 / (w * w)
    r = r + (1.0 + 1.0 / (2.0 * w) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / w
    return tl.where(low, -r, r).to(x.dtype)


@triton.jit
def lgamma(x, p):              # y = ln |Gamma(x)|       dy/dx = psi(x)
    return lgamma_of(x)

@triton.jit
def lgamma_bwd(x, g, p):
    return g * digamma_of(x)

@triton.jit
def digamma(x, p):             # y = psi(x)              dy/dx = psi'(x)
    return digamma_of(x)

@triton.jit
def digamma_bwd(x, g, p):
    return g * trigamma_of(x)


# ----------------------------------------------------------------------------- polygamma

# the most terms a block sums before the tail (NaN below q = -65,527, docs/differences.md): Cephes'
# count is unbounded, and a lane a launch masks off may hold any value on a GPU
ZETA_TERMS_MAX = tl.constexpr(1 << 16)


@triton.jit
def _zeta_tail_term(s, a, b, k, w, xs, done, c):
    """One term of Cephes' Euler-Maclaurin tail (c: its Bernoulli-number divisor); a lane stops,
    as Cephes returns, once a term is below machine epsilon of the sum."""
    a = a * (xs + k)
    b = b / w
    t = a * b / c
    s = tl.where(done, s, s + t)
    done = done | (tl.abs(t / s) < 1.1102230246251565e-16)
    k = k + 1.0
    a = a * (xs + k)
    b = b / w
    return s, a, b, k + 1.0, done


@triton.jit
def _zeta_terms(q):
    """How many terms Cephes' loop sums before its tail for the block's q (a number): 9, or
    floor(9 - q) + 1 for q < 0 at the most negative lane (poles and NaN sum nothing that counts), at
    most ZETA_TERMS_MAX."""
    skip = (q != q) | ((q <= 0.0) & (q == tl.floor(q)))
    q_least = tl.min(tl.where(skip, 9.0, q))
    return (tl.minimum(tl.maximum(9.0 - q_least, 8.0), ZETA_TERMS_MAX - 1.0)).to(tl.int32) + 1


@triton.jit
def _zeta_term(s, a, b, e, done, more):
    """One term (q + k)^e of Cephes' sum for the lanes ``more``; a lane stops, as Cephes returns,
    once a term is below machine epsilon of the sum."""
    a = tl.where(more, a + 1.0, a)
    b = tl.where(more, real_pow(a, e), b)
    s = tl.where(more, s + b, s)
    done = done | (more & (-1.1102230246251565e-16 * s < b) & (b < 1.1102230246251565e-16 * s))
    return s, a, b, done


@triton.jit
def _hurwitz_zeta(xs, q, terms):
    """zeta(xs, q) = sum_k (q + k)^-xs for an integer xs > 1, Cephes' zeta as PyTorch runs it: terms
    summed while fewer than 9 or q + k <= 9 (stopping where one is below epsilon of the sum), then
    the Euler-Maclaurin tail. +inf at the non-positive integers q; NaN where more than
    ZETA_TERMS_MAX terms would be summed first. The block sums ``terms`` (_zeta_terms), each lane
    masked once it stops."""
    e = tl.zeros_like(q) - xs
    s = real_pow(q, e)
    a = q
    b = tl.zeros_like(q)
    done = q != q
    # every lane's first nine terms in a loop of constant count: with them in the data-dependent
    # loop too, ptxas spilled 32-72 B a thread on sm_90
    for _ in range(9):
        s, a, b, done = _zeta_term(s, a, b, e, done, done == 0)
    for _ in range(9, terms):  # q < 0: until q + k > 9
        s, a, b, done = _zeta_term(s, a, b, e, done, (done == 0) & (a <= 9.0))
    short = (done == 0) & (a <= 9.0)
    w = a
    s = tl.where(done, s, s + b * w / (xs - 1.0) - 0.5 * b)
    a = tl.zeros_like(q) + 1.0  # (tensors: float64 where a number parameter would be float32 on a GPU)
    k = tl.zeros_like(q)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 12.0)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -720.0)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 30240.0)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -1209600.0)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 47900160.0)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -1.8924375803183791606e9)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 7.47242496e10)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -2.950130727918164224e12)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 1.1646782814350067249e14)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -4.5979787224074726105e15)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, 1.8152105401943546773e17)
    s, a, b, k, done = _zeta_tail_term(s, a, b, k, w, xs, done, -7.1661652561756670113e18)
    s = tl.where(short, float("nan"), s)
    return tl.where((q <= 0.0) & (q == tl.floor(q)), float("inf"), s)


@triton.jit
def polygamma_of(x, n):
    """psi^(n)(x) for an integer n >= 0 (a number): digamma and trigamma for n = 0, 1, else
    (-1)^(n+1) n! zeta(n + 1, x), n! as exp(lgamma(n + 1)) as PyTorch computes it."""
    w = x.to(tl.float64)
    terms = _zeta_terms(w)
    if n == 0.0:
        r = digamma_of(w)
    elif n == 1.0:
        r = trigamma_of(w)
    else:
        sign = 2.0 * (n % 2.0) - 1.0  # +1 for odd n, -1 for even
        z = _hurwitz_zeta(n + 1.0, w, terms)
        fact = tl.exp(_lgamma_positive(tl.zeros_like(w) + (n + 1.0)))  # n + 1 >= 3: no reflection, no sine
        r = sign * fact * z
    return r.to(x.dtype)


@triton.jit
def polygamma(x, p):           # y = psi^(n)(x); p = (n,)    dy/dx = psi^(n+1)(x)
    return polygamma_of(x, p[0])

@triton.jit
def polygamma_bwd(x, g, p):
    return g * polygamma_of(x, p[0] + 1.0)


# ----------------------------------------------------------------------------- erfinv

@triton.jit
def _erfinv(y):
    """PyTorch's calc_erfinv (float64): a rational first guess, two Newton steps on erf."""
    a = tl.abs(y)
    z = y * y
    num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899
    dem = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0
    central = y * num / dem
    t = tl.sqrt(-tl.log((1.0 - tl.where(a < 1.0, a, 0.0)) / 2.0))
    num = ((1.641345311 * t + 3.429567803) * t - 1.624906493) * t - 1.970840454
    dem = (1.6370678 * t + 3.5438892) * t + 1.0
    tail = tl.where(y < 0, -num, num) / dem
    x = tl.where(a <= 0.7, central, tail)
    x = x - (tl.math.erf(x) - y) / (1.1283791670955126 * tl.exp(-x * x))
    x = x - (tl.math.erf(x) - y) / (1.1283791670955126 * tl.exp(-x * x))
    x = tl.where(a == 1.0, tl.where(y < 0, -float("inf"), float("inf")), x)
    return tl.where(a > 1.0, float("nan"), x)


@triton.jit
def erfinv(x, p):              # y = erf^-1(x)           dy/dx = sqrt(pi)/2 e^(y^2)
    return _erfinv(x.to(tl.float64)).to(x.dtype)

@triton.jit
def erfinv_bwd(x, g, p):       # (from x, as PyTorch: the result is recomputed)
    y = erfinv(x, p)
    return g * 0.886226925452758 * tl.exp(y * y)
