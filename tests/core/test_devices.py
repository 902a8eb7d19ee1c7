"""tgrad.accelerator, backends flags, nn.parallel and onnx, against what torch answers on this machine."""
import warnings

import pytest
import torch
import torch.distributed as tdist
from torch.nn.parallel import DistributedDataParallel as TorchDDP

import tgrad
import tgrad.nn as gnn


def test_accelerator_answers_as_torch():
    assert tgrad.accelerator.is_available() == torch.accelerator.is_available()
    assert tgrad.accelerator.device_count() == torch.accelerator.device_count()
    assert tgrad.accelerator.current_accelerator() == torch.accelerator.current_accelerator()
    tgrad.accelerator.synchronize()
    with tgrad.accelerator.device_index(None):
        pass
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no accelerator"):
            tgrad.accelerator.current_device_index()


def test_backend_flags_are_accepted():
    b = tgrad.backends
    for name in ("benchmark", "deterministic", "enabled", "allow_tf32"):
        old = getattr(b.cudnn, name)
        setattr(b.cudnn, name, not old)
        assert getattr(b.cudnn, name) == (not old)
        setattr(b.cudnn, name, old)
    assert b.cudnn.is_available() is False
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.cuda.is_built() == torch.backends.cuda.is_built()
    assert b.cuda.matmul.allow_tf32 is False


def test_cuda_seed_leaves_cpu_stream_alone_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("with CUDA the seed is tgrad's one generator's")
    tgrad.manual_seed(0)
    a = tgrad.rand(3)
    tgrad.manual_seed(0)
    tgrad.cuda.manual_seed(123)
    tgrad.cuda.manual_seed_all(7)
    assert tgrad.rand(3).tolist() == a.tolist()


def test_data_parallel_is_a_pass_through():
    tgrad.manual_seed(0)
    inner = gnn.Linear(3, 2)
    with pytest.warns(UserWarning, match="one device"):
        dp = gnn.DataParallel(inner)
    x = tgrad.randn(4, 3)
    assert dp(x).tolist() == inner(x).tolist()
    assert list(dp.state_dict()) == list(torch.nn.DataParallel(torch.nn.Linear(3, 2)).state_dict())
    assert gnn.parallel.DataParallel is gnn.DataParallel
    dp(x).sum().backward()
    assert inner.weight.grad is not None


def test_distributed_answers_a_single_process_as_torch_uninitialized():
    gdist = tgrad.distributed
    assert gdist.is_initialized() is tdist.is_initialized() is False
    assert gdist.is_available() is False  # tgrad has no backend (documented difference)
    for name in ("get_rank", "get_world_size", "barrier"):
        with pytest.raises(ValueError) as theirs:
            getattr(tdist, name)()
        with pytest.raises(ValueError) as ours:
            getattr(gdist, name)()
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="not been initialized"):
        TorchDDP(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="not been initialized"):
        gnn.parallel.DistributedDataParallel(gnn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="single process"):
        gdist.init_process_group("gloo")


def test_tensor_device_and_layout_flags_match_torch():
    for dtype in ("float32", "int64", "uint8", "bool"):
        ours, theirs = tgrad.ones(2, dtype=getattr(tgrad, dtype)), torch.ones(2, dtype=getattr(torch, dtype))
        flags = [n for n in dir(theirs) if n.startswith("is_") and not callable(getattr(theirs, n))]
        assert len(flags) >= 15
        for name in flags:
            assert getattr(ours, name) == getattr(theirs, name), name
        for name in ("is_complex", "is_signed", "is_floating_point"):
            assert getattr(ours, name)() == getattr(theirs, name)(), name
        assert ours.is_same_size(tgrad.zeros(2)) and not ours.is_same_size(tgrad.zeros(3))


def test_thread_settings_are_torchs():
    old = tgrad.get_num_threads()
    assert old == torch.get_num_threads()
    tgrad.set_num_threads(1)
    assert tgrad.get_num_threads() == torch.get_num_threads() == 1
    tgrad.set_num_threads(old)
    assert tgrad.get_num_interop_threads() == torch.get_num_interop_threads()
    with pytest.raises(RuntimeError):
        tgrad.set_num_threads(0)


def test_onnx_export_says_why_not():
    assert tgrad.onnx.is_in_onnx_export() is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = gnn.DataParallel(gnn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="cannot export ONNX"):
        tgrad.onnx.export(m, (tgrad.randn(1, 2),), "m.onnx")


def test_default_device_is_set_and_read_as_torch():
    assert tgrad.get_default_device() == torch.get_default_device() == torch.device("cpu")
    try:
        tgrad.set_default_device("cpu")
        assert tgrad.get_default_device() == torch.device("cpu") and tgrad.ones(2).device.type == "cpu"
        if torch.cuda.is_available():
            tgrad.set_default_device("cuda")
            assert tgrad.zeros(2).is_cuda and tgrad.randn(2).is_cuda and tgrad.arange(3).is_cuda
    finally:
        tgrad.set_default_device(None)
    assert tgrad.get_default_device() == torch.device("cpu")
    with pytest.raises(RuntimeError) as theirs:
        torch.set_default_device("no_such_device")
    with pytest.raises(RuntimeError) as ours:
        tgrad.set_default_device("no_such_device")
    assert str(ours.value) == str(theirs.value)
