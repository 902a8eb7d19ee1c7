"""The core ops on a CUDA GPU, compiled: forward and backward against PyTorch float64 on the CPU,
in float32 (IEEE, no TF32), float64, float16 and bfloat16 (CUDA only), each with its tolerance.

CI has no GPU, so this whole file skips there; it runs on a GPU machine (benchmarks/gpu_check.py
runs it). The CPU suite checks the same ops in depth; this file checks that the compiled path
agrees, on odd sizes that do not divide the GPU block sizes and on non-contiguous inputs."""
import pytest
import torch

import tgrad
import tgrad.nn.functional as TF
from support.reference import TOL, uniform64

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

UNARY = {
    "exp": lambda m, x: m.exp(x), "log": lambda m, x: m.log(x.abs() + 0.5), "sqrt": lambda m, x: m.sqrt(x.abs() + 0.1),
    "tanh": lambda m, x: m.tanh(x), "sigmoid": lambda m, x: m.sigmoid(x), "relu": lambda m, x: m.relu(x),
    "sin": lambda m, x: m.sin(x), "abs": lambda m, x: m.abs(x), "pow2.5": lambda m, x: (x.abs() + 0.1) ** 2.5,
    "clamp": lambda m, x: m.clamp(x, -0.5, 0.7), "reciprocal": lambda m, x: m.reciprocal(x.abs() + 0.5),
}
NN = {"gelu": lambda F, x: F.gelu(x), "silu": lambda F, x: F.silu(x), "softplus": lambda F, x: F.softplus(x),
      "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1), "elu": lambda F, x: F.elu(x)}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / (b.abs() + 0.5), "maximum": lambda a, b: (a > b).float() * 0 + a.maximum(b)}
REDUCE = {"sum": lambda x: x.sum(1), "mean": lambda x: x.mean(0), "amax": lambda x: x.amax(1),
          "var": lambda x: x.var(1), "logsumexp": lambda x: x.logsumexp(1), "softmax": lambda x: x.softmax(-1),
          "log_softmax": lambda x: x.log_softmax(0), "norm": lambda x: x.norm()}


def _pair(shape, dtype, seed=0, transpose=False):
    """(tgrad CUDA leaf, torch float64 CPU leaf) on the same numbers; ``transpose`` makes the CUDA
    input a non-contiguous view (.cuda() keeps the strides)."""
    data = uniform64(shape, seed=seed).to(dtype)
    if transpose:
        data = data.t()
    x = tgrad.from_torch(data.cuda()).requires_grad_()
    return x, data.to(torch.float64).requires_grad_()


def _close(got, ref, dtype, scale=1.0, own=None):
    """``got`` matches the float64 reference within ``dtype``'s tolerance. ``own`` is PyTorch's own
    result in ``dtype`` on the GPU: where it too misses the reference beyond the tolerance, the
    element is ill-conditioned in that precision (a cancelling sum of rounded terms) and ``got`` is
    held to PyTorch's own value there instead (the fuzzers' rule, docs/testing.md)."""
    rtol, atol = TOL[dtype]
    rtol, atol = rtol * scale, atol * scale
    assert got.device.type == "cuda"
    expected = ref.detach().double()
    if own is not None:
        own = own.detach().double().cpu()
        ill = (own - expected).abs() > atol + rtol * expected.abs()
        expected = torch.where(ill, own, expected)
    torch.testing.assert_close(got.torch().double().cpu(), expected, rtol=rtol, atol=atol, equal_nan=True)


def _check(fn_tgrad, fn_torch, inputs, refs, dtype, scale=1.0, grad_scale=None):
    low = dtype in (torch.float16, torch.bfloat16)  # PyTorch's own GPU result decides ill-conditioning
    owns = [r.detach().to(dtype).cuda().requires_grad_() for r in refs] if low else []
    y, yr = fn_tgrad(*inputs), fn_torch(*refs)
    yo = fn_torch(*owns) if low else None
    _close(y, yr, dtype, scale, yo)
    g = uniform64(tuple(y.shape), seed=7).to(dtype)
    y.backward(tgrad.from_torch(g.cuda()))
    yr.backward(g.double())
    if low:
        yo.backward(g.cuda())
    for i, (x, r) in enumerate(zip(inputs, refs)):
        _close(x.grad, r.grad, dtype, grad_scale or scale, owns[i].grad if low else None)


@pytest.fixture(autouse=True)
def _no_tf32():
    old = tgrad.backends.cuda.matmul.allow_tf32
    tgrad.backends.cuda.matmul.allow_tf32 = False
    yield
    tgrad.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_cuda(name, dtype):
    x, r = _pair((37, 1029), dtype, transpose=True)
    _check(lambda a: UNARY[name](tgrad, a), lambda a: UNARY[name](torch, a), [x], [r], dtype, scale=4.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(NN))
def test_activations_on_cuda(name, dtype):
    x, r = _pair((3, 1031), dtype)
    _check(lambda a: NN[name](TF, a), lambda a: NN[name](torch.nn.functional, a), [x], [r], dtype, scale=4.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast_on_cuda(name, dtype):
    a, ra = _pair((33, 1, 517), dtype, seed=1)
    b, rb = _pair((9, 517), dtype, seed=2)
    # each gradient sums 9 or 33 terms over the broadcast dims, every term rounded to ``dtype``
    # first (PyTorch's too): the error grows with the count, as a matmul's with K
    _check(BINARY[name], BINARY[name], [a, b], [ra, rb], dtype, scale=4.0, grad_scale=16.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reductions_on_cuda(name, dtype):
    x, r = _pair((129, 3001), dtype, seed=3)
    _check(REDUCE[name], REDUCE[name], [x], [r], dtype, scale=16.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_on_cuda(dtype):
    a, ra = _pair((2, 1, 67, 129), dtype, seed=4)
    b, rb = _pair((3, 129, 33), dtype, seed=5)
    # the accumulated rounding grows with K: scale the tolerance accordingly
    _check(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], [ra, rb], dtype, scale=64.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mlp_step_on_cuda(dtype):
    x, rx = _pair((64, 100), dtype, seed=6)
    w, rw = _pair((50, 100), dtype, seed=8)
    t = torch.randint(0, 50, (64,))
    loss = TF.cross_entropy(TF.linear(x, w).relu(), tgrad.from_torch(t.cuda()))
    ref = torch.nn.functional.cross_entropy(torch.nn.functional.linear(rx, rw).relu(), t)
    _close(loss, ref, dtype, scale=16.0)
    loss.backward()
    ref.backward()
    _close(w.grad, rw.grad, dtype, scale=16.0)


def test_mixing_devices_raises_pytorch_text():
    a = tgrad.ones(3, device="cuda")
    b = tgrad.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + b


def test_same_seed_same_numbers_on_cpu_and_cuda():
    tgrad.manual_seed(123)
    cpu = tgrad.rand(1000)
    tgrad.manual_seed(123)
    gpu = tgrad.rand(1000, device="cuda")
    torch.testing.assert_close(cpu.torch(), gpu.torch().cpu())
