"""DataLoader worker processes against torch.utils.data's: the same batches in the same order, the
worker each batch came from, worker_init_fn, get_worker_info, persistent workers, IterableDataset
splitting, errors raised in the main process, and the argument checks."""
import os

import numpy as np
import pytest
import torch
import torch.utils.data as TU

import tgrad
import tgrad.utils.data as GU


class Records:
    """Map-style: a dict per sample naming the worker that loaded it."""

    def __init__(self, lib, n=11):
        self.lib, self.data = lib, GU if lib is tgrad else TU

    def __len__(self):
        return 11

    def __getitem__(self, i):
        info = self.data.get_worker_info()
        return {"x": self.lib.tensor([float(i), i * 0.5]), "i": i, "worker": -1 if info is None else info.id}


def _plain(batch):
    if isinstance(batch, dict):
        return {k: _plain(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_plain(v) for v in batch]
    if hasattr(batch, "tolist"):
        return batch.tolist()
    return batch


def _epochs(lib, **kw):
    loader = (GU if lib is tgrad else TU).DataLoader(Records(lib), **kw)
    return [[_plain(b) for b in loader] for _ in range(2)]


@pytest.mark.parametrize("kw", [dict(batch_size=3, num_workers=2), dict(batch_size=4, num_workers=3, drop_last=True),
                                dict(batch_size=None, num_workers=2), dict(batch_size=2, num_workers=2,
                                                                           prefetch_factor=1)])
def test_batches_and_their_workers_match_torch(kw):
    assert _epochs(tgrad, **kw) == _epochs(torch, **kw)


def test_persistent_workers_keep_their_processes_and_init_runs_once_each(tmp_path):
    def pids(lib, persistent):
        class Pid(Records):
            def __getitem__(self, i):
                return os.getpid()
        data = GU if lib is tgrad else TU
        log = tmp_path / f"{lib.__name__}{persistent}"
        log.mkdir()
        loader = data.DataLoader(Pid(lib), batch_size=None, num_workers=2, persistent_workers=persistent,
                                 worker_init_fn=lambda wid: (log / f"{wid}-{os.getpid()}").touch())
        seen = [set(loader), set(loader)]
        return seen[0] == seen[1], len(list(log.iterdir()))
    for persistent in (True, False):
        assert pids(tgrad, persistent) == pids(torch, persistent)


def test_worker_info_seeds_differ_per_worker_and_epoch():
    class Seeds(GU.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = GU.get_worker_info()
            return tgrad.tensor([info.seed, info.id, info.num_workers, tgrad.randint(0, 2 ** 30, (1,)).item()])
    loader = GU.DataLoader(Seeds(), batch_size=None, num_workers=2)
    first, second = [b.tolist() for b in loader], [b.tolist() for b in loader]
    assert [r[1:3] for r in first] == [[0, 2], [1, 2], [0, 2], [1, 2]]
    assert first[1][0] == first[0][0] + 1 and first[0][0] != second[0][0]
    assert len({r[3] for r in first + second}) == 8
    assert GU.get_worker_info() is None


class Stream:
    """An IterableDataset split between workers by get_worker_info, as PyTorch's docs show."""

    def make(lib):
        data = GU if lib is tgrad else TU

        class S(data.IterableDataset):
            def __iter__(self):
                info = data.get_worker_info()
                start, step = (0, 1) if info is None else (info.id, info.num_workers)
                return iter([lib.tensor(float(i)) for i in range(start, 13, step)])
        return data, S()


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, num_workers=2),
                                dict(batch_size=2, num_workers=3, drop_last=True), dict(batch_size=None, num_workers=2)])
def test_iterable_datasets_stream_as_torch(kw):
    out = []
    for lib in (tgrad, torch):
        data, ds = Stream.make(lib)
        out.append([_plain(b) for b in data.DataLoader(ds, **kw)])
    assert out[0] == out[1]


def test_a_worker_error_is_raised_in_the_main_process_with_its_type():
    class Bad(Records):
        def __getitem__(self, i):
            if i == 5:
                raise KeyError(f"sample {i}")
            return super().__getitem__(i)
    for lib, data in ((tgrad, GU), (torch, TU)):
        with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
            list(data.DataLoader(Bad(lib), batch_size=None, num_workers=2))


def test_numpy_and_tensor_values_survive_the_trip():
    class Mixed(GU.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return (np.full(2, i, dtype=np.float32), tgrad.ones(2, dtype=tgrad.float64) * i, "s", i)
    a, b, c, d = next(iter(GU.DataLoader(Mixed(), batch_size=3, num_workers=1)))
    assert a.dtype is tgrad.float32 and b.dtype is tgrad.float64 and c == ["s"] * 3 and d.tolist() == [0, 1, 2]
    assert isinstance(b, tgrad.Tensor) and b.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]


@pytest.mark.parametrize("kw", [dict(num_workers=-1), dict(prefetch_factor=2), dict(persistent_workers=True),
                                dict(timeout=-1)])
def test_argument_checks_match(kw):
    with pytest.raises(ValueError) as theirs:
        TU.DataLoader(range(4), **kw)
    with pytest.raises(ValueError) as ours:
        GU.DataLoader(range(4), **kw)
    assert str(ours.value) == str(theirs.value)


def test_iterable_dataset_refuses_samplers_as_torch():
    for data, lib in ((GU, tgrad), (TU, torch)):
        ds = Stream.make(lib)[1]
        with pytest.raises(ValueError, match="expected unspecified shuffle option"):
            data.DataLoader(ds, shuffle=True)
