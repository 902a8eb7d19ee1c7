"""unique_consecutive against PyTorch (values, inverse, counts; flat and along a dim; NaN, 0-d,
0-size, bool and float inputs; its backward's error and PyTorch's IndexError), and unique's
result forms beside it."""
import pytest
import torch

import tgrad
from support.reference import same

NAN = float("nan")
INPUTS = [torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), torch.tensor([[1, 1], [2, 2], [2, 3]]), torch.tensor([1.0, NAN, NAN, 2.0]),
          torch.tensor(3.5), torch.zeros(0), torch.tensor([True, True, False]), torch.tensor([[1, 1], [1, 1], [2, 3], [2, 3]]),
          torch.tensor([[[0, 1], [0, 1]], [[0, 1], [5, 1]]]), torch.zeros(2, 0)]
FORMS = [{}, {"return_inverse": True}, {"return_counts": True}, {"return_inverse": True, "return_counts": True}]


def _same_all(got, ref):
    got, ref = (got, ref) if isinstance(ref, tuple) else ((got,), (ref,))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        same(g, r)


@pytest.mark.parametrize("kw", FORMS, ids=str)
@pytest.mark.parametrize("x", INPUTS, ids=range(len(INPUTS)))
def test_unique_consecutive(x, kw):
    for dim in [None] + list(range(-x.ndim, x.ndim)):
        try:
            torch.unique_consecutive(x, dim=dim)
        except RuntimeError as e:  # a 0-size dim beside the one selected
            with pytest.raises(RuntimeError, match=str(e)):
                tgrad.unique_consecutive(tgrad.from_torch(x), dim=dim)
            continue
        _same_all(tgrad.unique_consecutive(tgrad.from_torch(x), dim=dim, **kw), torch.unique_consecutive(x, dim=dim, **kw))
        _same_all(tgrad.from_torch(x).unique_consecutive(dim=dim, **kw), x.unique_consecutive(dim=dim, **kw))


def test_unique_consecutive_errors_and_backward():
    with pytest.raises(IndexError):
        torch.unique_consecutive(torch.zeros(2, 3), dim=2)
    with pytest.raises(IndexError):
        tgrad.unique_consecutive(tgrad.zeros(2, 3), dim=2)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        torch.unique_consecutive(torch.tensor(1), dim=0)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        tgrad.unique_consecutive(tgrad.tensor(1), dim=0)
    x = tgrad.tensor([1.0, 2.0, 2.0]).requires_grad_()
    y = tgrad.unique_consecutive(x)
    assert y.requires_grad and type(y.grad_fn).__name__ == "UniqueConsecutiveBackward0"
    with pytest.raises(NotImplementedError, match="the derivative for 'unique_consecutive' is not implemented."):
        y.sum().backward()


@pytest.mark.parametrize("kw", FORMS, ids=str)
def test_unique_forms(kw):
    for x in INPUTS[:6]:
        _same_all(tgrad.unique(tgrad.from_torch(x), **kw), torch.unique(x, **kw))
