"""Activation functions past the basic ones in ``math_ops.py`` (and the clamp family), each formula
beside its derivative, in ``math_ops.py``'s conventions. NaN inputs stay NaN, as in PyTorch."""
import triton
import triton.language as tl

from .math_ops import expm1, log1p, tanh

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

# ----------------------------------------------------------------------------- rounding

@triton.jit
def trunc(x, p):               # round toward zero       (zero gradient)
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))

@triton.jit
def frac(x, p):                # y = x - trunc(x)        dy/dx = 1
    return x - tl.where(x < 0, tl.ceil(x), tl.floor(x))

@triton.jit
def pass_bwd(g, p):            # g itself: the backward of anything with derivative 1
    return g

@triton.jit
def square(x, p):              # y = x^2                 dy/dx = 2x
    return x * x

@triton.jit
def square_bwd(x, g, p):
    return 2.0 * g * x

# ----------------------------------------------------------------------------- clamps

@triton.jit
def clamp_min_t(x, lo, p):     # y = max(x, lo), NaN kept; on a tie the bound, or x for p[0] = 1 (signed zeros)
    keep_x = (tl.zeros_like(x) + p[0]) != 0.0
    return tl.where((x != x) | (x > lo) | (keep_x & (x == lo)), x, lo)

@triton.jit
def clamp_min_t_bwd(x, lo, g, p):
    return tl.where(x >= lo, g, tl.zeros_like(g)), tl.where(x < lo, g, tl.zeros_like(g))

@triton.jit
def clamp_max_t(x, hi, p):     # y = min(x, hi)          dy/dx = [x <= hi], dy/dhi = [x > hi]
    keep_x = (tl.zeros_like(x) + p[0]) != 0.0
    return tl.where((x != x) | (x < hi) | (keep_x & (x == hi)), x, hi)

@triton.jit
def clamp_max_t_bwd(x, hi, g, p):
    return tl.where(x <= hi, g, tl.zeros_like(g)), tl.where(x > hi, g, tl.zeros_like(g))

@triton.jit
def hardtanh(x, p):            # y = min(max(x, lo), hi); p = (lo, hi)     dy/dx = [lo < x < hi]
    return tl.where(x < p[0], tl.zeros_like(x) + p[0], tl.where(x > p[1], tl.zeros_like(x) + p[1], x))  # NaN, -0 kept

@triton.jit
def hardtanh_bwd(x, g, p):     # selects; a NaN passes g (PyTorch: x <= lo or x >= hi gives 0)
    return tl.where((x <= p[0]) | (x >= p[1]), tl.zeros_like(g), g)

# ----------------------------------------------------------------------------- activations

@triton.jit
def hardsigmoid(x, p):         # y = relu6(x + 3) / 6    dy/dx = 1/6 on (-3, 3)
    return tl.where(x != x, x, tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0)

@triton.jit
def hardsigmoid_bwd(x, g, p):  # PyTorch scales by 1/6 rounded to float32 in every dtype: so do we
    return tl.where((x > -3.0) & (x < 3.0), g * 0.1666666716337204, tl.zeros_like(g))

@triton.jit
def hardswish(x, p):           # y = x relu6(x + 3) / 6  dy/dx = 0, x/3 + 1/2 on (-3, 3), 1
    return x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0

@triton.jit
def hardswish_bwd(x, g, p):
    return tl.where(x <= -3.0, tl.zeros_like(g), tl.where(x < 3.0, g * (x / 3.0 + 0.5), g))  # open interval, as PyTorch

@triton.jit
def _softplus(x):
    return tl.maximum(x, 0.0) + log1p(tl.exp(-tl.abs(x)))

@triton.jit
def mish(x, p):                # y = x tanh(softplus x)  dy/dx = t + x sigmoid(x) (1 - t^2)
    return x * tanh(_softplus(x))

@triton.jit
def mish_bwd(x, g, p):
    t = tanh(_softplus(x))
    s = 1.0 / (1.0 + tl.exp(-x))
    return g * (t + x * s * (1.0 - t * t))

@triton.jit
def logsigmoid(x, p):          # y = -softplus(-x)       dy/dx = sigmoid(-x)
    return tl.minimum(x, 0.0) - log1p(tl.exp(-tl.abs(x)))

@triton.jit
def logsigmoid_bwd(x, g, p):
    return g / (1.0 + tl.exp(x))

@triton.jit
def selu(x, p):                # y = scale (x, or alpha (e^x - 1) below 0)
    return 1.0507009873554805 * tl.where(x > 0, x, 1.6732632423543772 * expm1(tl.where(x > 0, 0.0, x)))

@triton.jit
def selu_bwd(x, g, p):
    return g * 1.0507009873554805 * tl.where(x <= 0, 1.6732632423543772 * tl.exp(tl.where(x <= 0, x, 0.0)), 1.0)

@triton.jit
def celu(x, p):                # y = x, or alpha (e^(x/alpha) - 1) below 0; p = (alpha,)
    return tl.where(x > 0, x, p[0] * expm1(tl.where(x > 0, 0.0, x) / p[0]))

@triton.jit
def celu_bwd(x, g, p):
    return tl.where(x <= 0, g * tl.exp(tl.where(x <= 0, x, 0.0) / p[0]), g)  # NaN passes g
