"""Pickling and copying tensors, Parameters, modules and optimizers, as PyTorch does them.

Each case does the same thing to a torch object and to a tgrad object and compares what comes back:
the class (a Parameter stays a Parameter), requires_grad, leaf-ness, ``.grad`` (not pickled), the
values, whether ``copy.copy`` shares the storage, and the errors (deepcopy of a non-leaf)."""
import copy
import io
import multiprocessing
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch

import tgrad
import tgrad.nn as nn
import tgrad.optim as optim
from tgrad import dropin


def _pair(values, dtype=torch.float64, requires_grad=False):
    ref = torch.tensor(values, dtype=dtype, requires_grad=requires_grad)
    return tgrad.from_torch(ref.detach().clone()).requires_grad_(requires_grad), ref


def _like(t, ref):
    assert type(t).__name__ == type(ref).__name__, (type(t), type(ref))
    assert (t.requires_grad, t.is_leaf, t.grad is None) == (ref.requires_grad, ref.is_leaf, ref.grad is None)
    assert t.dtype.torch == ref.dtype and torch.equal(t.torch(), ref.detach())


def _round_trip(obj, protocol=pickle.HIGHEST_PROTOCOL):
    return pickle.loads(pickle.dumps(obj, protocol=protocol))


@pytest.mark.parametrize("protocol", [2, 4, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_tensors_pickle_like_torch(dtype, protocol):
    values = [[1, 0, 3], [0, 5, 1]]
    t, ref = _pair(values, dtype)
    _like(_round_trip(t, protocol), _round_trip(ref, protocol))
    assert _round_trip(t[1:, ::2]).tolist() == _round_trip(ref[1:, ::2]).tolist()  # a view: its own values


def test_requires_grad_is_pickled_but_not_grad_nor_history():
    t, ref = _pair([1.0, -2.0, 3.0], requires_grad=True)
    t.grad, ref.grad = tgrad.ones(3, dtype=tgrad.float64), torch.ones(3, dtype=torch.float64)
    _like(_round_trip(t), _round_trip(ref))
    # a non-leaf that requires grad comes back as a leaf that requires grad, as in PyTorch
    out, out_ref = t * 2, ref * 2
    _like(_round_trip(out), _round_trip(out_ref))
    _like(copy.copy(out), copy.copy(out_ref))
    # under no_grad the result is a plain tensor both ways
    with tgrad.no_grad():
        plain = t * 2
    with torch.no_grad():
        plain_ref = ref * 2
    _like(_round_trip(plain), _round_trip(plain_ref))


def test_copy_shares_storage_and_deepcopy_does_not():
    t, ref = _pair([1.0, 2.0])
    for copied, original in ((copy.copy(t), t), (copy.copy(ref), ref)):
        assert copied is not original and copied.data_ptr() == original.data_ptr()
    for copied, original in ((copy.deepcopy(t), t), (copy.deepcopy(ref), ref)):
        assert copied.data_ptr() != original.data_ptr()


def test_deepcopy_of_a_non_leaf_raises_as_in_torch():
    t, ref = _pair([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(ref * 2)
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(t * 2)


def test_user_attributes_are_kept():
    t, ref = _pair([1.0])
    t.tag = ref.tag = {"name": "w", "step": 3}
    assert _round_trip(t).tag == _round_trip(ref).tag == {"name": "w", "step": 3}
    assert copy.deepcopy(t).tag == copy.deepcopy(ref).tag


@pytest.mark.parametrize("requires_grad", [True, False])
def test_parameters_stay_parameters(requires_grad):
    data = torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    p = nn.Parameter(tgrad.from_torch(data.clone()), requires_grad=requires_grad)
    ref = torch.nn.Parameter(data.clone(), requires_grad=requires_grad)
    for how in (_round_trip, copy.copy, copy.deepcopy):
        got, want = how(p), how(ref)
        _like(got, want)
        assert isinstance(got, nn.Parameter)
    assert copy.copy(p).data_ptr() == p.data_ptr()


def test_the_same_tensor_twice_is_one_tensor_after_unpickling():
    t, ref = _pair([1.0, 2.0])
    a, b = _round_trip([t, t])
    a_ref, b_ref = _round_trip([ref, ref])
    assert (a is b) == (a_ref is b_ref) is True


def _model():
    g = torch.Generator().manual_seed(1)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    with tgrad.no_grad():
        for p in m.parameters():
            p.copy_(tgrad.from_torch(torch.randn(tuple(p.shape), dtype=torch.float64, generator=g)))
    return m


def test_modules_pickle_and_deepcopy():
    m = _model()
    x = tgrad.from_torch(torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(2, 3))
    for copied in (_round_trip(m), copy.deepcopy(m)):
        assert type(copied) is nn.Sequential and all(isinstance(p, nn.Parameter) for p in copied.parameters())
        assert torch.equal(copied(x).torch(), m(x).torch())
        assert all(q.data_ptr() != p.data_ptr() for p, q in zip(m.parameters(), copied.parameters()))
        copied(x).sum().backward()
        assert all(p.grad is None for p in m.parameters())  # the copy trains on its own


def test_optimizers_pickle_and_keep_stepping_identically():
    m = _model()
    x = tgrad.from_torch(torch.linspace(-1, 1, 6, dtype=torch.float64).reshape(2, 3))
    opt = optim.Adam(m.parameters(), lr=0.1)
    m(x).pow(2).sum().backward()
    opt.step()
    # pickle the model and its optimizer together, as torch.save({"m": m, "o": opt}) would
    m2, opt2 = _round_trip((m, opt))
    assert opt2.param_groups[0]["params"][0] is next(m2.parameters())
    for model, o in ((m, opt), (m2, opt2)):
        o.zero_grad()
        model(x).pow(2).sum().backward()
        o.step()
    for p, q in zip(m.parameters(), m2.parameters()):
        assert torch.equal(p.torch(), q.torch())
    m3 = copy.deepcopy(m)
    assert torch.equal(m3[0].weight.torch(), m[0].weight.torch())


def _double(t):
    """Runs in a spawned worker process."""
    return t * 2, nn.Parameter(t.clone())


def test_a_spawned_worker_returns_tensors():
    t = tgrad.from_torch(torch.arange(4, dtype=torch.float64))
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        doubled, param = pool.apply(_double, (t,))
    np.testing.assert_array_equal(doubled.numpy(), [0.0, 2.0, 4.0, 6.0])
    assert isinstance(param, nn.Parameter) and param.requires_grad
    np.testing.assert_array_equal(param.detach().numpy(), [0.0, 1.0, 2.0, 3.0])


def test_multiprocessing_queues_share_memory_as_in_torch():
    big = tgrad.zeros(1 << 18, dtype=tgrad.float64)
    sizes = []
    for t in (big, big.torch()):
        buf = io.BytesIO()
        ForkingPickler(buf).dump(t)  # what multiprocessing queues and pools send
        sizes.append(len(buf.getvalue()))
    assert max(sizes) < 4096 < big.numel() * 8  # a handle to shared memory, not the data


def test_pickling_under_the_drop_in_runner():
    """The runner gives tgrad's classes torch's module names (torch.nn.parameter.Parameter, torch.Size),
    which pickle would resolve to PyTorch's own classes: tgrad's pickles name them otherwise."""
    dropin.install()
    try:
        p = nn.Parameter(tgrad.ones(2), requires_grad=False)
        back = _round_trip({"p": p, "t": tgrad.ones(1), "shape": tgrad.zeros(2, 3).shape, "dtype": tgrad.float16})
        # a real torch tensor pickled from user code (pickle imports torch._utils: the real one)
        real = _round_trip(torch.ones(2))
    finally:
        dropin.uninstall()
    assert type(back["p"]) is nn.Parameter and not back["p"].requires_grad
    assert type(back["t"]) is tgrad.Tensor and type(back["shape"]) is tgrad.Size and back["shape"] == (2, 3)
    assert back["dtype"] is tgrad.float16 and type(real) is torch.Tensor
