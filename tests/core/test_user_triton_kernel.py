"""A user's own Triton kernel inside a custom ``autograd.Function``: the swish example of
train_examples/custom_triton_function.py against PyTorch (values, gradients on odd layouts,
gradcheck, the fused backward against the recorded one, bad input, compiling for CUDA, training)."""
import importlib.util
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
from support.reference import assert_close, make_pair, raises, to_torch

ROOT = Path(__file__).resolve().parents[2]


def _load_example():
    spec = importlib.util.spec_from_file_location("custom_triton_function",
                                                  ROOT / "train_examples" / "custom_triton_function.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = _load_example()


def swish_reference(x, beta):
    return x * torch.sigmoid(beta * x)


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
@pytest.mark.parametrize("shape, layout", [((37,), "contiguous"), ((5, 7), "transposed"), ((9, 6), "stepped"),
                                           ((), "contiguous"), ((0, 3), "contiguous")])
def test_swish_kernel_forward_backward_vs_torch(device, dtype, shape, layout):
    x, xr = make_pair(shape, dtype, seed=7)
    beta, betar = make_pair((), dtype, 0.5, 1.5, seed=8)
    x, beta = x.to(device).detach().requires_grad_(), beta.to(device).detach().requires_grad_()
    if layout == "transposed":
        xin, xrin = x.t(), xr.t()
    elif layout == "stepped":
        xin, xrin = x[::2, 1::2], xr[::2, 1::2]
    else:
        xin, xrin = x, xr
    y, yr = EXAMPLE.swish(xin, beta), swish_reference(xrin, betar)
    assert y.grad_fn.name() == "SwishBackward" and y.device.type == device
    assert_close(y, yr, dtype)
    g, gr = make_pair(tuple(y.shape), dtype, -1.0, 1.0, requires_grad=False, seed=9)
    y.backward(g.to(device))
    yr.backward(gr)
    assert_close(x.grad, xr.grad, dtype)
    assert_close(beta.grad, betar.grad, dtype, rtol=1e-4 if dtype is tgrad.float32 else None)


def test_swish_kernel_float16(device):
    x, xr = make_pair((33,), tgrad.float16, seed=10)
    beta = tgrad.tensor(1.25, dtype=tgrad.float16, device=device, requires_grad=True)
    y = EXAMPLE.swish(x.to(device).detach().requires_grad_(), beta)
    assert y.dtype is tgrad.float16
    assert_close(y, swish_reference(xr, torch.tensor(1.25, dtype=torch.float64)), tgrad.float16)


def test_swish_gradcheck_and_gradgradcheck():
    x = tgrad.tensor(to_torch(make_pair((3, 4), tgrad.float64, seed=11)[0]).numpy(), requires_grad=True)
    beta = tgrad.tensor(0.8, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(EXAMPLE.Swish.apply, (x, beta))
    assert tgrad.autograd.gradgradcheck(EXAMPLE.Swish.apply, (x, beta))


def test_swish_fused_backward_equals_the_create_graph_path():
    x, _ = make_pair((6, 5), tgrad.float64, seed=12)
    beta = tgrad.tensor(1.3, dtype=tgrad.float64, requires_grad=True)
    g, _ = make_pair((6, 5), tgrad.float64, seed=13, requires_grad=False)
    fused = tgrad.autograd.grad(EXAMPLE.swish(x, beta), (x, beta), g)
    recorded = tgrad.autograd.grad(EXAMPLE.swish(x, beta), (x, beta), g, create_graph=True)
    assert recorded[0].grad_fn is not None and fused[0].grad_fn is None
    for a, b in zip(fused, recorded):
        assert_close(a, to_torch(b))


def test_swish_bad_beta():
    x = tgrad.ones(3)
    with raises(ValueError, "Swish: beta must have one element, got shape (2,)"):
        EXAMPLE.swish(x, tgrad.ones(2))
    with pytest.raises(TypeError, match="beta must match x's dtype"):
        EXAMPLE.swish(x, tgrad.ones((), dtype=tgrad.float64))


def test_swish_kernels_compile_for_cuda():
    """CI has no GPU: compile both kernels for sm_90 (Triton's bundled ptxas), so code only the
    interpreter accepts is caught here."""
    target = GPUTarget("cuda", 90, 32)
    for dtype, compute in (("fp32", EXAMPLE.tl.float32), ("fp64", EXAMPLE.tl.float64), ("fp16", EXAMPLE.tl.float32)):
        fwd = ASTSource(EXAMPLE.swish_fwd_kernel, {"x_ptr": f"*{dtype}", "beta_ptr": f"*{dtype}", "y_ptr": f"*{dtype}",
                                                   "numel": "i32", "COMPUTE": "constexpr", "BLOCK": "constexpr"},
                        {"COMPUTE": compute, "BLOCK": 1024})
        part = "fp64" if dtype == "fp64" else "fp32"
        bwd = ASTSource(EXAMPLE.swish_bwd_kernel, {"x_ptr": f"*{dtype}", "beta_ptr": f"*{dtype}", "g_ptr": f"*{dtype}",
                                                   "dx_ptr": f"*{dtype}", "dbeta_part_ptr": f"*{part}",
                                                   "numel": "i32", "COMPUTE": "constexpr", "BLOCK": "constexpr"},
                        {"COMPUTE": compute, "BLOCK": 1024})
        for src in (fwd, bwd):
            assert triton.compile(src, target=target).asm["cubin"]


def test_swish_example_trains(tmp_path):
    metrics = EXAMPLE.main(["--quick", "--no-progress", "--out", str(tmp_path)])
    assert metrics["loss"] < 0.1 * metrics["first_loss"]
    assert metrics["beta"] != 1.0  # beta is learned through the kernel's own reduction
    assert Path(metrics["png"]).exists()
