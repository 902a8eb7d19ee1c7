"""``DataLoader`` and ``default_collate``, as ``torch.utils.data.dataloader``.

A ``DataLoader`` yields batches of ``batch_size`` samples in order, or in a fresh random order
each epoch with ``shuffle=True`` (a ``tgrad.randperm`` drawn from ``generator``, or from tgrad's
default generator, so ``tgrad.manual_seed`` makes the order reproducible). ``default_collate``
stacks tensors along a new dim 0, turns numbers into 1-D tensors and recurses into tuples, lists
and dicts. In the main process (``num_workers=0``), batches of a ``TensorDataset`` with the
default collate are gathered in one indexing kernel per tensor instead of one copy per sample:
the same values ``default_collate`` would stack. ``num_workers > 0`` loads in worker processes
(``workers.py``).
"""
from __future__ import annotations

import numbers

import numpy as np

import tgrad
from tgrad.tensor import Tensor
from .datasets import IterableDataset, TensorDataset
from .samplers import BatchSampler, RandomSampler, SequentialSampler
from .workers import IterableFetcher, MapFetcher, WorkerPool

__all__ = ["DataLoader", "default_collate"]


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


def _iterable_option(name, value):
    return ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                      f"{name}={value}")


class DataLoader:
    """Iterates over ``dataset`` in batches. ``sampler`` (indices) or ``batch_sampler`` (lists of
    indices) choose what is loaded, as in PyTorch; ``num_workers`` processes load ahead of the loop."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool)
                                       or batch_size <= 0):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise _iterable_option(name, value)
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
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_sampler is None and batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self.dataset, self.batch_size, self.shuffle, self.drop_last = dataset, batch_size, bool(shuffle), drop_last
        self.collate_fn = collate_fn if collate_fn is not None else default_collate
        self.generator, self.num_workers, self.pin_memory = generator, num_workers, pin_memory
        self.worker_init_fn, self.timeout, self.multiprocessing_context = worker_init_fn, timeout, multiprocessing_context
        self.prefetch_factor = 2 if num_workers and prefetch_factor is None else prefetch_factor
        self.persistent_workers, self.pin_memory_device, self.in_order = persistent_workers, pin_memory_device, in_order
        self._pool = None

    def __len__(self):
        if self._iterable or not self._custom:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)

    def _order(self, n):
        """This epoch's sample order: a tgrad int64 tensor (shuffled) or None (0..n-1)."""
        return tgrad.randperm(n, generator=self.generator) if self.shuffle else None

    def _fetcher(self):
        if self._iterable:
            return IterableFetcher(self.collate_fn, self.batch_size, self.drop_last)
        return MapFetcher(self.collate_fn, auto_batch=self.batch_sampler is not None)

    def _tasks(self):
        """This epoch's work: each batch's indices (or each index without auto-batching)."""
        if self._custom:
            yield from (self.batch_sampler if self.batch_sampler is not None else self.sampler)
            return
        n = len(self.dataset)
        order = self._order(n)
        indices = order.tolist() if order is not None else range(n)
        if self.batch_size is None:
            yield from indices
            return
        for b in range(len(self)):
            yield list(indices[b * self.batch_size:(b + 1) * self.batch_size])

    def __iter__(self):
        if self.num_workers:
            yield from self._iter_workers()
        elif self._iterable:
            fetch = self._fetcher().start(self.dataset)
            while True:
                try:
                    batch = fetch()
                except StopIteration:
                    return
                yield batch
        elif not isinstance(self.dataset, TensorDataset) or self.collate_fn is not default_collate:
            fetch = self._fetcher().start(self.dataset)
            for work in self._tasks():
                yield fetch(work)
        else:
            yield from self._iter_tensor_dataset()

    def _iter_workers(self):
        pool = self._pool
        if pool is None:
            base_seed = tgrad.randint(0, 2 ** 62, (1,), generator=self.generator).item()
            pool = WorkerPool(self.dataset, self._fetcher(), self.num_workers, base_seed, self.worker_init_fn,
                              self.prefetch_factor, self.timeout, self.multiprocessing_context)
            if self.persistent_workers:
                self._pool = pool
        tasks = iter(int, 1) if self._iterable else self._tasks()  # iterable: endless requests in turn
        try:
            yield from pool.run(tasks, round_robin_until_exhausted=self._iterable)
        finally:
            if pool is not self._pool:
                pool.shutdown()

    def _iter_tensor_dataset(self):
        """Whole batches of a TensorDataset gathered by one indexing kernel per tensor."""
        if self._custom:
            if self.batch_sampler is None:  # no auto-batching: one sample at a time
                yield from (self.dataset[i] for i in self.sampler)
                return
            for picks in self.batch_sampler:
                idx = tgrad.tensor([int(i) for i in picks], dtype=tgrad.int64)
                yield [t[idx.to(t.device)] for t in self.dataset.tensors]
            return
        n = len(self.dataset)
        order = self._order(n)
        if self.batch_size is None:
            for i in (order.tolist() if order is not None else range(n)):
                yield self.dataset[i]
            return
        for b in range(len(self)):
            start, stop = b * self.batch_size, min((b + 1) * self.batch_size, n)
            if order is None:  # a contiguous block: copy the slice
                yield [t[start:stop].clone() for t in self.dataset.tensors]
            else:
                idx = order[start:stop]
                yield [t[idx.to(t.device)] for t in self.dataset.tensors]
