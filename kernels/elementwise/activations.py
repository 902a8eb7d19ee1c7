"""Activation functions (and the clamp family, truncation, squares), each formula
beside its derivative, in ``arithmetic.py``'s conventions. NaN inputs stay NaN, as in PyTorch."""
import triton
import triton.language as tl

from .elementary import expm1, log1p, tanh

__all__ = ["trunc", "frac", "pass_bwd", "square", "square_bwd", "clamp_min_t", "clamp_min_t_bwd", "clamp_max_t",
           "clamp_max_t_bwd", "hardtanh", "hardtanh_bwd", "sigmoid", "sigmoid_bwd", "relu", "relu_bwd", "gelu",
           "gelu_bwd", "gelu_tanh", "gelu_tanh_bwd", "silu", "silu_bwd", "softplus", "softplus_bwd", "leaky_relu",
           "leaky_relu_bwd", "elu", "elu_bwd", "hardsigmoid", "hardsigmoid_bwd", "hardswish", "hardswish_bwd",
           "mish", "mish_bwd", "logsigmoid", "logsigmoid_bwd", "selu", "selu_bwd", "celu", "celu_bwd"]

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
def sigmoid(x, p):             # y = 1/(1+e^-x)          dy/dx = y(1-y)
    return 1.0 / (1.0 + tl.exp(-x))

@triton.jit
def sigmoid_bwd(y, g, p):
    return g * y * (1.0 - y)

@triton.jit
def relu(x, p):                # y = max(x, 0)           dy/dx = [y > 0]; NaN and -0.0 kept, as PyTorch
    return tl.where(x < 0, tl.zeros_like(x), x)

@triton.jit
def relu_bwd(y, g, p):        # selects (threshold_backward): a NaN passes g, as PyTorch
    return tl.where(y <= 0, tl.zeros_like(g), g)

@triton.jit
def gelu(x, p):                # y = x Phi(x) = x/2 (1 + erf(x/sqrt2))
    return 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))

@triton.jit
def gelu_bwd(x, g, p):         # dy/dx = Phi(x) + x phi(x)
    cdf = 0.5 * (1.0 + tl.math.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    return g * (cdf + x * pdf)

@triton.jit
def gelu_tanh(x, p):           # y = x/2 (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi)
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

@triton.jit
def gelu_tanh_bwd(x, g, p):    # dy/dx = (1+t)/2 + x/2 (1-t^2) k (1 + 3*0.044715 x^2)
    t = tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))
    dinner = 0.7978845608028654 * (1.0 + 0.134145 * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dinner)

@triton.jit
def silu(x, p):                # y = x sigmoid(x)        dy/dx = s (1 + x (1 - s))
    return x / (1.0 + tl.exp(-x))

@triton.jit
def silu_bwd(x, g, p):
    s = 1.0 / (1.0 + tl.exp(-x))
    return g * s * (1.0 + x * (1.0 - s))

@triton.jit
def softplus(x, p):            # y = log(1 + e^(bx)) / b, or x where bx > threshold; p = (b, threshold)
    bx = x * p[0]
    soft = (tl.maximum(bx, 0.0) + log1p(tl.exp(-tl.abs(bx)))) / p[0]
    return tl.where(bx > p[1], x, soft)

@triton.jit
def softplus_bwd(x, g, p):     # dy/dx = sigmoid(bx), or 1 past the threshold
    bx = x * p[0]
    return tl.where(bx > p[1], g, g / (1.0 + tl.exp(-bx)))

@triton.jit
def leaky_relu(x, p):          # y = x if x > 0 else slope x; p = (slope,)
    return tl.where(x > 0, x, x * p[0])

@triton.jit
def leaky_relu_bwd(x, g, p):
    return tl.where(x > 0, g, g * p[0])

@triton.jit
def elu(x, p):                 # y = x if x > 0 else alpha (e^x - 1); p = (alpha,)
    return tl.where(x > 0, x, p[0] * expm1(tl.where(x > 0, 0.0, x)))  # NaN and -0.0 kept

@triton.jit
def elu_bwd(x, g, p):          # dy/dx = alpha e^x for x <= 0, else 1 (so NaN passes g, as PyTorch)
    return tl.where(x <= 0, g * p[0] * tl.exp(tl.where(x <= 0, x, 0.0)), g)

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
