"""Optimizer updates, one ``@triton.jit`` formula per algorithm, run by ``step.optim_step_kernel``
and, on the CPU, ``step.optim_params_kernel`` (the update is its ``UPDATE`` constexpr, as a pointwise op's formula is ``pointwise_kernel``'s).

A formula is ``update(p, g, s0, s1, s2, k, c, flag, OPTIONS, COMPUTE) -> (p, s0, s1, s2)`` on one
block of a parameter: ``p`` the parameter, ``g`` its gradient (already negated when maximizing),
``s0..s2`` its state tensors (the slots the algorithm uses; the others are placeholders returned
unchanged), ``k`` the group's constants (hyperparameters and the coefficients PyTorch derives from
them, computed on the host in fp64 and rounded to the compute dtype), ``c`` the parameter's
step-dependent scalars (host fp64, rounded likewise), ``flag`` a per-parameter branch the host
decides, ``OPTIONS`` the variant bits below. Values are fp32 (fp16/bf16 parameters) or fp64. These
are PyTorch's single-tensor (``foreach=False``) updates; ``lerp(a, b, w)`` is torch.lerp's
two-sided formula, and on CUDA square root and division are the IEEE-rounded ``sqrt_rn``/``div_rn``,
so compiled results follow the same formulas as the interpreter's numpy ones.

    sgd       k = (lr, wd, momentum, 1 - dampening); flag: the first momentum step
              g += wd p;  buf = g (first) | momentum buf + (1 - dampening) g;
              g = g + momentum buf (nesterov) | buf;  p -= lr g
    adam      k = (1 - beta1, beta2, 1 - beta2, eps, wd, 1 - lr wd); c = (lr / (1 - beta1^t), sqrt(1 - beta2^t))
              p *= 1 - lr wd (AdamW) | g += wd p;  m += (1 - beta1)(g - m);  v = beta2 v + (1 - beta2) g^2;
              vmax = max(vmax, v) (amsgrad);  p -= c0 m / (sqrt(v | vmax) / c1 + eps)
    rmsprop   k = (lr, alpha, 1 - alpha, eps, wd, momentum)
              g += wd p;  sq = alpha sq + (1 - alpha) g^2;
              avg = sqrt(sq - ga^2) + eps with ga += (1 - alpha)(g - ga) (centered) | sqrt(sq) + eps;
              buf = momentum buf + g / avg;  p -= lr buf (momentum) | p -= lr g / avg
    adagrad   k = (wd, eps); c = (lr / (1 + (t - 1) lr_decay),)
              g += wd p;  sum += g^2;  p -= c0 g / (sqrt(sum) + eps)
    adadelta  k = (lr, rho, 1 - rho, eps, wd)
              g += wd p;  sq = rho sq + (1 - rho) g^2;  d = sqrt(acc + eps) / sqrt(sq + eps) g;
              acc = rho acc + (1 - rho) d^2;  p -= lr d
    adamax    k = (1 - beta1, beta2, eps, wd); c = (lr / (1 - beta1^t),)
              g += wd p;  m = lerp(m, g, 1 - beta1);  u = max(beta2 u, |g| + eps);  p -= c0 m / u
    nadam     k = adam's; c = (1 - beta2^t, -lr (1 - mu_t) / (1 - prod mu), -lr mu_t+1 / (1 - prod mu * mu_t+1))
              weight decay as adam;  m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g^2;
              den = sqrt(v / c0) + eps;  p += c1 g / den;  p += c2 m / den
    radam     k = adam's + (lr,); c = (1 - beta1^t, sqrt(1 - beta2^t), the rectification); flag: rho_t > 5
              weight decay, m, v as nadam;  b = m / c0 lr;  p -= b (c1 / (sqrt(v) + eps)) c2 (flag) | p -= b
    asgd      k = (wd,); c = (eta, mu, 1 - lambd eta); flag: mu != 1
              g += wd p;  p = p (1 - lambd eta) - eta g;  ax += (p - ax) mu (flag) | ax = p
    rprop     k = (etaminus, etaplus, step_size_min, step_size_max); s0 = prev, s1 = step size
              s = etaplus, etaminus or 1 as g prev > 0, < 0 or = 0 (NaN stays NaN);
              step = clamp(step s, min, max);  g = 0 where s = etaminus;  p -= sign(g) step;  prev = g
    axpy      k = (alpha,):  p += alpha g, ``g`` any vector (LBFGS adds its direction to every parameter)
"""
import triton
import triton.language as tl

__all__ = ["UPDATES", "OPTION_BITS"]

# variant bits of OPTIONS (one constexpr: the formulas share one signature)
WEIGHT_DECAY = tl.constexpr(1)  # wd != 0
DECOUPLED = tl.constexpr(2)  # the decay shrinks p (AdamW, decoupled NAdam/RAdam) instead of adding to g
MOMENTUM = tl.constexpr(4)
NESTEROV = tl.constexpr(8)
AMSGRAD = tl.constexpr(16)
CENTERED = tl.constexpr(32)
OPTION_BITS = {"weight_decay": 1, "decoupled": 2, "momentum": 4, "nesterov": 8, "amsgrad": 16, "centered": 32}


# ----------------------------------------------------------------------------- helpers

@triton.jit
def sqrt(x, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return tl.sqrt(x)  # fp64 sqrt is correctly rounded already
    else:
        return tl.sqrt_rn(x)


@triton.jit
def div(a, b, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return a / b
    else:
        return tl.div_rn(a, b)


@triton.jit
def lerp(a, b, w):
    """torch.lerp: a + w (b - a) for |w| < 0.5, else b - (b - a)(1 - w)."""
    return tl.where(w < 0.5, a + w * (b - a), b - (b - a) * (1.0 - w))


@triton.jit
def weight_decay(p, g, wd, shrink, OPTIONS: tl.constexpr):
    """(p, g) after weight decay: p *= 1 - lr wd (``shrink``) when decoupled, else g += wd p."""
    if WEIGHT_DECAY & OPTIONS:
        if DECOUPLED & OPTIONS:
            p = p * shrink
        else:
            g = g + wd * p
    return p, g


# ----------------------------------------------------------------------------- updates

@triton.jit
def sgd(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[1], 0.0, OPTIONS)
    if MOMENTUM & OPTIONS:
        s0 = tl.where(flag, g, s0 * k[2] + k[3] * g)
        if NESTEROV & OPTIONS:
            g = g + k[2] * s0
        else:
            g = s0
    return p - k[0] * g, s0, s1, s2


@triton.jit
def adam(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[4], k[5], OPTIONS)
    s0 = s0 + k[0] * (g - s0)
    s1 = s1 * k[1] + k[2] * g * g
    v = s1
    if AMSGRAD & OPTIONS:
        s2 = tl.maximum(s2, s1)
        v = s2
    denom = div(sqrt(v, COMPUTE), c[1], COMPUTE) + k[3]
    return p - c[0] * div(s0, denom, COMPUTE), s0, s1, s2


@triton.jit
def rmsprop(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[4], 0.0, OPTIONS)
    s0 = s0 * k[1] + k[2] * g * g
    if CENTERED & OPTIONS:
        s2 = s2 + k[2] * (g - s2)
        avg = sqrt(s0 - s2 * s2, COMPUTE) + k[3]
    else:
        avg = sqrt(s0, COMPUTE) + k[3]
    if MOMENTUM & OPTIONS:
        s1 = s1 * k[5] + div(g, avg, COMPUTE)
        p = p - k[0] * s1
    else:
        p = p - k[0] * div(g, avg, COMPUTE)
    return p, s0, s1, s2


@triton.jit
def adagrad(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[0], 0.0, OPTIONS)
    s0 = s0 + g * g
    return p - c[0] * div(g, sqrt(s0, COMPUTE) + k[1], COMPUTE), s0, s1, s2


@triton.jit
def adadelta(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[4], 0.0, OPTIONS)
    s0 = s0 * k[1] + k[2] * g * g
    d = div(sqrt(s1 + k[3], COMPUTE), sqrt(s0 + k[3], COMPUTE), COMPUTE) * g
    s1 = s1 * k[1] + k[2] * d * d
    return p - k[0] * d, s0, s1, s2


@triton.jit
def adamax(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[3], 0.0, OPTIONS)
    s0 = lerp(s0, g, k[0])
    s1 = tl.maximum(s1 * k[1], tl.abs(g) + k[2])
    return p - div(c[0] * s0, s1, COMPUTE), s0, s1, s2


@triton.jit
def nadam(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[4], k[5], OPTIONS)
    s0 = lerp(s0, g, k[0])
    s1 = s1 * k[1] + k[2] * g * g
    den = sqrt(div(s1, c[0], COMPUTE), COMPUTE) + k[3]
    p = p + div(c[1] * g, den, COMPUTE)
    return p + div(c[2] * s0, den, COMPUTE), s0, s1, s2


@triton.jit
def radam(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[4], k[5], OPTIONS)
    s0 = lerp(s0, g, k[0])
    s1 = s1 * k[1] + k[2] * g * g
    b = div(s0, c[0], COMPUTE) * k[6]
    adaptive = div(c[1], sqrt(s1, COMPUTE) + k[3], COMPUTE)
    return p - tl.where(flag, b * adaptive * c[2], b), s0, s1, s2


@triton.jit
def asgd(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    p, g = weight_decay(p, g, k[0], 0.0, OPTIONS)
    p = p * c[2]
    p = p - c[0] * g
    return p, tl.where(flag, s0 + (p - s0) * c[1], p), s1, s2


@triton.jit
def rprop(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    gp = g * s0
    s = tl.where(gp > 0, k[1], tl.where(gp < 0, k[0], tl.where(gp == 0, 1.0, gp))).to(COMPUTE)
    s1 = s1 * s
    s1 = tl.where(s1 < k[2], k[2], s1)
    s1 = tl.where(s1 > k[3], k[3], s1)
    g = tl.where(s == k[0], 0.0, g).to(COMPUTE)
    sign = tl.where(g > 0, 1.0, tl.where(g < 0, -1.0, g)).to(COMPUTE)
    return p - sign * s1, g, s1, s2


@triton.jit
def axpy(p, g, s0, s1, s2, k, c, flag, OPTIONS: tl.constexpr, COMPUTE: tl.constexpr):
    return p + k[0] * g, s0, s1, s2


UPDATES = {"sgd": sgd, "adam": adam, "rmsprop": rmsprop, "adagrad": adagrad, "adadelta": adadelta,
           "adamax": adamax, "nadam": nadam, "radam": radam, "asgd": asgd, "rprop": rprop, "axpy": axpy}
