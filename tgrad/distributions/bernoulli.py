"""``Bernoulli(probs | logits)``: log p(x) = x logits - softplus(logits)."""
from __future__ import annotations

import numbers

import tgrad
from .probs_logits import ProbsLogitsDistribution
from .utils import broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(ProbsLogitsDistribution):
    _binary = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = self._given(probs, logits)
        is_scalar = isinstance(given, numbers.Number)
        (param,) = broadcast_all(given)
        self._probs, self._logits = (param, None) if probs is not None else (None, param)
        self._is_scalar = is_scalar
        super().__init__(param.shape, (), validate_args)

    def _check_parameters(self):
        if self._probs is not None:
            p = self._probs
            self._check_param("probs", p, (p >= 0) & (p <= 1), "Interval(lower_bound=0.0, upper_bound=1.0)")
        else:
            self._check_param("logits", self._logits, self._logits == self._logits, "Real()")

    @property
    def param_shape(self):
        return self._batch_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return tgrad.where(self.probs == 0.5, float("nan"), m)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        with tgrad.no_grad():
            p = self.probs
            u = self._noise(sample_shape, tgrad.rand, p)
            return (u < p).to(p.dtype)

    def log_prob(self, value):
        self._check_value(value, ((value == 0) | (value == 1)) if isinstance(value, tgrad.Tensor) else None,
                          "Boolean()")
        return value * self.logits - tgrad.softplus(self.logits)

    def entropy(self):
        return tgrad.softplus(self.logits) - self.logits * self.probs
