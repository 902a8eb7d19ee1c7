"""tgrad.accelerator, backends flags, nn.parallel and onnx, against what torch answers on this machine."""
import warnings

import pytest
import torch

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
    with pytest.raises(AttributeError, match="no DistributedDataParallel"):
        gnn.parallel.DistributedDataParallel


def test_onnx_export_says_why_not():
    assert tgrad.onnx.is_in_onnx_export() is False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = gnn.DataParallel(gnn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="cannot export ONNX"):
        tgrad.onnx.export(m, (tgrad.randn(1, 2),), "m.onnx")
