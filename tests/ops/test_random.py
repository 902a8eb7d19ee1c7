"""The random ops: tgrad.multinomial (Philox kernel; what the character-level GPT example samples
with) and tgrad.bernoulli, their distributions, reproducibility and errors."""
from contextlib import nullcontext

import pytest

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


# ------------------------------------------------------------------------------ in-place draws
IN_PLACE = [("uniform_", (2.0, 5.0)), ("normal_", (1.0, 3.0)), ("log_normal_", (0.0, 0.5)),
            ("exponential_", (2.0,)), ("geometric_", (0.3,)), ("random_", (3, 9)), ("random_", (7,))]


@pytest.mark.parametrize("name,args", IN_PLACE)
def test_in_place_draws_follow_torchs_distribution(name, args):
    """Same distribution as PyTorch's draw (their numbers differ: another generator): the sample
    quantiles of 20,000 draws agree, the tensor is returned and its version moves."""
    tgrad.manual_seed(3)
    ours = tgrad.zeros(20000, dtype=tgrad.float64)
    out = getattr(ours, name)(*args)
    assert out is ours and ours._version == 1
    torch.manual_seed(3)
    theirs = getattr(torch.zeros(20000, dtype=torch.float64), name)(*args)
    if name in ("random_", "geometric_"):  # discrete: quantiles jump by whole steps; compare moments
        got, want = torch.stack([ours.torch().mean(), ours.torch().std()]), torch.stack([theirs.mean(), theirs.std()])
    else:
        q = torch.tensor([0.1, 0.25, 0.5, 0.75, 0.9], dtype=torch.float64)
        got, want = torch.quantile(ours.torch(), q), torch.quantile(theirs, q)
    assert ((got - want).abs() <= 0.05 * want.abs() + 0.05).all(), (got, want)


def test_cauchy_median_and_integer_random_ranges():
    tgrad.manual_seed(4)
    c = tgrad.zeros(20000, dtype=tgrad.float64).cauchy_(2.0, 0.5)
    assert abs(torch.quantile(c.torch(), torch.tensor([0.5], dtype=torch.float64)).item() - 2.0) < 0.05
    assert abs(torch.quantile(c.torch(), torch.tensor([0.75], dtype=torch.float64)).item() - 2.5) < 0.05
    ints = tgrad.zeros(2000, dtype=tgrad.int64).random_(4)
    assert set(ints.tolist()) == {0, 1, 2, 3}
    assert tgrad.zeros(100, dtype=tgrad.bool).random_().dtype is tgrad.bool
    f = tgrad.zeros(1000, dtype=tgrad.float32).random_()
    assert float(f.min()) >= 0 and float(f.max()) <= 2 ** 24 and float(f.max()) > 2 ** 20


def test_in_place_draws_write_through_views_and_reproduce():
    base = tgrad.zeros(4, 6)
    base[:, ::2].normal_()
    assert (base[:, 1::2] == 0).all() and (base[:, ::2] != 0).all()
    g = tgrad.Generator().manual_seed(9)
    a = tgrad.empty(5).uniform_(generator=g).tolist()
    g.manual_seed(9)
    assert tgrad.empty(5).uniform_(generator=g).tolist() == a


@pytest.mark.parametrize("name,args,exc", [("uniform_", (1, 0), RuntimeError), ("normal_", (0, -1), RuntimeError),
                                           ("exponential_", (0,), RuntimeError), ("log_normal_", (1, 0), RuntimeError),
                                           ("geometric_", (0,), RuntimeError), ("geometric_", (1.5,), RuntimeError),
                                           ("cauchy_", (0, 0), RuntimeError), ("random_", (5, 2), RuntimeError)])
def test_in_place_draw_errors_match(name, args, exc):
    with pytest.raises(exc) as theirs:
        getattr(torch.zeros(3), name)(*args)
    with pytest.raises(exc) as ours:
        getattr(tgrad.zeros(3), name)(*args)
    assert str(ours.value) == str(theirs.value)


def test_in_place_draws_respect_autograd_rules_and_dtypes():
    for lib in (torch, tgrad):
        w = lib.zeros(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            w.normal_()
        with lib.no_grad():
            w.normal_()
        assert w.requires_grad and w.grad_fn is None
        for name in ("uniform_", "normal_"):
            with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
                getattr(lib.zeros(3, dtype=lib.int64), name)()
