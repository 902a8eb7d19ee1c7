"""Samplers: which dataset indices a ``DataLoader`` visits, in which order, grouped how; as in
``torch.utils.data``. Random ones draw from tgrad's Philox generator (``generator``, or the
default one that ``tgrad.manual_seed`` seeds).

``WeightedRandomSampler`` draws index i with probability w_i / sum(w): with ``tgrad.multinomial``
where tgrad has it, else by the Gumbel-max trick (argmax_i log w_i + G_i, one Gumbel noise per
draw and index, in chunks of draws), and without replacement by the Gumbel top-k (the k largest
log w_i + G_i), which draws the same distribution as sequential sampling without replacement.
"""
from __future__ import annotations

import numbers

import tgrad
from tgrad.tensor import Tensor

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    """Iterates over dataset indices; ``__len__`` where the count is known."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _positive_int(name, value, exc=ValueError):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value <= 0:
        raise exc(f"{name} should be a positive integer value, but got {name}={value}")


_REPLACEMENT_CHUNK = 4096  # indices drawn at once with replacement


class RandomSampler(Sampler):
    """A fresh random order each pass (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples, self.generator = (data_source, replacement,
                                                                                 num_samples, generator)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        _positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k = len(self.data_source), self.num_samples
        if self.replacement:  # drawn a chunk at a time, as the loader asks (num_samples may be 1e10)
            for start in range(0, k, _REPLACEMENT_CHUNK):
                size = min(_REPLACEMENT_CHUNK, k - start)
                yield from tgrad.randint(0, n, (size,), generator=self.generator).tolist()
            return
        for _ in range(k // n):
            yield from tgrad.randperm(n, generator=self.generator).tolist()
        if k % n:
            yield from tgrad.randperm(n, generator=self.generator).tolist()[:k % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a fresh random order each pass."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in tgrad.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


_CHUNK = 1 << 20  # elements of Gumbel noise drawn at once


def _weighted_draws(weights, k, replacement, generator):
    """k indices drawn with probabilities proportional to ``weights`` (a 1-D float64 tensor)."""
    if hasattr(tgrad, "multinomial"):
        return tgrad.multinomial(weights, k, replacement, generator=generator).tolist()
    n = weights.shape[0]
    logw = tgrad.where(weights > 0, weights.log(), float("-inf"))
    if not replacement:
        if k > n:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        u = tgrad.rand(n, generator=generator, dtype=tgrad.float64)
        scores = logw - (-u.log()).log()
        return tgrad.argsort(scores, descending=True)[:k].tolist()
    out = []
    per = max(1, _CHUNK // max(n, 1))
    while len(out) < k:
        m = min(per, k - len(out))
        u = tgrad.rand(m, n, generator=generator, dtype=tgrad.float64)
        out += (logw - (-u.log()).log()).argmax(-1).tolist()
    return out


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in [0, len(weights)), index i with probability w_i / sum(w)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = weights.to(tgrad.float64) if isinstance(weights, Tensor) else tgrad.tensor(weights, dtype=tgrad.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if bool((w < 0).any()) or not bool(w.isfinite().all()) or not bool((w > 0).any()):
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0, or a weight negative "
                               "or not finite)")
        self.weights, self.num_samples, self.replacement, self.generator = w, num_samples, replacement, generator

    def __iter__(self):
        return iter(_weighted_draws(self.weights, self.num_samples, self.replacement, self.generator))

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        _positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
