"""``kl_divergence(p, q)`` = E_p[log p - log q] in closed form for registered pairs of types
(``register_kl`` adds more); the most specific registered pair wins."""
from __future__ import annotations

import math

import tgrad
from ._linalg import solve_lower
from .bernoulli import Bernoulli
from .categorical import Categorical
from .independent import Independent
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...``."""
    def deco(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return deco


def _lookup(tp, tq):
    best, best_rank = None, None
    for (a, b), fn in _KL.items():
        if issubclass(tp, a) and issubclass(tq, b):
            rank = (tp.__mro__.index(a), tq.__mro__.index(b))
            if best_rank is None or rank < best_rank:
                best, best_rank = fn, rank
    return best


def kl_divergence(p, q):
    fn = _lookup(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


_INF = float("inf")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (tgrad.softplus(-q.logits) - tgrad.softplus(-p.logits))
    t1 = tgrad.where(p.probs == 0, 0.0, tgrad.where(q.probs == 0, _INF, t1))
    t2 = (1 - p.probs) * (tgrad.softplus(q.logits) - tgrad.softplus(p.logits))
    t2 = tgrad.where(p.probs == 1, 0.0, tgrad.where(q.probs == 1, _INF, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = tgrad.where(p.probs == 0, 0.0, tgrad.where(q.probs == 0, _INF, t))
    return t.sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return tgrad.where((q.low > p.low) | (q.high < p.high), _INF, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    # E_p[log p - log q]: log(sqrt(2 pi) sigma / w) + (w^2 / 12 + (midpoint - mu)^2) / (2 sigma^2)
    width = p.high - p.low
    t1 = (math.sqrt(2 * math.pi) * q.scale / width).log()
    t2 = width.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    n = p.event_shape[0]
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = q._half_log_det() - p._half_log_det()
    term2 = (solve_lower(Lq, Lp) ** 2).sum((-2, -1))                                # |Lq^-1 Lp|_F^2
    term3 = (solve_lower(Lq, (q.loc - p.loc).unsqueeze(-1)).squeeze(-1) ** 2).sum(-1)  # |Lq^-1 (mq - mp)|^2
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different reinterpreted_batch_ndims is not "
                                  "implemented")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


