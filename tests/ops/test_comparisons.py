"""equal (function and method) and isin against PyTorch: mixed dtypes, NaN, 0-d and 0-size
tensors, Python numbers, invert=, and PyTorch's errors."""
import pytest
import torch

import tgrad
from support.reference import same, uniform64

NAN = float("nan")
A = uniform64((3, 4), seed=1)
PAIRS = [(A, A.clone()), (A, A + 1e-12), (A, A[:2]), (A, A.t()), (torch.tensor([1, 2]), torch.tensor([1.0, 2.0])),
         (torch.tensor([NAN]), torch.tensor([NAN])), (torch.zeros(0), torch.zeros(0)), (torch.zeros(0), torch.zeros(0, 1)),
         (torch.tensor(2.0), torch.tensor([2.0])), (torch.tensor(True), torch.tensor(1)), (torch.tensor(-0.0), torch.tensor(0.0))]


@pytest.mark.parametrize("a,b", PAIRS)
def test_equal(a, b):
    ga, gb = tgrad.from_torch(a), tgrad.from_torch(b)
    assert tgrad.equal(ga, gb) is torch.equal(a, b)
    assert ga.equal(gb) is a.equal(b)


def test_equal_refuses_numbers():
    for fn in (lambda L: L.equal(L.ones(2), 1), lambda L: L.equal(2.0, L.ones(2)), lambda L: L.ones(2).equal(None)):
        with pytest.raises(TypeError):
            fn(torch)
        with pytest.raises(TypeError):
            fn(tgrad)


ISIN = [(torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.tensor([2, 6, 9])), (torch.tensor([1, 2, 3]), torch.tensor([2.0, 3.5])),
        (torch.tensor([1.0, NAN, 2.5]), torch.tensor([NAN, 2.5])), (A, A[0]), (A, torch.zeros(0)),
        (torch.zeros(0, 3), A), (torch.tensor(3), torch.tensor([[1, 3]])), (torch.tensor([1, 2], dtype=torch.int32), torch.tensor(2)),
        (torch.tensor([-0.0, 0.0]), torch.tensor([0.0])), (torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor([3, 300]))]


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("a,b", ISIN)
def test_isin(a, b, invert):
    same(tgrad.isin(tgrad.from_torch(a), tgrad.from_torch(b), invert=invert), torch.isin(a, b, invert=invert))
    same(tgrad.isin(tgrad.from_torch(a), tgrad.from_torch(b), assume_unique=True), torch.isin(a, b, assume_unique=True))


def test_isin_numbers_and_errors():
    x = torch.tensor([1.0, 2.0, 3.0])
    same(tgrad.isin(tgrad.from_torch(x), 2), torch.isin(x, 2))
    same(tgrad.isin(2, tgrad.from_torch(x)), torch.isin(2, x))
    same(tgrad.isin(tgrad.from_torch(x).requires_grad_(), tgrad.from_torch(x)), torch.isin(x.requires_grad_(), x))
    for fn, exc in [(lambda L: L.isin(L.tensor([True]), L.tensor([1])), RuntimeError),
                    (lambda L: L.isin(L.tensor([1]), L.tensor([False])), RuntimeError),
                    (lambda L: L.isin(1, 2), TypeError)]:
        with pytest.raises(exc) as ref:
            fn(torch)
        with pytest.raises(exc) as got:
            fn(tgrad)
        if exc is RuntimeError:
            assert str(got.value) == str(ref.value)
