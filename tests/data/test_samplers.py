"""tgrad.utils.data samplers, ConcatDataset and DataLoader's sampler/batch_sampler against
torch.utils.data: deterministic results equal, random ones checked as permutations/frequencies,
the same errors."""
import itertools

import numpy as np
import pytest
import torch
import torch.utils.data as TU

import tgrad
import tgrad.utils.data as GU


class Squares:
    def __init__(self, lib, n, offset=0):
        self.lib, self.n, self.offset = lib, n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        v = i + self.offset
        return {"x": self.lib.tensor([float(v)]), "y": (v, v * v), "name": f"s{v}"}


def plain(batch):
    """A batch as plain Python values, whichever library made it."""
    if isinstance(batch, (torch.Tensor, tgrad.Tensor)):
        return ("tensor", str(batch.dtype).split(".")[-1], tuple(batch.shape), batch.tolist())
    if isinstance(batch, dict):
        return {k: plain(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [plain(v) for v in batch]
    return batch


@pytest.mark.parametrize("bs,drop", [(1, False), (3, False), (3, True), (10, False), (4, True)])
def test_batch_sampler(bs, drop):
    for src in (range(10), range(0)):
        t = list(TU.BatchSampler(TU.SequentialSampler(src), bs, drop))
        g = list(GU.BatchSampler(GU.SequentialSampler(src), bs, drop))
        assert g == t
        assert len(GU.BatchSampler(src, bs, drop)) == len(TU.BatchSampler(src, bs, drop))


def test_loader_with_sampler_and_batch_sampler_matches_torch():
    for lib, U, out in ((torch, TU, []), (tgrad, GU, [])):
        ds = Squares(lib, 7)
        out.append([plain(b) for b in U.DataLoader(ds, batch_size=3, sampler=U.SequentialSampler(ds))])
        out.append([plain(b) for b in U.DataLoader(ds, batch_sampler=U.BatchSampler(range(7), 2, True))])
        out.append(len(U.DataLoader(ds, batch_sampler=U.BatchSampler(range(7), 2, True))))
        out.append([plain(b) for b in U.DataLoader(ds, batch_size=None, sampler=[6, 1])])
        out.append(len(U.DataLoader(ds, batch_size=4, sampler=range(5), drop_last=True)))
        td = U.TensorDataset(lib.arange(10), lib.arange(10) * 2.0)
        out.append([plain(b) for b in U.DataLoader(td, batch_size=4, sampler=[9, 0, 3, 3, 5])])
        tuples = U.DataLoader([(lib.ones(2) * i, i, 0.5 * i) for i in range(4)], batch_size=3)
        out.append([plain(b) for b in tuples])
        if lib is torch:
            ref = out
        else:
            assert out == ref


def test_random_samplers_are_reproducible_permutations():
    n = 9
    a = list(GU.RandomSampler(range(n), generator=tgrad.Generator().manual_seed(3)))
    b = list(GU.RandomSampler(range(n), generator=tgrad.Generator().manual_seed(3)))
    assert a == b and sorted(a) == list(range(n))
    tgrad.manual_seed(0)
    c = list(GU.RandomSampler(range(n)))
    assert sorted(c) == list(range(n))
    more = list(GU.RandomSampler(range(4), num_samples=10))  # without replacement: whole permutations first
    assert len(more) == 10 and sorted(more[:4]) == sorted(more[4:8]) == list(range(4))
    w = list(GU.RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(w) == 50 and set(w) <= {0, 1, 2}
    s = list(GU.SubsetRandomSampler([10, 20, 30, 40]))
    assert sorted(s) == [10, 20, 30, 40]
    assert len(GU.SubsetRandomSampler([1, 2])) == len(TU.SubsetRandomSampler([1, 2]))
    loader = GU.DataLoader(range(8), batch_size=3, sampler=GU.RandomSampler(range(8)))
    got = [x for b in loader for x in b.tolist()]
    assert sorted(got) == list(range(8)) and len(loader) == 3


def test_weighted_random_sampler():
    tgrad.manual_seed(0)
    weights = [1.0, 0.0, 3.0, 4.0]
    draws = list(GU.WeightedRandomSampler(weights, 8000))
    freq = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(freq, np.array(weights) / 8, atol=0.02)
    assert freq[1] == 0
    once = list(GU.WeightedRandomSampler(tgrad.tensor(weights), 3, replacement=False))
    assert len(set(once)) == 3 and 1 not in once
    assert len(GU.WeightedRandomSampler(weights, 5)) == 5
    for U, exc in ((TU, RuntimeError), (GU, RuntimeError)):
        with pytest.raises(exc, match="n_sample > prob_dist"):
            list(U.WeightedRandomSampler(weights, 5, replacement=False))


def test_concat_dataset():
    for lib, U in ((torch, TU), (tgrad, GU)):
        both = U.ConcatDataset([Squares(lib, 3), Squares(lib, 2, offset=100)])
        got = (len(both), both.cumulative_sizes, [both[i]["name"] for i in range(5)], both[-1]["name"],
               both[-5]["name"])
        if lib is torch:
            ref = got
        else:
            assert got == ref
        with pytest.raises(ValueError, match="absolute value of index"):
            both[-6]
    with pytest.raises(AssertionError, match="empty"):
        GU.ConcatDataset([])


@pytest.mark.parametrize("make,exc,text", [
    (lambda U: U.BatchSampler(range(3), 0, False), ValueError, "batch_size should be a positive integer"),
    (lambda U: U.BatchSampler(range(3), 2, 1), ValueError, "drop_last should be a boolean"),
    (lambda U: U.RandomSampler(range(3), num_samples=0), ValueError, "num_samples should be a positive integer"),
    (lambda U: U.RandomSampler(range(3), replacement=1), TypeError, "replacement should be a boolean"),
    (lambda U: U.WeightedRandomSampler([[1.0, 2.0]], 2), ValueError, "weights should be a 1d sequence"),
    (lambda U: U.DataLoader(range(3), shuffle=True, sampler=range(3)), ValueError, "mutually exclusive with shuffle"),
    (lambda U: U.DataLoader(range(3), batch_size=2, batch_sampler=[[0]]), ValueError, "batch_sampler option"),
])
def test_errors_as_torch(make, exc, text):
    for U in (TU, GU):
        with pytest.raises(exc, match=text):
            make(U)


def test_random_sampler_with_replacement_draws_lazily_like_torch():
    """minGPT asks for 1e10 samples: PyTorch draws them as the loader iterates, so must tgrad."""
    ours = GU.RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    theirs = TU.RandomSampler(range(10), replacement=True, num_samples=int(1e10))
    assert len(ours) == len(theirs) == int(1e10)
    drawn = list(itertools.islice(iter(ours), 5000))
    assert len(drawn) == 5000 and set(drawn) == set(range(10))
