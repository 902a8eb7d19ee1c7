"""``tgrad.utils.data``: ``Dataset``, ``TensorDataset``, ``Subset``, ``random_split``, ``DataLoader``
and ``default_collate``, as in ``torch.utils.data`` (single process).

A ``DataLoader`` yields batches of ``batch_size`` samples in order, or in a fresh random order
each epoch with ``shuffle=True`` (a ``tgrad.randperm`` drawn from ``generator``, or from tgrad's
default generator, so ``tgrad.manual_seed`` makes the order reproducible). ``default_collate``
stacks tensors along a new dim 0, turns numbers into 1-D tensors and recurses into tuples, lists
and dicts. Batches of a ``TensorDataset`` with the default collate are gathered in one indexing
kernel per tensor instead of one copy per sample: the same values ``default_collate`` would stack.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

import bisect

import tgrad
from tgrad.tensor import Tensor
from .samplers import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                       WeightedRandomSampler)

__all__ = ["Dataset", "TensorDataset", "Subset", "ConcatDataset", "random_split", "DataLoader", "default_collate",
           "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first dim."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError(f"Size mismatch between tensors (first dims {[t.size(0) for t in tensors]})")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, list(indices)

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return [self.dataset[self.indices[i]] for i in idx]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several datasets one after another; ``cumulative_sizes[i]`` is where dataset
    i + 1 starts."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes, total = [], 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of {len(self)} samples")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping random ``Subset``s of the given lengths (or fractions
    summing to 1, rounded down with the remainder spread round-robin, as PyTorch)."""
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! (lengths {lengths} "
                         f"sum to {sum(lengths)}, the dataset has {n} samples)")
    perm = tgrad.randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + length]))
        start += length
    return out


def default_collate(batch):
    """Stack a list of samples into a batch (PyTorch's rules for tensors, numbers, strings,
    numpy arrays, tuples/lists and dicts)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return tgrad.stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        return tgrad.stack([tgrad.from_numpy(b if b.flags.c_contiguous else b.copy(order="C")) for b in batch], 0)
    if isinstance(elem, bool):
        return tgrad.tensor(batch, dtype=tgrad.bool)
    if isinstance(elem, numbers.Integral):
        return tgrad.tensor(batch, dtype=tgrad.int64)
    if isinstance(elem, numbers.Real):
        return tgrad.tensor(batch, dtype=tgrad.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, dict):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, (tuple, list)):
        if any(len(s) != len(elem) for s in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(s)) for s in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                    f"found {type(elem)}")


class DataLoader:
    """Iterates over ``dataset`` in batches. ``num_workers`` is accepted for PyTorch compatibility;
    loading happens in the calling process. ``sampler`` (indices) or ``batch_sampler`` (lists of
    indices) choose what is loaded, as in PyTorch."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 generator=None, **kwargs):
        unsupported = sorted(k for k, v in kwargs.items() if v not in (None, False, 0, ""))
        if timeout:
            unsupported.append("timeout")
        if unsupported:
            raise NotImplementedError(f"tgrad's DataLoader does not support {', '.join(unsupported)}")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        self._custom = sampler is not None or batch_sampler is not None
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, bool(shuffle), drop_last
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.generator, self.num_workers, self.pin_memory = generator, num_workers, pin_memory
        self.worker_init_fn, self.timeout = worker_init_fn, timeout

    def __len__(self):
        if self._custom:
            return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self, n):
        """This epoch's sample order: a tgrad int64 tensor (shuffled) or None (0..n-1)."""
        return tgrad.randperm(n, generator=self.generator) if self.shuffle else None

    def __iter__(self):
        if self._custom:
            yield from self._iter_sampled()
            return
        n = len(self.dataset)
        order = self._order(n)
        if self.batch_size is None:
            for i in (order.tolist() if order is not None else range(n)):
                yield self.dataset[i]
            return
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        indices = order.tolist() if order is not None and not fast else None
        for b in range(len(self)):
            start, stop = b * self.batch_size, min((b + 1) * self.batch_size, n)
            if fast:
                if order is None:  # a contiguous block: copy the slice
                    yield [t[start:stop].clone() for t in self.dataset.tensors]
                else:
                    idx = order[start:stop]
                    yield [t[idx.to(t.device)] for t in self.dataset.tensors]
            else:
                picks = indices[start:stop] if indices is not None else range(start, stop)
                yield self.collate_fn([self.dataset[i] for i in picks])

    def _iter_sampled(self):
        """Batches of the indices a user-given sampler or batch_sampler yields."""
        if self.batch_sampler is None:  # no auto-batching: one sample at a time
            for i in self.sampler:
                yield self.dataset[i]
            return
        fast = isinstance(self.dataset, TensorDataset) and self.collate_fn is default_collate
        for picks in self.batch_sampler:
            if fast:
                idx = tgrad.tensor([int(i) for i in picks], dtype=tgrad.int64)
                yield [t[idx.to(t.device)] for t in self.dataset.tensors]
            else:
                yield self.collate_fn([self.dataset[i] for i in picks])
