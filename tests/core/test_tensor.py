"""Tensor creation, conversions, metadata, repr, devices and dtypes, checked against PyTorch.

Every case builds the same thing with ``torch`` and with ``tgrad`` and compares values, dtypes and
text (``torch.`` read as ``tgrad.``). Values that tgrad computes (arange, linspace, eye, casts,
random numbers) come from Triton kernels; torch is only the reference here."""
import re

import numpy as np
import pytest
import torch

import tgrad

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")


def same(t, ref: torch.Tensor):
    """tgrad tensor ``t`` equals torch tensor ``ref`` exactly: dtype, shape and every value."""
    assert isinstance(t, tgrad.Tensor), type(t)
    assert t.dtype.torch == ref.dtype, (t.dtype, ref.dtype)
    assert tuple(t.shape) == tuple(ref.shape), (t.shape, ref.shape)
    assert torch.equal(t.torch().cpu(), ref.cpu()), (t.torch(), ref)


def as_torch_text(s: str) -> str:
    return s.replace("torch.", "tgrad.")


# ============================================================================== factories

@pytest.mark.parametrize("data", [
    [[1, 2, 3], [4, 5, 6]], [1.5, -2.0], [True, False], 3, 2.5, True, [], [[1, 2.5]], [True, 2],
    [[[1.0]], [[2.0]]], -7,
], ids=repr)
def test_tensor_infers_dtype_and_values_like_torch(data):
    # bools -> bool, ints -> int64, any float -> float32 (the default dtype), nesting -> shape
    same(tgrad.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("np_dtype", [np.float64, np.float32, np.float16, np.int32, np.int64, np.uint8, np.bool_])
def test_tensor_from_numpy_array_keeps_its_dtype(np_dtype):
    a = np.array([[0, 1, 2], [3, 4, 5]]).astype(np_dtype)
    t = tgrad.tensor(a)
    same(t, torch.tensor(a))
    a[0, 0] = 1  # tgrad.tensor copies
    assert t[0, 0].item() == 0


@pytest.mark.parametrize("dtype", [tgrad.float64, torch.float64, tgrad.float16, tgrad.int32, tgrad.bool, tgrad.uint8])
def test_tensor_dtype_argument(dtype):
    data = [[0.0, 1.7, -2.2], [3.0, 255.0, 0.5]] if dtype not in (tgrad.uint8,) else [[0.0, 1.7, 2.2], [3.0, 255.0, .5]]
    tdt = dtype if isinstance(dtype, torch.dtype) else dtype.torch
    same(tgrad.tensor(data, dtype=dtype), torch.tensor(data, dtype=tdt))


def test_tensor_requires_grad_makes_a_leaf():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        tgrad.tensor([1, 2], requires_grad=True)


def test_tensor_of_a_tensor_copies_and_drops_history():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = tgrad.tensor(x)
    assert not y.requires_grad and y.is_leaf
    y.add_(1)
    assert x.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],), (torch.Size([2, 3]),), ((),), ((0, 4),), (5,)], ids=repr)
def test_zeros_ones_empty_sizes(name, size):
    t, ref = getattr(tgrad, name)(*size), getattr(torch, name)(*size)
    assert t.shape == ref.shape and t.dtype is tgrad.float32
    if name != "empty":
        same(t, ref)
    assert not t.requires_grad and t.is_leaf


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_zeros_ones_empty_dtype_and_requires_grad(name):
    t = getattr(tgrad, name)(3, 2, dtype=tgrad.int32)
    assert t.dtype is tgrad.int32 and t.shape == (3, 2)
    g = getattr(tgrad, name)((2,), dtype=torch.float64, requires_grad=True)
    assert g.dtype is tgrad.float64 and g.requires_grad and g.is_leaf and g.grad_fn is None


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_negative_size_is_an_error(name):
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        getattr(tgrad, name)(2, -3)


@pytest.mark.parametrize("value, dtype", [(3, None), (3.5, None), (True, None), (-2, tgrad.float64), (2.7, tgrad.int32)])
def test_full_infers_dtype_from_the_value(value, dtype):
    ref = torch.full((2, 3), value, dtype=None if dtype is None else dtype.torch)
    same(tgrad.full((2, 3), value, dtype=dtype), ref)


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((1, 10, 3), {}), ((0, 2.5), {}), ((0, 1, 0.1), {}), ((5, 0, -1.5), {}), ((-3, 3), {}),
    ((3, 3), {}), ((0, 1, 0.3), {"dtype": "float64"}), ((0, 2.5), {"dtype": "int64"}), ((10,), {"dtype": "float32"}),
    ((-1.0, 1.0, 0.25), {}), ((0, 100, 7), {"dtype": "int32"}), ((0.5, 3.7, 1.1), {"dtype": "int64"}),
    ((0, 2.5), {"dtype": "int32"}), ((-0.5, 2.5, 0.9), {"dtype": "int32"}), ((2 ** 40, 2 ** 40 + 5, 2), {}),
], ids=repr)
def test_arange_matches_torch(args, kwargs):
    dt = kwargs.get("dtype")
    t = tgrad.arange(*args, **({"dtype": getattr(tgrad, dt)} if dt else {}))
    same(t, torch.arange(*args, **({"dtype": getattr(torch, dt)} if dt else {})))


def test_arange_bad_steps():
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        tgrad.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        tgrad.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="step must be nonzero"):  # int64 truncates the step to 0
        tgrad.arange(0, 3, 0.5, dtype=tgrad.int64)
    with pytest.raises(RuntimeError, match="unsupported range"):
        tgrad.arange(0, float("inf"))


@pytest.mark.parametrize("args, dtype", [((0, 1, 7), None), ((2, 3, 1), None), ((2, 3, 0), None),
                                         ((-1, 1, 9), "float64"), ((3.5, -10, 11), None), ((0, 1, 1000), None),
                                         ((-3.3, 7.1, 777), "float64"), ((0, 10, 11), "int64"), ((0, 10, 7), "int32")],
                         ids=repr)
def test_linspace_matches_torch(args, dtype):
    t = tgrad.linspace(*args, dtype=getattr(tgrad, dtype) if dtype else None)
    ref = torch.linspace(*args, dtype=getattr(torch, dtype) if dtype else None)
    assert t.dtype.torch == ref.dtype and t.shape == ref.shape
    # torch's vectorised CPU kernel may round the last bit differently: allow 2 ulp of the range
    ulp = torch.finfo(ref.dtype).eps * max(abs(args[0]), abs(args[1]), 1) if ref.is_floating_point() else 0
    torch.testing.assert_close(t.torch(), ref, rtol=0, atol=2 * ulp)


@pytest.mark.parametrize("args, dtype", [((3,), None), ((3, 5), None), ((4, 2), None), ((2,), "int64"),
                                         ((0,), None), ((1, 3), "float64")], ids=repr)
def test_eye_matches_torch(args, dtype):
    same(tgrad.eye(*args, dtype=getattr(tgrad, dtype) if dtype else None),
         torch.eye(*args, dtype=getattr(torch, dtype) if dtype else None))


# ------------------------------------------------------------------------------ random factories

def test_rand_randn_shapes_dtypes_ranges():
    tgrad.manual_seed(0)
    u = tgrad.rand(41, 53)
    assert u.shape == (41, 53) and u.dtype is tgrad.float32 and not u.requires_grad
    uu = u.torch()
    assert float(uu.min()) >= 0.0 and float(uu.max()) < 1.0 and abs(float(uu.mean()) - 0.5) < 0.02
    n = tgrad.randn((57, 39), dtype=tgrad.float64)
    assert n.shape == (57, 39) and n.dtype is tgrad.float64
    nn_ = n.torch()
    assert abs(float(nn_.mean())) < 0.06 and abs(float(nn_.std()) - 1.0) < 0.06
    assert tgrad.rand(3, requires_grad=True).requires_grad
    assert tgrad.rand(()).shape == () and tgrad.randn(0, 3).shape == (0, 3)


def test_randint_shapes_dtypes_ranges():
    r = tgrad.randint(-3, 4, (2000,))
    assert r.dtype is tgrad.int64 and r.shape == (2000,)
    assert set(r.tolist()) == set(range(-3, 4))  # every value of [low, high) appears, nothing else
    assert set(tgrad.randint(5, (300,)).tolist()) == set(range(5))  # randint(high, size)
    assert tgrad.randint(0, 10, (3, 2), dtype=tgrad.int32).dtype is tgrad.int32


def test_normal_and_like_factories():
    z = tgrad.normal(2.0, 3.0, size=(4000,))
    zz = z.torch()
    assert z.dtype is tgrad.float32 and abs(float(zz.mean()) - 2.0) < 0.2 and abs(float(zz.std()) - 3.0) < 0.2
    m = tgrad.normal(tgrad.tensor([0.0, 100.0, -100.0]), tgrad.tensor([1e-3, 1e-3, 1e-3]))
    torch.testing.assert_close(m.torch(), torch.tensor([0.0, 100.0, -100.0]), rtol=0, atol=0.02)
    base = tgrad.zeros(3, 4, dtype=tgrad.float64)
    for fn in (tgrad.rand_like, tgrad.randn_like):
        t = fn(base)
        assert t.shape == (3, 4) and t.dtype is tgrad.float64
    ri = tgrad.randint_like(base, 5)
    assert ri.dtype is tgrad.float64 and set(ri.tolist()[0]) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    ri = tgrad.randint_like(tgrad.zeros(50, dtype=tgrad.int64), 2, 4)
    assert ri.dtype is tgrad.int64 and set(ri.tolist()) == {2, 3}


def test_manual_seed_makes_draws_reproducible():
    def draws():
        return [tgrad.rand(5).tolist(), tgrad.randn(2, 3).tolist(), tgrad.randint(0, 1000, (6,)).tolist(),
                tgrad.normal(0.0, 1.0, size=(4,)).tolist()]

    tgrad.manual_seed(1234)
    a = draws()
    tgrad.manual_seed(1234)
    b = draws()
    tgrad.manual_seed(1235)
    c = draws()
    assert a == b
    assert all(x != y for x, y in zip(a, c))
    tgrad.manual_seed(7)
    first, second = tgrad.rand(8).tolist(), tgrad.rand(8).tolist()
    assert first != second  # the generator advances between draws


@pytest.mark.parametrize("name", ["rand", "randn"])
def test_random_float_factories_refuse_integer_dtypes(name):
    with pytest.raises((NotImplementedError, RuntimeError), match="not implemented for 'Long'"):
        getattr(tgrad, name)(2, dtype=tgrad.int64)


# ------------------------------------------------------------------------------ *_like, numpy, legacy

@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.int32, tgrad.bool])
def test_like_factories_keep_shape_dtype_device(dtype):
    src = tgrad.ones(2, 3, dtype=dtype).t()
    ref = torch.ones(2, 3, dtype=dtype.torch).t()
    same(tgrad.zeros_like(src), torch.zeros_like(ref))
    same(tgrad.ones_like(src), torch.ones_like(ref))
    same(tgrad.full_like(src, 1), torch.full_like(ref, 1))
    e = tgrad.empty_like(src)
    assert e.shape == (3, 2) and e.dtype is dtype and e.device == src.device
    same(tgrad.zeros_like(src, dtype=tgrad.float16), torch.zeros_like(ref, dtype=torch.float16))
    assert tgrad.ones_like(tgrad.ones(2), requires_grad=True).requires_grad


def test_full_like_casts_the_value_to_the_dtype():
    same(tgrad.full_like(tgrad.zeros(2, dtype=tgrad.int32), 2.7), torch.full_like(torch.zeros(2, dtype=torch.int32), 2.7))


def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = tgrad.from_numpy(a)
    assert t.dtype is tgrad.float64 and t.shape == (2, 3)
    a[0, 1] = 50.0
    assert t[0, 1].item() == 50.0
    t.add_(1)  # computed by a kernel, written into numpy's buffer
    assert a.tolist() == [[1.0, 51.0, 3.0], [4.0, 5.0, 6.0]]
    assert t.numpy() is not a and np.shares_memory(t.numpy(), a)


def test_legacy_constructors():
    same(tgrad.FloatTensor([1, 2]), torch.FloatTensor([1, 2]))
    same(tgrad.DoubleTensor([1, 2]), torch.DoubleTensor([1, 2]))
    same(tgrad.LongTensor([1, 2]), torch.LongTensor([1, 2]))
    assert tgrad.DoubleTensor(2, 1).shape == (2, 1) and tgrad.DoubleTensor(2, 1).dtype is tgrad.float64
    t = tgrad.Tensor([1.0, 2.0])
    assert type(t) is tgrad.Tensor
    same(t, torch.Tensor([1.0, 2.0]))
    same(tgrad.Tensor([1, 2]), torch.Tensor([1, 2]))  # ints become the default float dtype
    assert tgrad.Tensor(2, 3).shape == (2, 3)


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


# ============================================================================== metadata

def test_shape_size_and_size_repr():
    t = tgrad.zeros(2, 3)
    assert type(t.shape) is tgrad.Size and type(t.size()) is tgrad.Size
    assert t.shape == (2, 3) and t.size() == torch.Size([2, 3]) and t.size(1) == 3 and t.size(-2) == 2
    assert repr(t.shape) == "tgrad.Size([2, 3])" and str(t.size()) == "tgrad.Size([2, 3])"
    assert repr(tgrad.tensor(1.0).shape) == "tgrad.Size([])"
    assert type(t.shape[1:]) is tgrad.Size and t.shape[1:] == (3,)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"):
        t.size(5)


def test_dtype_device_ndim_numel_stride():
    t = tgrad.zeros(2, 3, 4, dtype=tgrad.float64)
    assert repr(tgrad.zeros(1).dtype) == "tgrad.float32" and repr(t.dtype) == "tgrad.float64"
    assert t.dtype == tgrad.double and tgrad.float is tgrad.float32 and tgrad.long is tgrad.int64
    assert t.device == torch.device("cpu") and t.device.type == "cpu" and not t.is_cuda
    assert t.ndim == 3 and t.dim() == 3 and t.numel() == 24 and tgrad.zeros(2, 0).numel() == 0
    assert t.stride() == (12, 4, 1) and t.stride(1) == 4 and t.element_size() == 8
    assert tgrad.tensor(5.0).ndim == 0 and tgrad.tensor(5.0).stride() == ()
    assert t.is_floating_point() and not tgrad.zeros(1, dtype=tgrad.int64).is_floating_point()


def test_is_contiguous_after_transpose_and_T():
    t = tgrad.zeros(2, 3)
    assert t.is_contiguous()
    tt = t.t()
    assert not tt.is_contiguous() and tt.shape == (3, 2) and tt.stride() == (1, 3)
    assert not t.transpose(0, 1).is_contiguous()
    assert tt.contiguous().is_contiguous() and t.contiguous() is t
    T = t.T
    assert T.shape == (3, 2) and T.stride() == (1, 3)
    assert tgrad.zeros(2, 3, 4).permute(2, 0, 1).stride() == torch.zeros(2, 3, 4).permute(2, 0, 1).stride()
    assert not tgrad.zeros(4, 6)[:, ::2].is_contiguous()


def test_len_and_iteration():
    t = tgrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert len(t) == 3
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, tgrad.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    assert [x.item() for x in tgrad.tensor([7, 8])] == [7, 8]
    with pytest.raises(TypeError, match="0-d tensor"):
        len(tgrad.tensor(1.0))
    with pytest.raises(TypeError, match="0-d tensor"):
        iter(tgrad.tensor(1.0))


def test_python_scalars_of_one_element_tensors():
    assert bool(tgrad.tensor([0.5])) is True and bool(tgrad.tensor(0.0)) is False and bool(tgrad.tensor([[0]])) is False
    assert float(tgrad.tensor([3])) == 3.0 and int(tgrad.tensor([[-2.7]])) == -2
    assert int(tgrad.tensor(2.9)) == 2
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(tgrad.tensor([1.0, 2.0]))


REPR_CASES = {
    "0-d float": lambda L: L.tensor(3.0),
    "0-d int": lambda L: L.tensor(-4),
    "0-d bool": lambda L: L.tensor(True),
    "1-d decimals": lambda L: L.tensor([3.0, 4.5]),
    "2-d": lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]]),
    "float64": lambda L: L.tensor([2.0, 4.0], dtype=L.float64),
    "float16 0-d": lambda L: L.tensor(1.25, dtype=L.float16),
    "int64 2-d": lambda L: L.tensor([[1, -20], [300, 4]]),
    "int32": lambda L: L.tensor([1, 2], dtype=L.int32),
    "bool": lambda L: L.tensor([True, False]),
    "empty float64": lambda L: L.zeros(0, 3, dtype=L.float64),
    "sci": lambda L: L.tensor([1e-5, 1e5, 3.0]),
    "large summarised": lambda L: L.ones(100, 100),
    "large 1-d": lambda L: L.tensor([float(i) for i in range(2000)]),
    "leaf requires grad": lambda L: L.ones(2, 2, requires_grad=True),
    "0-d leaf": lambda L: L.tensor(3.0, requires_grad=True),
    "non-leaf": lambda L: L.ones(2, 2, requires_grad=True) + 2,
    "0-d result": lambda L: (L.ones(2, 2, requires_grad=True) * 1).sum(),
    "0-d quotient": lambda L: (L.ones(2, 2, requires_grad=True) + 1).sum() / 2,
    "dtype then grad_fn": lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True) * 2,
    "decimals with grad_fn": lambda L: L.tensor([2.0, 3.0], requires_grad=True) * 1.5,
    "detached": lambda L: (L.ones(2, requires_grad=True) * 2).detach(),
    "float64 leaf": lambda L: L.zeros(2, dtype=L.float64, requires_grad=True),
}


@pytest.mark.parametrize("case", list(REPR_CASES))
def test_repr_matches_torch(case):
    t, ref = REPR_CASES[case](tgrad), REPR_CASES[case](torch)
    assert repr(t) == as_torch_text(repr(ref))
    assert str(t) == repr(t)


def test_repr_under_no_grad_has_no_suffix():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.no_grad():
        assert repr(x * 2) == "tensor([2., 2.])"


# ============================================================================== devices and dtypes

@NO_CUDA
@pytest.mark.parametrize("make", [lambda: tgrad.zeros(2, device="cuda"), lambda: tgrad.tensor([1.0], device="cuda"),
                                  lambda: tgrad.ones(2).to("cuda"), lambda: tgrad.ones(2).cuda(),
                                  lambda: tgrad.rand(2, device="cuda"), lambda: tgrad.arange(3, device="cuda")])
def test_cuda_on_a_cpu_only_machine_is_a_clear_error(make):
    # PyTorch's exception: AssertionError when torch has no CUDA build, RuntimeError when no GPU
    expected = AssertionError if not torch.backends.cuda.is_built() else RuntimeError
    with pytest.raises(expected, match="CUDA"):
        make()
    with pytest.raises(expected, match="CUDA"):
        torch.zeros(2, device="cuda")


def test_unknown_device_is_an_error():
    with pytest.raises(RuntimeError):
        tgrad.zeros(2, device="not-a-device")


def test_bf16_tensors_are_created_on_cpu_but_ops_refuse():
    b = tgrad.ones(2, 3, dtype=tgrad.bfloat16)
    assert b.dtype is tgrad.bfloat16 and repr(b.dtype) == "tgrad.bfloat16" and b.shape == (2, 3)
    assert tgrad.tensor([1.5, 2.0], dtype=tgrad.bfloat16).tolist() == [1.5, 2.0]
    for op in (lambda: b + 1, lambda: b.exp(), lambda: b.sum(), lambda: b @ b.t(), lambda: b.float(),
               lambda: tgrad.ones(2) * tgrad.ones(2, dtype=tgrad.bfloat16)):
        with pytest.raises(RuntimeError, match="bfloat16.*CPU"):
            op()


def test_float16_runs_on_cpu():
    h = tgrad.tensor([1.5, -2.25], dtype=tgrad.float16)
    same(h * 2, torch.tensor([3.0, -4.5], dtype=torch.float16))


# ------------------------------------------------------------------------------ CUDA (skipped here)

@CUDA
def test_cuda_factories():
    for t in (tgrad.zeros(2, 3, device="cuda"), tgrad.ones(2, 3, device="cuda:0"), tgrad.tensor([[1.0] * 3] * 2, device="cuda"),
              tgrad.rand(2, 3, device="cuda"), tgrad.randn(2, 3, device="cuda"), tgrad.full((2, 3), 2.0, device="cuda"),
              tgrad.empty(2, 3, device="cuda")):
        assert t.is_cuda and t.device == torch.device("cuda", 0) and t.shape == (2, 3)
    # the same fp64 formula on both devices; torch's own CUDA arange works in fp32, so ~1 ulp off
    r = tgrad.arange(0, 1, 0.1, device="cuda")
    same(r, tgrad.arange(0, 1, 0.1).torch())
    torch.testing.assert_close(r.torch().cpu(), torch.arange(0, 1, 0.1), rtol=0, atol=1e-7)
    same(tgrad.eye(3, 4, device="cuda"), torch.eye(3, 4, device="cuda"))
    x = tgrad.ones(2)
    assert x.cuda().is_cuda and x.cuda().cpu().device.type == "cpu" and x.to("cuda").tolist() == [1.0, 1.0]
    tgrad.manual_seed(3)
    a = tgrad.rand(100, device="cuda").tolist()
    tgrad.manual_seed(3)
    assert tgrad.rand(100).tolist() == a  # the same counter-based stream on both devices


@CUDA
def test_cuda_op_matches_torch_and_backward():
    data = torch.linspace(-2, 2, 35, dtype=torch.float64).reshape(5, 7)
    x = tgrad.tensor(data.float(), device="cuda", requires_grad=True)
    w = tgrad.tensor(data.float().t().contiguous(), device="cuda", requires_grad=True)
    out = (x @ w).tanh().sum()
    out.backward()
    xr, wr = data.clone().requires_grad_(), data.t().clone().requires_grad_()
    ref = (xr @ wr).tanh().sum()
    ref.backward()
    torch.testing.assert_close(out.torch().cpu().double(), ref.detach(), rtol=2e-5, atol=1e-5)
    torch.testing.assert_close(x.grad.torch().cpu().double(), xr.grad, rtol=2e-5, atol=1e-5)
    assert x.grad.is_cuda


@CUDA
def test_cuda_and_cpu_mixed_is_pytorchs_error():
    msg = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        tgrad.ones(2, device="cuda") + tgrad.ones(2)


@CUDA
def test_bf16_on_cuda_with_its_own_tolerance():
    data = torch.linspace(-3, 3, 64, dtype=torch.float64)
    b = tgrad.tensor(data, dtype=tgrad.bfloat16, device="cuda", requires_grad=True)
    ref64 = data.to(torch.bfloat16).double().requires_grad_()
    y = (b.exp() * b).sum()
    y.backward()
    r = (ref64.exp() * ref64).sum()
    r.backward()
    assert y.dtype is tgrad.bfloat16 and b.grad.dtype is tgrad.bfloat16
    torch.testing.assert_close(y.torch().cpu().double(), r.detach(), rtol=2e-2, atol=1e-1)
    torch.testing.assert_close(b.grad.torch().cpu().double(), ref64.grad, rtol=2e-2, atol=1e-2)
