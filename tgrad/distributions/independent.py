"""``Independent(base, k)``: the base's k rightmost batch dims read as event dims (log_prob and
entropy summed over them), e.g. a diagonal Gaussian from a batch of Normals."""
from __future__ import annotations

from .distribution import Distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


def _of_base(name):
    """The base distribution's attribute ``name``, as a property."""
    return property(lambda self: getattr(self.base_dist, name))


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

    # what the reinterpretation leaves as it is: the base's, read through
    has_rsample, mean, mode, variance, stddev = (
        _of_base(name) for name in ("has_rsample", "mean", "mode", "variance", "stddev"))

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
