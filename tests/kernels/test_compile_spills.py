"""Register pressure of GPU launches, compiled for sm_90 (and sm_80) on the CPU: each test compiles
the configurations a change was made for (``as_cuda()`` launches seen by a ``CompileObserver``, or
``compile_launch`` of a planned one) and asserts no spill (local memory or stack frame beyond the
arrays the code declares), so a tile, warp count or loop that brings a spill back fails here.
docs/gpu.md keeps the before/after figures."""
import pytest
import torch

import tgrad
import tgrad.kernels
from support.gpu_shapes import planned
from tgrad.kernels.linalg import matmul as KM
from tgrad.kernels.runtime import cuda_compile
from tgrad.kernels.runtime.cuda_compile import compile_launch, resource_usage
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.runtime.target import as_cuda


def _matmul_reference(a, b, bias, activation, dtype):
    """``act(a @ b + bias)`` in float64 on the same rounded operands, rounded to ``dtype``."""
    z = a.double() @ b.double() + bias.double()
    act = {"gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "tanh": torch.tanh}[activation]
    return act(z).to(dtype)


def test_integer_pow_keeps_its_squaring_loop_in_registers():
    """Unrolled 64 times, int64 a ** b kept 128 registers and spilled 376-384 B a thread on sm_90 (two
    64-bit lanes a thread over 16 warps); as a loop it takes ~40 registers."""
    observer = cuda_compile.CompileObserver(archs=(90,), usage=True)
    launch_observers.append(observer)
    try:
        with as_cuda():
            a, b = tgrad.arange(-3, 3, dtype=tgrad.int32).reshape(2, 3), tgrad.arange(3, dtype=tgrad.int64)
            a **= b
            assert a.tolist() == (torch.arange(-3, 3, dtype=torch.int32).reshape(2, 3) ** torch.arange(3)).tolist()
            tgrad.arange(-3, 3, dtype=tgrad.int64) ** tgrad.arange(6, dtype=tgrad.int64)
    finally:
        launch_observers.remove(observer)
    assert not observer.failures
    records = [r for r in observer.compiled.values() if r["kernel"] == "pointwise_kernel"]
    assert records and not [r for r in records if r["spill_bytes"]], records


def test_pointwise_special_functions_keep_their_series_in_registers():
    """At eight lanes a thread lgamma's gradient, digamma and polygamma spilled up to 200 B a thread
    on sm_90; four 32-bit or two 64-bit lanes keep them in registers. fp64 sin keeps libdevice's
    40-byte argument-reduction array, which is the code's own, not a spill."""
    observer = cuda_compile.CompileObserver(archs=(90,), usage=True)
    launch_observers.append(observer)
    try:
        with as_cuda():
            for dtype in (tgrad.float32, tgrad.float64):
                x = (tgrad.rand(3000, dtype=dtype) + 0.5).requires_grad_()
                (x.lgamma().sum() + tgrad.polygamma(2, x).sum() + x.sin().sum()).backward()
    finally:
        launch_observers.remove(observer)
    assert not observer.failures
    records = [r for r in observer.compiled.values() if r["kernel"] == "pointwise_kernel"]
    assert len(records) >= 12 and not [r for r in records if r["spill_bytes"]], records
    assert max(r["local_arrays"] for r in records) == 40


def test_matmul_activation_epilogues_of_fma_tiles_spill_nothing():
    """fp32 (IEEE) and fp64 tiles hold 32 accumulators a thread over 4 warps; an fp64 tanh on each
    spilled 1 KB (fp32 tanh) and 1.5 KB (fp64 gelu_tanh). At 16 (64 x 64 over 8 warps) fp32 still
    spilled 24-48 B where every tile is masked (1000^3: tanh on sm_90 and sm_80, relu, gelu and
    gelu_tanh on sm_80): with an activation both take 32 x 64 tiles over 8 warps, 8 a thread."""
    observer = cuda_compile.CompileObserver(archs=(90, 80), usage=True)
    launch_observers.append(observer)
    try:
        with as_cuda():
            for dtype in (torch.float32, torch.float64):
                g = torch.Generator().manual_seed(5)
                a, b, bias = (torch.randn(*s, generator=g, dtype=dtype) for s in ((200, 64), (64, 200), (200,)))
                for activation in ("tanh", "gelu_tanh"):
                    got = KM.matmul(a, b, bias=bias, activation=activation)
                    want = _matmul_reference(a, b, bias, activation, dtype)
                    tol = 1e-5 if dtype == torch.float32 else 1e-12
                    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    finally:
        launch_observers.remove(observer)
    assert len(observer.compiled) == 8
    with planned(observer):
        a = torch.empty(1000, 1000)
        for activation in ("relu", "gelu", "gelu_tanh", "tanh"):
            KM.matmul(a, a, bias=a[0], activation=activation)
    records = list(observer.compiled.values())
    assert len(records) == 16 and not observer.failures
    assert not [r for r in records if r["spill_bytes"]], records


@pytest.mark.parametrize("dtype, tf32", [(torch.float16, False), (torch.bfloat16, False), (torch.float32, True)])
def test_matmul_heavy_epilogues_on_tensor_cores_spill_nothing_and_match_torch(dtype, tf32):
    """128 x 128 tensor-core tiles over 8 warps hold 64 fp32 accumulators a thread: beside
    gelu_tanh's epilogue they spilled 1.8 KB on sm_90, beside tanh's (computed in fp64) 3.7 KB;
    the 128 x 256 tile a large product tries first, 2.5 and 6.2 KB. With these activations the
    tiles are 128 x 64 and 64 x 64 (or their transposes, timed on a GPU for large products).
    Interpreted as configured for a GPU at odd sizes (edge tiles masked), the products match torch;
    compiled for sm_90 and sm_80, none spills."""
    observer = cuda_compile.CompileObserver(archs=(90, 80), usage=True)
    g = torch.Generator().manual_seed(3)
    a, b, bias = (torch.randn(*s, generator=g).to(dtype) for s in ((131, 37), (37, 67), (67,)))
    launch_observers.append(observer)
    try:
        with as_cuda():
            for activation in ("gelu_tanh", "tanh"):
                got = KM.matmul(a, b, bias=bias, activation=activation, allow_tf32=tf32)
                want = _matmul_reference(a, b, bias, activation, dtype)
                tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5}[dtype]
                torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    finally:
        launch_observers.remove(observer)
    assert len(observer.compiled) == 4 and not observer.failures
    large = []  # a product past TUNE_MIN_FLOPS, planned only: the tile it launches untuned
    with planned(lambda kernel, grid, args, meta: large.append((kernel, args, dict(meta)))):
        big = torch.empty(4096, 4096, dtype=dtype)
        for activation in ("gelu_tanh", "tanh"):
            KM.matmul(big, big, bias=big[0], activation=activation, allow_tf32=tf32)
    assert [(m["BLOCK_M"], m["BLOCK_N"]) for _, _, m in large] == [(128, 64), (64, 64)]
    for kernel, args, meta in large:  # and each tile a GPU would time for it
        config = tuple(meta[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"))
        for bm, bn, *_ in KM._epilogue_candidates(config):
            observer(kernel, (1,), args, dict(meta, BLOCK_M=bm, BLOCK_N=bn))
    spills = [r for r in observer.compiled.values() if r["spill_bytes"]]
    assert len(observer.compiled) == 10 and not observer.failures and not spills, spills


def test_bf16_matmul_compiles_its_bf16_tiles_onto_the_tensor_cores():
    """Interpreted, bf16 tiles reach ``tl.dot`` as they are (the interpreter widens a dot's bf16
    operands itself, kernels/runtime/interpreter.py): the kernel compiled ``as_cuda()`` is the one a
    GPU compiles. It was given bf16 tiles upcast to fp32 for the interpreter's sake (UPCAST), which
    compiled as fp32 FMAs: 255 registers and 928 B of spill on sm_90 (2,424 B on sm_80) at 128 x 128."""
    launched = []
    # a copy of meta: the CPU executor pops the compile-only options (num_warps) from the launch's own
    launch_observers.append(lambda kernel, grid, args, meta: launched.append((kernel, args, dict(meta))))
    g = torch.Generator().manual_seed(4)
    a, b = (torch.randn(*s, generator=g).to(torch.bfloat16) for s in ((150, 70), (70, 140)))
    try:
        with as_cuda():
            got = KM.matmul(a, b)
    finally:
        launch_observers.pop()
    torch.testing.assert_close(got, (a.double() @ b.double()).to(torch.bfloat16), rtol=1.6e-2, atol=1e-2)
    ((kernel, args, meta),) = launched
    assert (meta["BLOCK_M"], meta["BLOCK_N"]) == (128, 128)
    for arch, mma in ((90, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"),
                      (80, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")):
        compiled = compile_launch(kernel, args, meta, arch)
        usage = resource_usage(compiled)
        assert mma in compiled.asm["ptx"] and usage["spill_bytes"] == 0, (arch, usage)


def test_jacobi_sweeps_of_32_columns_spill_at_most_a_word():
    """A sweep program holds the whole matrix and V: at 4 warps a 32-column fp64 SVD sweep spilled
    64 B a thread on sm_90; over 8 warps nothing (eigh's later sweeps keep 8 B on sm_90)."""
    observer = cuda_compile.CompileObserver(archs=(90, 80), usage=True)
    launch_observers.append(observer)
    try:
        with as_cuda():
            for dtype in (tgrad.float32, tgrad.float64):
                a = tgrad.randn(20, 17, dtype=dtype)
                tgrad.linalg.svd(a), tgrad.linalg.eigh(a.t() @ a)
    finally:
        launch_observers.remove(observer)
    sweeps = [r for r in observer.compiled.values() if r["kernel"].endswith("_sweep_kernel")]
    assert len(sweeps) >= 8 and not observer.failures
    assert not [r for r in sweeps if r["spill_bytes"] > (8 if r["kernel"] == "eigh_sweep_kernel" else 0)], sweeps


def test_multinomial_of_many_samples_compiles_for_sm90_without_spilling():
    """8192 samples: an uncapped sample block spilled 35 KB of registers and took 253 s to compile;
    in GPU blocks the search tile stays (16, 256) whatever the count."""
    launched = []
    # a copy of meta: the CPU executor pops the compile-only options (num_warps) from the launch's own
    launch_observers.append(lambda kernel, grid, args, meta: launched.append((kernel, args, dict(meta))))
    try:
        with as_cuda():
            tgrad.multinomial(tgrad.rand(1, 300), 8192, replacement=True)
    finally:
        launch_observers.pop()
    ((kernel, args, meta),) = [launch for launch in launched if launch[0].__name__ == "multinomial_kernel"]
    assert meta["BLOCK_K"] == 16 and meta["BLOCK_C"] == 256
    usage = resource_usage(compile_launch(kernel, args, meta, 90))
    assert usage["spill_bytes"] == 0, usage
