"""kernels.matmul against torch in float64 on the very same (already rounded) numbers.

Errors are bounded relative to ``|A| @ |B| + |bias|``, the scale a K-term dot product's rounding
error grows with, so near-cancelling entries are judged fairly. Odd sizes matter: the interpreter
does not fault on out-of-bounds loads, so a masking bug only shows as wrong numbers.
"""
import pytest
import torch
import torch.nn.functional as F
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from support.launches import record_launches
from tgrad.kernels import count_launches
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.linalg.matmul import _k_major, matmul

TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
ACTS = {None: lambda x: x, "relu": torch.relu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
        "tanh": torch.tanh, "sigmoid": torch.sigmoid}


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def check(got, a, b, bias=None, activation=None, tol_dtype=None):
    a64, b64 = a.double(), b.double()
    ref, scale = a64 @ b64, a64.abs() @ b64.abs()
    if bias is not None:
        ref, scale = ref + bias.double(), scale + bias.double().abs()
    ref = ACTS[activation](ref)
    tol = TOL[tol_dtype or got.dtype]
    assert got.shape == ref.shape
    err = (got.double() - ref).abs()
    # every activation here is at most 1.13-Lipschitz; 2x leaves room for the output rounding
    bound = 2 * tol * (scale + 1e-30)
    assert bool((err <= bound).all()), f"max err {err.max().item():.3g}, tol {tol}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (17, 33, 5), (1, 70, 3), (40, 1, 19), (33, 130, 17)])
def test_shapes(dtype, mkn):
    m, k, n = mkn
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype, seed=1)
    c = matmul(a, b)
    assert c.dtype == dtype and c.is_contiguous()
    check(c, a, b)


def test_large_needs_several_programs():
    a, b = rand(300, 150), rand(150, 200, seed=1)
    with count_launches() as launches:
        c = matmul(a, b)
    assert launches == {"matmul_kernel": 1}
    check(c, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_k_zero_gives_bias(dtype):
    a, b, bias = rand(5, 0, dtype=dtype), rand(0, 7, dtype=dtype), rand(7, dtype=dtype)
    assert torch.equal(matmul(a, b), torch.zeros(5, 7, dtype=dtype))
    assert torch.equal(matmul(a, b, bias=bias, activation="relu"), bias.clamp(min=0).expand(5, 7))


@pytest.mark.parametrize("shapes", [((0, 4), (4, 3)), ((3, 4), (4, 0)), ((0, 2, 3), (0, 3, 4))])
def test_empty_result_launches_nothing(shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    with count_launches() as launches:
        c = matmul(a, b)
    assert not launches
    assert c.shape == shapes[0][:-1] + shapes[1][-1:]


def test_batched_3d_several_tiles():
    a, b = rand(3, 150, 9), rand(3, 9, 140, seed=1)   # 2 x 2 tiles per batch entry
    check(matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_4d_broadcast(dtype):
    # b is shared across the leading batch dim (stride 0), a across the second one
    a = rand(2, 1, 19, 11, dtype=dtype).expand(2, 3, 19, 11)
    b = rand(1, 3, 11, 6, dtype=dtype, seed=1).expand(2, 3, 11, 6)
    assert b.stride(0) == 0 and a.stride(1) == 0
    check(matmul(a, b), a, b)


def test_transposed_and_sliced_operands():
    a_t = rand(22, 18).t()                          # (18, 22), column-major
    a_s = rand(18, 44, seed=1)[:, ::2]              # (18, 22), stride 2 along K
    b_t = rand(40, 66, seed=2)[::2, ::3].t()        # (22, 20), strides (3, 132)
    b = rand(22, 20, seed=3)
    for a, bb in [(a_t, b), (a_s, b_t), (a_t, b_t)]:
        assert not (a.is_contiguous() and bb.is_contiguous())
        check(matmul(a, bb), a, bb)


def test_batched_permuted_operands():
    a = rand(13, 5, 7).permute(1, 0, 2)       # (5, 13, 7): batch stride 7, row stride 35
    b = rand(5, 9, 7, seed=1).transpose(1, 2)  # (5, 7, 9): K is the innermost memory dim
    check(matmul(a, b), a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("activation", list(ACTS))
def test_bias_and_activation(dtype, activation):
    a, b = rand(23, 37, dtype=dtype), rand(37, 45, dtype=dtype, seed=1)
    bias = rand(90, dtype=dtype, seed=2)[::2]   # strided bias
    c = matmul(a, b, bias=bias, activation=activation)
    check(c, a, b, bias, activation)


def test_return_preact():
    a, b, bias = rand(3, 10, 20), rand(3, 20, 17, seed=1), rand(17, seed=2)
    out, pre = matmul(a, b, bias=bias, activation="gelu", return_preact=True)
    check(out, a, b, bias, "gelu")
    check(pre, a, b, bias)
    assert pre.is_contiguous() and pre.dtype == out.dtype


def test_out_strided_and_out_dtype():
    a, b = rand(2, 17, 9), rand(2, 9, 13, seed=1)
    out = torch.zeros(13, 2, 17).permute(1, 2, 0)   # (2, 17, 13), transposed storage
    assert matmul(a, b, out=out) is out
    check(out, a, b)
    h, hb = a.half(), b.half()
    c = matmul(h, hb, out_dtype=torch.float32)     # fp32 accumulation shows with no fp16 rounding
    assert c.dtype == torch.float32
    check(c, h, hb, tol_dtype=torch.float32)


def test_fp16_long_k_accumulates_in_fp32():
    # 4096 products of ~1: an fp16 running sum would stall at 2048 (its spacing becomes 2)
    a, b = torch.ones(2, 4096, dtype=torch.float16), torch.ones(4096, 3, dtype=torch.float16)
    assert torch.equal(matmul(a, b), torch.full((2, 3), 4096.0, dtype=torch.float16))


def test_allow_tf32_runs():
    a, b = rand(20, 30), rand(30, 10, seed=1)
    check(matmul(a, b, allow_tf32=True), a, b, tol_dtype=torch.bfloat16)


def test_bad_arguments():
    with pytest.raises(ValueError):
        matmul(rand(3, 4), rand(5, 6))
    with pytest.raises(ValueError):
        matmul(rand(2, 3, 4), rand(3, 4, 6))
    with pytest.raises(TypeError):
        matmul(rand(3, 4), rand(4, 5, dtype=torch.float64))
    with pytest.raises(ValueError):
        matmul(rand(3, 4), rand(4, 5), activation="swish")
    with pytest.raises(ValueError):
        matmul(rand(3, 4), rand(4, 5), bias=rand(4))


def test_large_cuda_products_take_the_fastest_measured_configuration(monkeypatch):
    """On CUDA, big products try a few tensor-core tilings once per problem and keep the fastest;
    during a graph capture nothing is timed (the timing runs would be captured)."""
    import tgrad.kernels.linalg.matmul as KM
    monkeypatch.setattr(KM, "_tuned", {})
    times = {(128, 256, 64, 8, 3): 3.0, (128, 128, 64, 8, 3): 1.0, (256, 128, 64, 8, 3): 2.0}
    measured = []

    def measure(config):
        measured.append(config)
        return times[config]
    candidates = list(times)
    assert KM._tuned_config("k", candidates, measure, capturing=True) == candidates[0] and not measured
    assert KM._tuned_config("k", candidates, measure, capturing=False) == (128, 128, 64, 8, 3)
    assert len(measured) == 3
    assert KM._tuned_config("k", candidates, measure, capturing=True) == (128, 128, 64, 8, 3)  # cached
    assert len(measured) == 3


def test_tensor_core_candidates_compile_for_sm90_with_pipelined_loads():
    """Each candidate tiling compiles for Hopper as the GPU would specialise a 4096^3 launch
    (16-aligned pointers and sizes, unit inner strides), with its loads multi-buffered in shared
    memory (stages x tile bytes) within the 227 KB an SM has."""
    import tgrad.kernels.linalg.matmul as KM
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        for dtype, tf32 in ((torch.float16, False), (torch.float32, True)):
            matmul(torch.randn(64, 64).to(dtype), torch.randn(64, 64).to(dtype), allow_tf32=tf32)
    finally:
        launch_observers.remove(observer)
    unit = ("stride_ak", "stride_bn", "stride_cn", "stride_pn", "stride_bias")
    aligned = ("a_ptr", "b_ptr", "c_ptr", "p_ptr", "bias_ptr", "rs_ptr", "M", "N", "K", "stride_am", "stride_bk",
               "stride_cm", "stride_pm")
    assert len(launches) == 2
    for kernel, signature, constants, _ in launches.values():
        size = 2 if signature["a_ptr"] == "*fp16" else 4
        names = list(signature)
        signature = dict(signature, **{u: "constexpr" for u in unit})
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in aligned}
        for bm, bn, bk, warps, stages in KM._TENSOR_CORE_CANDIDATES[size]:
            consts = dict(constants, **{u: 1 for u in unit}, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                          ONE_TILE=False, ONE_K=False, EVEN_M=True, EVEN_N=True, EVEN_K=True)
            compiled = triton.compile(ASTSource(kernel, signature, consts, attrs), target=GPUTarget("cuda", 90, 32),
                                      options=dict(num_warps=warps, num_stages=stages))
            assert compiled.metadata.shared == stages * (bm * bk + bk * bn) * size <= 227 * 1024
            assert "wgmma" in compiled.asm["ptx"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_tuned_cuda_product_matches_torch(monkeypatch):
    import tgrad.kernels.linalg.matmul as KM
    monkeypatch.setattr(KM, "TUNE_MIN_FLOPS", 0)
    monkeypatch.setattr(KM, "_tuned", {})
    g = torch.Generator().manual_seed(5)
    a64, b64 = torch.randn(384, 256, generator=g, dtype=torch.float64), torch.randn(256, 512, generator=g, dtype=torch.float64)
    a, b = a64.half().cuda(), b64.half().cuda()
    with count_launches() as launches:
        got = matmul(a, b)
    assert sum(launches.values()) == 1 and len(KM._tuned) == 1  # timing runs are not the caller's launches
    torch.testing.assert_close(got.double().cpu(), a.double().cpu() @ b.double().cpu(), rtol=2e-2, atol=2e-2)


def test_k_major_copies_only_the_operands_whose_k_is_not_contiguous():
    # tf32 candidates on a GPU stage operands K-major (Hopper's wgmma reads tf32 no other way)
    a = torch.randn(5, 7, dtype=torch.float64)
    b = torch.randn(7, 3, dtype=torch.float64)
    a_k, b_k = _k_major(a, b)
    assert a_k is a and a_k.stride(-1) == 1  # already K-major: no copy
    assert b_k.stride(-2) == 1 and torch.equal(b_k, b)
    a_t = torch.randn(7, 5, dtype=torch.float64).t()  # (5, 7), K strided
    b_t = torch.randn(3, 7, dtype=torch.float64).t()  # (7, 3), already K-major
    a_k, b_k = _k_major(a_t, b_t)
    assert a_k.stride(-1) == 1 and torch.equal(a_k, a_t) and b_k is b_t
    torch.testing.assert_close(matmul(a_k, b_k), a_t @ b_t)
