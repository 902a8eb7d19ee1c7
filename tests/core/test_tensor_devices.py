"""Devices and dtypes of tensors against PyTorch: CUDA on a CPU-only machine, unknown devices, bfloat16
and float16 on the CPU, and (with a GPU) CUDA factories, ops, mixed devices and bfloat16.

Every case builds the same thing with ``torch`` and with ``tgrad`` and compares values, dtypes and
text (``torch.`` read as ``tgrad.``). Values that tgrad computes come from Triton kernels; torch is
only the reference here."""
import re

import pytest
import torch

import tgrad
from support.exact import same

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")


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
