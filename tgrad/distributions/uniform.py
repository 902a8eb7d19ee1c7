"""``Uniform(low, high)`` on [low, high): log p(x) = -log(high - low) inside, -inf outside."""
from __future__ import annotations

import math

import tgrad
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    has_rsample = True
    _param_names = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, (), validate_args)

    def _check_parameters(self):
        self._check_param("low", self.low, self.low < self.high, f"LessThan(upper_bound={self.high})")

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.high * float("nan")

    @property
    def stddev(self):
        return (self.high - self.low) / math.sqrt(12)

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        u = self._noise(sample_shape, tgrad.rand, self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        self._check_value(value, (self.low <= value) & (value < self.high) if isinstance(value, tgrad.Tensor) else None,
                          f"Interval(lower_bound={self.low}, upper_bound={self.high})")
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return tgrad.log(inside) - tgrad.log(self.high - self.low)

    def cdf(self, value):
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def entropy(self):
        return tgrad.log(self.high - self.low)
