"""``Independent(base, k)``: the base's k rightmost batch dims read as event dims (log_prob and
entropy summed over them), e.g. a diagonal Gaussian from a batch of Normals."""
from __future__ import annotations

from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        k = int(reinterpreted_batch_ndims)
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = k + len(base_distribution.event_shape)
        if k > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{k} vs {len(base_distribution.batch_shape)}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, k
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=False)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    @property
    def stddev(self):
        return self.base_dist.stddev

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
