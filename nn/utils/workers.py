"""DataLoader worker processes, as ``torch.utils.data``'s: ``num_workers`` processes fetch and
collate batches while the main process trains.

Task ``i`` (a batch's indices, or one index without auto-batching) goes to worker ``i % n``,
``prefetch_factor`` tasks per worker ahead; batches come back in task order. A worker seeds tgrad
and ``random`` with ``base_seed + id`` (``base_seed`` drawn from the loader's generator each
epoch), calls ``worker_init_fn(id)``, and answers ``get_worker_info()``. Tensors are pickled as
tgrad pickles them: their storage goes through torch's shared-memory reducer, not copied. For an
``IterableDataset`` each worker iterates its own copy (split it with ``get_worker_info()``) and the
main process takes batches from the workers in turn. An error in a worker is raised in the main
process with its type and the worker's traceback, as PyTorch does.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import queue
import random
import traceback

import torch.multiprocessing as tmp

import tgrad

__all__ = ["WorkerInfo", "get_worker_info", "MapFetcher", "IterableFetcher", "WorkerPool"]

_POLL_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its id, the number of workers, its seed and its dataset copy; else None."""
    return _worker_info


class MapFetcher:
    """A map-style dataset's task: a batch's indices (collated), or one index."""

    def __init__(self, collate_fn, auto_batch: bool):
        self.collate_fn, self.auto_batch = collate_fn, auto_batch

    def start(self, dataset):
        return functools.partial(self._fetch, dataset)

    def _fetch(self, dataset, work):
        return self.collate_fn([dataset[i] for i in work]) if self.auto_batch else dataset[work]


class IterableFetcher:
    """An IterableDataset's next batch (or next item without auto-batching); StopIteration at the end."""

    def __init__(self, collate_fn, batch_size, drop_last: bool):
        self.collate_fn, self.batch_size, self.drop_last = collate_fn, batch_size, drop_last

    def start(self, dataset):
        return functools.partial(self._next, iter(dataset))

    def _next(self, items, work=None):
        if self.batch_size is None:
            return next(items)
        batch = list(itertools.islice(items, self.batch_size))
        if not batch or (self.drop_last and len(batch) < self.batch_size):
            raise StopIteration
        return self.collate_fn(batch)


class _Failure:
    def __init__(self, worker_id: int, error: BaseException):
        self.type, self.args = type(error), error.args
        self.text = (f"Caught {type(error).__name__} in DataLoader worker process {worker_id}.\nOriginal "
                     + "".join(traceback.format_exception(error)))

    def reraise(self):
        try:
            error = self.type(self.text)
        except Exception:  # an exception type that does not take one message
            error = RuntimeError(self.text)
        raise error


class _Exhausted:
    """An IterableDataset worker's iterator is done."""


def _worker_loop(worker_id, num_workers, seed, dataset, fetcher, init_fn, tasks, results):
    global _worker_info
    tgrad.manual_seed(seed)
    random.seed(seed)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetch = fetcher.start(dataset)
    except BaseException as error:  # reported, then the worker waits to be told to stop
        results.put((None, _Failure(worker_id, error)))
        fetch = None
    while True:
        task = tasks.get()
        if task is None:
            return
        index, work = task
        try:
            if fetch is None:
                continue
            results.put((index, fetch(work)))
        except StopIteration:
            results.put((index, _Exhausted()))
        except BaseException as error:
            results.put((index, _Failure(worker_id, error)))


class WorkerPool:
    """``num_workers`` processes running ``fetcher.start(dataset)(task)``; ``run(tasks)`` yields the results
    in order."""

    def __init__(self, dataset, fetcher, num_workers, base_seed, init_fn=None, prefetch_factor=2, timeout=0,
                 context=None):
        ctx = tmp.get_context(context) if isinstance(context, str) or context is None else context
        self.num_workers, self.prefetch, self.timeout = num_workers, prefetch_factor, timeout
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(num_workers)]
        self.workers = [ctx.Process(target=_worker_loop, daemon=True,
                                    args=(i, num_workers, base_seed + i, dataset, fetcher, init_fn, self.tasks[i],
                                          self.results))
                        for i in range(num_workers)]
        for w in self.workers:
            w.start()
        self._sent = 0

    def _receive(self):
        waited = 0.0
        while True:
            try:
                return self.results.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                waited += _POLL_SECONDS
                dead = [w.pid for w in self.workers if not w.is_alive()]
                if dead:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited "
                                       "unexpectedly")
                if self.timeout and waited >= self.timeout:
                    self.shutdown()
                    raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")

    def run(self, tasks, round_robin_until_exhausted=False):
        """Results of ``tasks`` in order. With ``round_robin_until_exhausted`` the tasks are
        endless requests to workers in turn, a worker leaving the rotation once exhausted."""
        tasks = iter(tasks)
        pending, done = collections.deque(), {}
        active = list(range(self.num_workers))
        owner = {}

        def send():
            if not active:
                return False
            try:
                work = next(tasks)
            except StopIteration:
                return False
            worker = active[self._sent % len(active)] if round_robin_until_exhausted else \
                self._sent % self.num_workers
            self.tasks[worker].put((self._sent, work))
            owner[self._sent] = worker
            pending.append(self._sent)
            self._sent += 1
            return True

        for _ in range(self.prefetch * self.num_workers):
            if not send():
                break
        while pending:
            want = pending[0]
            while want not in done:
                index, value = self._receive()
                if index is None or isinstance(value, _Failure):
                    self.shutdown()
                    value.reraise()
                done[index] = value
            value = done.pop(pending.popleft())
            if isinstance(value, _Exhausted):
                if owner[want] in active:
                    active.remove(owner[want])
            else:
                yield value
            send()

    def shutdown(self):
        for q in self.tasks:
            q.put(None)
        for w in self.workers:
            w.join(timeout=5)
            if w.is_alive():
                w.terminate()
        self.workers = []

    def __del__(self):
        if self.workers:
            self.shutdown()
