"""``Distribution``: the interface every distribution implements, as ``torch.distributions``."""
from __future__ import annotations

import tgrad
from tgrad._dtype import Size
from tgrad.tensor import Tensor

__all__ = ["Distribution"]


class Distribution:
    """batch_shape: independent (not identically distributed) draws; event_shape: one draw's shape."""
    has_rsample = False
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = Size(batch_shape), Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        """Raise ValueError for parameters outside their constraint (subclasses)."""

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _noise(self, sample_shape, draw, like):
        """``draw`` (tgrad.rand, tgrad.randn) of the samples' shape, in ``like``'s dtype and device."""
        return draw(self._extended_shape(sample_shape), dtype=like.dtype, device=like.device)

    def sample(self, sample_shape=()):
        with tgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample); use sample()")

    def sample_n(self, n):
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def perplexity(self):
        return tgrad.exp(self.entropy())

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def _check_value(self, value, ok, support):
        """ValueError when validating and ``ok`` (a bool tensor) is not all true."""
        if not self._validate_args:
            return
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event = tuple(self._event_shape)
        if event and tuple(value.shape[value.ndim - len(event):]) != event:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{event}.")
        if not bool(ok.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _check_param(self, name, value, ok, constraint):
        if not bool(ok.all()):
            raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {self!r} to satisfy the constraint {constraint}, but found invalid "
                             f"values:\n{value}")

    def __repr__(self):
        params = [(k, getattr(self, k)) for k in getattr(self, "_param_names", ())]
        shown = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in params if v is not None)
        return f"{type(self).__name__}({shown})"
