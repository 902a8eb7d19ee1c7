"""The random ops: tgrad.multinomial (Philox kernel; what the character-level GPT example samples
with) and tgrad.bernoulli, their distributions, reproducibility and errors."""
from contextlib import nullcontext

import torch

import tgrad
import tgrad.kernels.random.multinomial as KM
from support.reference import raises
from tgrad.kernels.runtime.target import as_cuda


def test_multinomial_with_replacement_follows_the_weights():
    w = tgrad.tensor([[0.1, 0.0, 0.6, 0.3], [2.0, 2.0, 2.0, 2.0]], dtype=tgrad.float64)
    tgrad.manual_seed(1)
    s = tgrad.multinomial(w, 4000, replacement=True)
    assert s.shape == (2, 4000) and s.dtype is tgrad.int64
    counts = torch.stack([torch.bincount(r, minlength=4) for r in s.torch()]).double() / 4000
    expect = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.25] * 4], dtype=torch.float64)
    assert counts[0, 1] == 0, "a zero-weight category was drawn"
    assert (counts - expect).abs().max() < 0.03
    tgrad.manual_seed(1)
    assert torch.equal(tgrad.multinomial(w, 4000, replacement=True).torch(), s.torch())  # reproducible
    p = tgrad.tensor([0.1, 0.0, 0.6, 0.3])  # a 1-d distribution
    freq = tgrad.bincount(tgrad.multinomial(p, 4000, replacement=True), minlength=4).to(tgrad.float32) / 4000
    assert (freq - p).abs().amax().item() < 0.03 and freq[1].item() == 0


def test_multinomial_without_replacement():
    w = tgrad.tensor([[0.5, 0.3, 0.2, 0.0]] * 3000)
    tgrad.manual_seed(2)
    s = w.multinomial(3).torch()
    assert all(len(set(r.tolist())) == 3 for r in s[:50]) and (s != 3).all()
    first = torch.bincount(s[:, 0], minlength=4).double() / 3000
    assert (first - torch.tensor([0.5, 0.3, 0.2, 0.0], dtype=torch.float64)).abs().max() < 0.03
    # the second pick of a weighted draw without replacement: P(1 second) = .5*.3/.5 + .2*.3/.8
    second = (s[:, 1] == 1).double().mean()
    assert abs(second - (0.3 + 0.075)) < 0.03
    assert tgrad.multinomial(tgrad.tensor([0.0, 1.0]), 1).tolist() == [1]
    once = tgrad.multinomial(tgrad.tensor([[1.0, 2.0, 3.0, 4.0]] * 50), 4)  # every category: a permutation
    assert all(sorted(r) == [0, 1, 2, 3] for r in once.tolist())


def test_multinomial_in_gpu_blocks_draws_what_the_cpu_blocks_draw():
    """A GPU launch walks a row in 256-column chunks and the samples in chunks of 16 (a grid axis);
    the CPU takes each row whole. Integer weights make every partial sum exact: the same picks."""
    w = tgrad.from_torch(torch.randint(0, 4, (3, 300)).double())
    runs = []
    for gpu in (False, True):
        with as_cuda() if gpu else nullcontext():
            tgrad.manual_seed(3)
            runs.append([tgrad.multinomial(w, 40, replacement=True).torch(), tgrad.multinomial(w, 7).torch()])
    assert KM._blocks(3, 300, 40, True, torch.device("cuda")) == (1, 256, 16)
    for cpu, gpu in zip(*runs):
        assert torch.equal(cpu, gpu)


def test_multinomial_errors():
    with raises(RuntimeError, "probability tensor contains either `inf`, `nan` or element < 0"):
        tgrad.multinomial(tgrad.tensor([0.5, -0.1]), 1)
    with raises(RuntimeError, "invalid multinomial distribution (sum of probabilities <= 0)"):
        tgrad.multinomial(tgrad.tensor([[1.0, 0.0], [0.0, 0.0]]), 1)
    with raises(RuntimeError, "cannot sample n_sample > prob_dist.size(-1) samples without replacement"):
        tgrad.multinomial(tgrad.tensor([0.5, 0.5]), 3)
    with raises(RuntimeError, "invalid multinomial distribution (with replacement=False, not enough "
                              "non-negative category to sample)"):
        tgrad.multinomial(tgrad.tensor([0.5, 0.0, 0.0]), 2)


def test_bernoulli_draws():
    tgrad.manual_seed(0)
    b = tgrad.bernoulli(tgrad.full((4000,), 0.25))
    assert b.dtype is tgrad.float32 and abs(b.mean().item() - 0.25) < 0.03
    assert set(tgrad.bernoulli(tgrad.zeros(10), 1.0).tolist()) == {1.0}
