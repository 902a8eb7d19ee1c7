"""Tensor creation against PyTorch: tensor(), zeros/ones/empty/full, arange, linspace, eye, the random
factories and manual_seed, the *_like factories, from_numpy and the legacy constructors.

Every case builds the same thing with ``torch`` and with ``tgrad`` and compares values, dtypes and
text (``torch.`` read as ``tgrad.``). Values that tgrad computes come from Triton kernels; torch is
only the reference here."""
import numpy as np
import pytest
import torch

import tgrad
from support.exact import same


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
