"""Conversions against PyTorch: numpy(), tolist() and item(), the cast methods, to() and type_as()
(differentiable), and sharing memory with torch and through DLPack.

Every case builds the same thing with ``torch`` and with ``tgrad`` and compares values, dtypes and
text (``torch.`` read as ``tgrad.``). Values that tgrad computes come from Triton kernels; torch is
only the reference here."""
import numpy as np
import pytest
import torch

import tgrad
from support.exact import same


# ============================================================================== conversions

def test_numpy_refuses_grad_tensors_and_detach_numpy_works():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad. Use "
                                           r"tensor.detach\(\).numpy\(\) instead."):
        x.numpy()
    a = x.detach().numpy()
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    assert np.shares_memory(a, x.detach().numpy())


def test_tolist_and_item():
    assert tgrad.tensor([[1.0, 2.0], [3.0, 4.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert tgrad.tensor(3).tolist() == 3 and tgrad.tensor([True]).tolist() == [True]
    assert tgrad.tensor(2.5).item() == 2.5 and type(tgrad.tensor(7).item()) is int
    assert tgrad.tensor([[True]]).item() is True
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tgrad.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="a Tensor with 0 elements cannot be converted to Scalar"):
        tgrad.zeros(0).item()


CAST_SOURCES = {
    "float32": ([-2.7, -1.5, -0.5, -0.0, 0.0, 0.4, 0.5, 1.5, 2.9, 200.2, 1e-8], torch.float32),
    "float64": ([-2.7, -1.5, -0.5, 0.0, 0.4, 1.0 / 3.0, 2.9, 70000.0, 123456.789], torch.float64),
    "float16": ([-2.5, -0.5, 0.0, 1.5, 2.5, 100.0], torch.float16),
    "int64": ([-3, -1, 0, 1, 2, 255, 2 ** 40 + 1], torch.int64),
    "int32": ([-7, 0, 3, 1000], torch.int32),
    "bool": ([True, False, True], torch.bool),
}
CASTS = ["float", "double", "half", "long", "int", "bool", "short", "char"]


@pytest.mark.parametrize("cast", CASTS)
@pytest.mark.parametrize("src", list(CAST_SOURCES))
def test_cast_methods_match_torch(src, cast):
    # float -> int truncates toward zero; -0.5 -> 0; nonzero -> True
    data, dt = CAST_SOURCES[src]
    if cast in ("short", "char") and src.startswith(("float", "int64")):
        data = [v for v in data if -128 < v < 128]  # out-of-range integer casts are platform-defined
    if cast == "half" and src == "int64":
        data = data[:-1]
    ref = torch.tensor(data, dtype=dt)
    same(getattr(tgrad.tensor(data, dtype=dt), cast)(), getattr(ref, cast)())


@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.int64, tgrad.float16, torch.float64, tgrad.bool])
def test_to_dtype_and_type_as(dtype):
    data = [[-1.7, 0.0], [2.5, 3.2]]
    ref = torch.tensor(data).to(dtype if isinstance(dtype, torch.dtype) else dtype.torch)
    same(tgrad.tensor(data).to(dtype), ref)
    same(tgrad.tensor(data).to(dtype=dtype), ref)
    same(tgrad.tensor(data).type_as(tgrad.tensor([1], dtype=dtype)), ref)


def test_to_same_dtype_or_cpu_returns_self():
    x = tgrad.tensor([1.0, 2.0])
    assert x.to(tgrad.float32) is x and x.to("cpu") is x and x.to(device="cpu") is x and x.cpu() is x
    assert x.float() is x and x.to(torch.device("cpu"), torch.float32) is x
    y = x.to("cpu", tgrad.float64)
    assert y.dtype is tgrad.float64 and y.device.type == "cpu"
    c = x.to(tgrad.float32, copy=True)
    assert c is not x and c.data_ptr() != x.data_ptr() and c.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dst", [tgrad.float64, tgrad.float16])
def test_to_is_differentiable_and_casts_the_gradient_back(dst):
    x = tgrad.tensor([0.5, -1.25, 3.0], requires_grad=True)
    y = x.to(dst)
    assert y.grad_fn.name() == "ToCopyBackward0" and y.dtype is dst
    g = tgrad.tensor([0.3, -2.0, 7.5], dtype=dst)
    (y * g).sum().backward()
    assert x.grad.dtype is tgrad.float32
    same(x.grad, torch.tensor([0.3, -2.0, 7.5], dtype=dst.torch).float())
    z = tgrad.tensor([1.0, 2.0], requires_grad=True)
    assert z.double().grad_fn.name() == "ToCopyBackward0"
    assert not z.long().requires_grad  # an integer result carries no gradient


def test_from_torch_and_torch_share_memory_both_ways():
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = tgrad.from_torch(base)
    assert t.data_ptr() == base.data_ptr() and t.shape == (2, 3) and t.dtype is tgrad.float32
    base[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    t.mul_(2)
    assert base[1, 2].item() == 10.0
    back = t.torch()
    assert isinstance(back, torch.Tensor) and back.data_ptr() == base.data_ptr()
    back.zero_()
    assert t.tolist() == [[0.0] * 3] * 2
    # torch's autograd flag is not carried over: tgrad tracks its own
    assert not tgrad.from_torch(torch.ones(2, requires_grad=True)).requires_grad


def test_dlpack_both_ways_shares_memory():
    t = tgrad.tensor([1.0, 2.0, 3.0])
    tt = torch.from_dlpack(t)
    assert isinstance(tt, torch.Tensor) and tt.data_ptr() == t.data_ptr()
    tt[0] = 9.0
    assert t[0].item() == 9.0
    src = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    g = tgrad.from_dlpack(src)
    assert isinstance(g, tgrad.Tensor) and g.dtype is tgrad.int32 and g.data_ptr() == src.data_ptr()
    g.add_(10)
    assert src.tolist() == [[11, 12], [13, 14]]
    assert tgrad.from_dlpack(torch.to_dlpack(torch.ones(2))).tolist() == [1.0, 1.0]
