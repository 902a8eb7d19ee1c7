"""``Normal(loc, scale)``: log p(x) = -(x - loc)^2 / (2 scale^2) - log scale - log sqrt(2 pi)."""
from __future__ import annotations

import math

import tgrad
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Normal"]


class Normal(Distribution):
    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)

    def _check_parameters(self):
        self._check_param("loc", self.loc, self.loc == self.loc, "Real()")
        self._check_param("scale", self.scale, self.scale > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self):
        return self.loc

    mode = mean

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        eps = self._noise(sample_shape, tgrad.randn, self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._check_value(value, value == value if isinstance(value, tgrad.Tensor) else None, "Real()")
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + tgrad.log(self.scale)

    def expand(self, batch_shape):
        return Normal(self.loc.expand(batch_shape), self.scale.expand(batch_shape), validate_args=False)
