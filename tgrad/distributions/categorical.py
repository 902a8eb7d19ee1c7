"""``Categorical(probs | logits)`` over the last dim: log p(k) = logits_k - logsumexp(logits).

Samples are drawn with the Gumbel-max trick, argmax_k(log p_k + G_k) with G_k = -log(-log U_k)
and U Philox uniforms (classes of probability 0 are never drawn)."""
from __future__ import annotations

import torch

import tgrad
from tgrad._dtype import Size
from .probs_logits import ProbsLogitsDistribution

__all__ = ["Categorical"]


class Categorical(ProbsLogitsDistribution):
    def __init__(self, probs=None, logits=None, validate_args=None):
        given = self._given(probs, logits)
        if given.ndim < 1:
            raise ValueError("`probs` parameter must be at least one-dimensional." if probs is not None
                             else "`logits` parameter must be at least one-dimensional.")
        self._raw = given
        if probs is not None:
            self._probs, self._logits = probs / probs.sum(-1, keepdim=True), None
        else:
            self._probs, self._logits = None, logits - tgrad.logsumexp(logits, -1, keepdim=True)
        self._num_events = given.shape[-1]
        super().__init__(given.shape[:-1], (), validate_args)

    def _check_parameters(self):
        if self._probs is not None:
            self._check_param("probs", self._raw, (self._raw >= 0) & (self._raw.sum(-1, keepdim=True) > 0),
                              "Simplex()")
        else:
            self._check_param("logits", self._raw, self._raw == self._raw, "IndependentConstraint(Real(), 1)")

    @property
    def param_shape(self):
        return Size(tuple(self._batch_shape) + (self._num_events,))

    @property
    def mean(self):
        return tgrad.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        shape = tuple(sample_shape) + tuple(self._batch_shape) + (self._num_events,)
        with tgrad.no_grad():
            p = self.probs
            u = tgrad.rand(shape, dtype=p.dtype, device=p.device)
            gumbel = -tgrad.log(-tgrad.log(u))
            score = tgrad.where(p > 0, tgrad.log(p), float("-inf")) + gumbel
            return score.argmax(-1)

    def log_prob(self, value):
        if self._validate_args:
            ok = ((value >= 0) & (value < self._num_events) & (value == value.long())
                  if isinstance(value, tgrad.Tensor) else None)
            self._check_value(value, ok, f"IntegerInterval(lower_bound=0, upper_bound={self._num_events - 1})")
        value = value.long()
        lp = self.logits
        batch = torch.broadcast_shapes(tuple(value.shape), tuple(lp.shape[:-1]))
        lp = lp.expand(tuple(batch) + (self._num_events,))
        idx = value.expand(batch).unsqueeze(-1)
        return lp.gather(-1, idx).squeeze(-1)

    def entropy(self):
        lowest = torch.finfo(self.logits.dtype.torch).min
        logits = self.logits.clamp(min=lowest)
        return -(logits * self.probs).sum(-1)
