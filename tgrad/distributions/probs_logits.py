"""``ProbsLogitsDistribution``: the base of the distributions given by ``probs`` or ``logits``
(Bernoulli, Categorical)."""
from __future__ import annotations

from .distribution import Distribution
from .utils import logits_to_probs, probs_to_logits

__all__ = ["ProbsLogitsDistribution"]


class ProbsLogitsDistribution(Distribution):
    """Given by exactly one of ``probs`` and ``logits`` (kept in ``_probs`` / ``_logits``, the other
    None); the other is computed when first asked for: sigmoid and logit for ``_binary``
    distributions, else softmax and log over the last dim."""
    _binary = False
    _param_names = ("probs",)

    @staticmethod
    def _given(probs, logits):
        """The one of ``probs`` and ``logits`` given."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        return probs if probs is not None else logits

    @property
    def probs(self):
        if self._probs is None:
            self._probs = logits_to_probs(self._logits, is_binary=self._binary)
        return self._probs

    @property
    def logits(self):
        if self._logits is None:
            self._logits = probs_to_logits(self._probs, is_binary=self._binary)
        return self._logits
