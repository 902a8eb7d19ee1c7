"""PyTorch's calling conventions that toy-network scripts reach for, against PyTorch."""
import warnings

import pytest
import torch

import tgrad
from support.reference import assert_close


def both(data):
    return tgrad.tensor(data), torch.tensor(data)


def test_range_and_list_of_lists_index_like_pytorch():
    (x, xr) = both([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    assert x[range(3), [2, 1, 0]].tolist() == xr[range(3), [2, 1, 0]].tolist()
    assert x[range(1, 3)].tolist() == xr[range(1, 3)].tolist()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = x[[[0, 1], [1, 2]]].tolist()
        want = xr[[[0, 1], [1, 2]]].tolist()
    assert got == want and sum("non-tuple sequence" in str(m.message) for m in w) == 2
    y, yr = x.clone(), xr.clone()
    y[range(3), [0, 1, 2]] = 0.0
    yr[range(3), [0, 1, 2]] = 0.0
    assert y.tolist() == yr.tolist()


def test_type_conversions_like_pytorch():
    x, xr = both([1.5, -2.0])
    assert x.type() == "tgrad.FloatTensor" and xr.type() == "torch.FloatTensor"
    for target, ref in ((tgrad.DoubleTensor, torch.DoubleTensor), ("torch.LongTensor", "torch.LongTensor"),
                        (tgrad.int32, torch.int32)):
        got, want = x.type(target), xr.type(ref)
        assert got.dtype.torch is want.dtype and got.tolist() == want.tolist()
    assert isinstance(x, tgrad.FloatTensor) and not isinstance(x, tgrad.LongTensor)
    assert tgrad.LongTensor([1, 2]).dtype is tgrad.int64 and tgrad.FloatTensor(2, 3).shape == (2, 3)
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NoSuchTensor")


def test_format_of_a_0d_tensor_formats_the_number():
    for value in (1.5, 3, True):
        t, tr = both(value)
        for spec in ("", ".3f" if not isinstance(value, bool) else "", ">6"):
            assert format(t, spec) == format(tr, spec)
    assert f"{tgrad.tensor(0.25)}" == f"{torch.tensor(0.25)}" == "0.25"
    assert "{}".format(tgrad.ones(2)).startswith("tensor([1., 1.])")


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "prod", "std", "var", "logsumexp", "all", "any"])
def test_keepdims_is_an_alias_of_keepdim(name):
    x, xr = both([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])
    got = getattr(tgrad, name)(x, 1, keepdims=True)
    want = getattr(torch, name)(xr, 1, keepdims=True)
    assert tuple(got.shape) == tuple(want.shape)
    if want.dtype is torch.bool:
        assert got.tolist() == want.tolist()
    else:
        assert_close(got, want.double())
    assert tuple(getattr(x, name)(1, keepdims=True).shape) == tuple(want.shape)


def test_out_argument_like_pytorch():
    a, ar = both([[1.0, 2.0], [3.0, 4.0]])
    out, outr = tgrad.empty(2, 2), torch.empty(2, 2)
    assert tgrad.matmul(a, a, out=out) is out and torch.matmul(ar, ar, out=outr) is outr
    assert out.tolist() == outr.tolist()
    empty, emptyr = tgrad.empty(0), torch.empty(0)
    tgrad.mul(a, 3, out=empty)
    torch.mul(ar, 3, out=emptyr)
    assert empty.tolist() == emptyr.tolist()
    with pytest.warns(UserWarning, match="was resized"):
        tgrad.add(a, 1, out=tgrad.empty(5))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        tgrad.mul(a, 2.5, out=tgrad.empty(2, 2, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"mul\(\): functions with out=\.\.\. arguments don't support automatic"):
        tgrad.mul(a.requires_grad_(), 2, out=tgrad.empty(2, 2))
    v, i = tgrad.empty(0), tgrad.empty(0, dtype=tgrad.int64)
    result = tgrad.sort(tgrad.tensor([3.0, 1.0, 2.0]), out=(v, i))
    assert result.values is v and v.tolist() == [1.0, 2.0, 3.0] and i.tolist() == [1, 2, 0]
    s = tgrad.empty(0)
    assert tgrad.sum(tgrad.ones(2, 3), 1, out=s) is s and s.tolist() == [3.0, 3.0]


def _signature(t):
    fn = t.grad_fn
    return type(fn).__name__, [type(n).__name__ if n is not None else None for n, _ in fn.next_functions]


@pytest.mark.parametrize("bias", [True, False])
def test_linear_records_pytorchs_nodes(bias):
    """The blitz tutorial prints these: AddmmBackward0 whose edges are the bias's AccumulateGrad,
    the input's node and TBackward0 of the weight (MmBackward0 without a bias)."""
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2, bias=bias)
    lin = tgrad.nn.Linear(3, 2, bias=bias)
    with tgrad.no_grad():
        lin.weight.copy_(tgrad.from_torch(ref.weight.detach().clone()))
        if bias:
            lin.bias.copy_(tgrad.from_torch(ref.bias.detach().clone()))
    x = tgrad.randn(4, 3, requires_grad=True)
    xr = x.detach().torch().clone().requires_grad_()
    y, yr = lin(x * 2.0), ref(xr * 2.0)
    assert _signature(y) == _signature(yr)
    g = torch.randn(4, 2)
    y.backward(tgrad.from_torch(g.clone()))
    yr.backward(g)
    assert_close(lin.weight.grad, ref.weight.grad.double())
    assert_close(x.grad, xr.grad.double())
    if bias:
        assert_close(lin.bias.grad, ref.bias.grad.double())
