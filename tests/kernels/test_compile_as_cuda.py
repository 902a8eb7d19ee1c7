"""Launches configured as on a GPU (``as_cuda()``: the GPU-side block sizes, tiles, warps, splits
and paths, then interpreted) and compiled for sm_90 and sm_80 the way a GPU launch binds them
(``kernels/cuda_compile.py``), once per kernel, dtypes and path. The workloads are
tests/support/workloads.py's and one more for what they do not reach; the test fails on
any kernel tgrad defines that none of them launches, so a new kernel is covered once a workload
reaches it, and says which. The whole suite runs this way with ``pytest tests --as-cuda
--compile-for 90,80 --compile-coverage`` (docs/gpu.md: 18 minutes here)."""
import ast
import textwrap
from pathlib import Path

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

import tgrad
import tgrad.kernels
import tgrad.nn.functional as F
from support.compile_report_table import families, markdown, rows
from support.launches import arg_type
from support.workloads import core_workload, resample_workload, sequence_workload
from tgrad.kernels import attention as KA
from tgrad.kernels import attention_whole as KW
from tgrad.kernels.optim import step as KO
from tgrad.kernels.optim.updates import UPDATES
from tgrad.kernels.runtime import cuda_compile
from tgrad.kernels.runtime.launch import launch, launch_observers
from tgrad.kernels.runtime.target import as_cuda, target
from tgrad.kernels.spatial.conv import conv2d_forward


def _jit_functions():
    """Every JIT function the modules of tgrad.kernels define or import, by name."""
    found = {}
    root = Path(tgrad.kernels.__file__).parent
    for path in root.rglob("*.py"):  # the kernels live in the families' modules, never in an __init__
        if path.name == "__init__.py":
            continue
        module = __import__(".".join(("tgrad.kernels",) + path.relative_to(root).with_suffix("").parts), fromlist=["_"])
        found.update((name, value) for name, value in vars(module).items() if isinstance(value, JITFunction))
    return found


def _kernels():
    """Every launchable kernel of tgrad.kernels: its modules' JIT functions named *_kernel."""
    return {name for name in _jit_functions() if name.endswith("_kernel")}


def _training_workload():
    """What the compile tests' workloads do not reach: a small CNN's training step with every
    optimizer family, clipping, the non-deterministic embedding backward, sort and nonzero past one
    block, linear algebra, a many-program cross-entropy, and a captured step with a capturable
    optimizer and dropout (its random state and step counters set by launches)."""
    nn = tgrad.nn
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.AvgPool2d(1),
                          nn.Flatten(), nn.Dropout(0.5), nn.Linear(16, 5), nn.LayerNorm(5))
    emb = nn.Embedding(10, 5)
    x, idx = tgrad.randn(4, 3, 6, 6), tgrad.tensor([1, 2, 9, 2])
    out = model(x) + emb(idx)
    (F.cross_entropy(out, idx % 5) + F.mse_loss(out, F.one_hot(idx % 5, 5).float())).backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    nn.utils.clip_grad_value_(model.parameters(), 0.1)
    params = list(model.parameters())
    for opt in (tgrad.optim.SGD(params, lr=0.1, momentum=0.9), tgrad.optim.Adam(params),
                tgrad.optim.NAdam(params), tgrad.optim.Rprop(params)):
        opt.step()
    tgrad.use_deterministic_algorithms(False)
    try:
        emb(idx).sum().backward()
    finally:
        tgrad.use_deterministic_algorithms(True)
    v = tgrad.randn(5000)
    v.sort(), v.nonzero(), v.cumsum(0), tgrad.full((3,), 2.0)
    a = tgrad.randn(4, 4)
    low = tgrad.linalg.cholesky(a @ a.t() + 4 * tgrad.eye(4))
    tgrad.linalg.solve_triangular(low, a, upper=False)
    tgrad.linalg.solve(a, low, left=False), tgrad.linalg.lu_solve(*tgrad.linalg.lu_factor(a), low)
    tgrad.linalg.eigh(a), tgrad.linalg.svdvals(a), tgrad.linalg.qr(a)
    logits = tgrad.randn(512, 100, requires_grad=True)
    F.cross_entropy(logits, tgrad.randint(0, 100, (512,))).backward()
    w = tgrad.randn(8, 3, requires_grad=True)
    opt = tgrad.optim.Adam([w], capturable=True)

    def step():
        opt.zero_grad()
        (F.dropout(w, 0.5) ** 2).sum().backward()
        opt.step()
    step()
    step()
    graph = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(graph):
        step()
    graph.replay()
    # the CPU's optimizer launch (the group's tensors as tuple arguments), launched directly:
    # configured as a GPU, a step takes the pointer table; plain and capturable
    p, g, m, v = (torch.rand(5) for _ in range(4))
    for capturable in (False, True):
        meta = {"UPDATE": UPDATES["adam"], "OPTIONS": 0, "N_HYPER": 8 if capturable else 6, "N_SCALARS": 2,
                "S0": True, "S1": True, "S2": False, "FLAG": False, "MAXIMIZE": False, "CAPTURABLE": capturable,
                "COMPUTE": triton.language.float32}
        KO.launch_params([[p, g, m, v, None]], [torch.zeros(())] if capturable else None,
                         None if capturable else [(0.1, 1.0)], None, (0.1, 0.999, 0.001, 1e-8, 0.0, 1.0, 0.01, 0.9), meta)
    # the interpreter's whole-problem attention, launched directly: configured as a GPU, SDPA takes the blocks
    q, k, v, do = (torch.randn(2, 2, 5, 4) for _ in range(4))
    o, lse, dq, dk, dv = torch.empty(2, 2, 5, 4), torch.empty(2, 2, 5), *(torch.empty(2, 2, 5, 4) for _ in range(3))
    no_dropout = (0, 0, o, 0, 0, False, False)
    KW.whole_forward(q, k, v, q, (0, 0, 0, 0), o, lse, no_dropout, 0, KA.MASK_NONE, True, triton.language.float32)
    KW.whole_backward(q, k, v, q, (0, 0, 0, 0), o, lse, do, dq, dk, dv, no_dropout, 0, KA.MASK_NONE, True,
                      triton.language.float32)


def test_every_kernel_compiles_for_sm90_and_sm80_as_a_gpu_launches_it():
    observer = cuda_compile.CompileObserver(archs=(90, 80), coverage=True)
    launch_observers.append(observer)
    try:
        with as_cuda():
            core_workload()
            resample_workload()
            sequence_workload()
            _training_workload()
    finally:
        launch_observers.remove(observer)
    assert not observer.failures, "\n".join(f"{k} sm_{a}: {m}" for _, k, a, m in observer.failures)
    compiled = {(r["kernel"], r["arch"]) for r in observer.compiled.values()}
    for arch in (90, 80):
        missing = _kernels() - {k for k, a in compiled if a == arch}
        assert not missing, f"kernels no workload launches (add them to one): {sorted(missing)}"


def test_jit_functions_read_no_plain_python_globals():
    """A GPU compile lets a JIT function read a module global only if it is a ``tl.constexpr`` (or a
    module, function or dtype); the interpreter reads any, so a plain float passed every CPU test
    and failed every GPU compile of lgamma, digamma and polygamma (their PI, MACHEP, ZETA_SUMMED)."""
    plain = []
    for name, fn in _jit_functions().items():
        tree = ast.parse(textwrap.dedent(fn.src))
        local = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id not in local:
                value = fn.fn.__globals__.get(node.id)
                if isinstance(value, (bool, int, float, str, tuple, list, dict)):
                    plain.append(f"{name} reads {node.id} = {value!r}")
    assert not plain, "wrap these in tl.constexpr:\n" + "\n".join(sorted(set(plain)))


def test_the_compile_report_table_groups_kernels_by_family():
    report = {"pointwise_kernel sm_90": dict(configurations=3, failures=1, registers=200, spill_bytes=40, shared=2048),
              "pointwise_kernel sm_80": dict(configurations=2, failures=0, registers=180, spill_bytes=0, shared=1024),
              "loss_fwd_kernel sm_90": dict(configurations=1, failures=0, registers=60, spill_bytes=0, shared=0),
              "_probe_kernel sm_90": dict(configurations=4, failures=0, registers=32, spill_bytes=0, shared=0)}
    lines = markdown(rows(report, families())).splitlines()
    assert lines[2:] == ["| losses.elementwise | 1 | 1 | 0 | 0 | 60 / 0 | 0 / 0 | 0 / 0 |",
                         "| pointwise | 1 | 3 | 2 | 1 | 200 / 180 | 40 / 0 | 2 / 1 |",
                         "| tests' own | 1 | 4 | 0 | 0 | 32 / 0 | 0 / 0 | 0 / 0 |"]
    other_part = {"pointwise_kernel sm_90": dict(configurations=2, failures=0, registers=210, spill_bytes=8, shared=0)}
    lines = markdown(rows([report, other_part], families())).splitlines()
    assert lines[3] == "| pointwise | 1 | 5 | 2 | 1 | 210 / 180 | 40 / 0 | 2 / 1 |"


def test_the_compile_report_names_what_launched_its_worst_spill():
    observer = cuda_compile.CompileObserver(archs=(90,), usage=True)
    for i, (context, spill) in enumerate([("test_a", 0), ("test_b", 384), ("test_c", 48)]):
        observer.compiled[i] = dict(kernel="pointwise_kernel", arch=90, context=context,
                                    registers=200, spill_bytes=spill, shared=0)
    observer.compiled["other"] = dict(kernel="reduce_kernel", arch=90, context="test_d", registers=60,
                                      spill_bytes=0, shared=0)
    report = cuda_compile.compile_report(observer)
    assert report[("pointwise_kernel", 90)]["first"] == "test_a"
    assert report[("pointwise_kernel", 90)]["most_spill"] == "test_b"
    assert report[("pointwise_kernel", 90)]["spill_bytes"] == 384
    assert "most_spill" not in report[("reduce_kernel", 90)]


def test_as_cuda_configures_cpu_launches_as_a_gpu_and_nothing_else():
    cpu, meta = torch.device("cpu"), torch.device("meta")
    outside = target(cpu)  # "cuda" when the whole run is --as-cuda
    with as_cuda():
        assert target(cpu) == "cuda" and target(meta) == "meta"
        with as_cuda():
            assert target(cpu) == "cuda"
        assert target(cpu) == "cuda"
    assert target(cpu) == outside


def test_a_launch_is_bound_as_a_gpu_binds_it():
    """An int argument equal to 1 becomes a constant, 16-divisible ints are marked: the binding
    ``kernel[grid](...)`` makes on a GPU, here without one."""

    @triton.jit
    def _probe_kernel(x_ptr, n, m, BLOCK: triton.language.constexpr):
        i = triton.language.arange(0, BLOCK)
        triton.language.store(x_ptr + i * m, i, mask=i < n)

    x = torch.zeros(32, dtype=torch.int32)
    key, src, options = cuda_compile.specialise(_probe_kernel, (x, 32, 1), {"BLOCK": 32, "num_warps": 2}, 90)
    assert src.signature["m"] == "constexpr" and src.constants[(2,)] == 1  # m == 1: a constant
    assert src.signature["n"] == "i32" and ((1,), [["tt.divisibility", 16]]) in src.attrs.items()
    assert options.num_warps == 2
    assert cuda_compile.compile_launch(_probe_kernel, (x, 32, 1), {"BLOCK": 32}, 80).asm["cubin"]
    seen = cuda_compile.CompileObserver(archs=(90,))
    seen(_probe_kernel, (1, 70000), (x, 32, 1), {"BLOCK": 32})
    assert [f[3] for f in seen.failures] == ["grid (1, 70000, 1) exceeds CUDA's (2147483647, 65535, 65535)"]
    launch(_probe_kernel, (1,), x, 32, 1, BLOCK=32)  # and the CPU still runs it
    assert x.tolist() == list(range(32))


class _Planned(Exception):
    """Raised by an observer to stop a launch once its configuration is known."""


def test_attention_over_many_heads_keeps_its_grid_within_cudas_limits():
    """(batch, head) pairs sat on grid axis 1, which CUDA stops at 65,535: a batch of 70,000 single
    heads would not launch on a GPU. They are on axis 0 now (2^31 - 1), the tiles on axis 1."""
    grids = []

    def plan_only(kernel, grid, args, meta):
        grids.append(tuple(grid))
        raise _Planned

    q = torch.zeros(70000, 1, 16, 16)
    for run in (lambda: KA.attention_forward(q, q, q, None, KA.MASK_NONE, False, 0.25),
                lambda: KA.attention_backward(q, q, q, q, q[..., 0], q, None, KA.MASK_NONE, False, 0.25,
                                              need_dq=False)):
        launch_observers.append(plan_only)
        try:
            with as_cuda(), pytest.raises(_Planned):
                run()
        finally:
            launch_observers.remove(plan_only)
    assert grids == [(70000, 1), (70000, 1)]
    assert all(g <= limit for grid in grids for g, limit in zip(grid, cuda_compile.GRID_LIMITS))


def test_interpolate_of_size_one_compiles_as_a_gpu_launch_specialises_it():
    """A GPU launch turns every int argument equal to 1 into a compile-time constant: an input or
    output of height or width 1 must still compile (``.to()`` on such a constant failed)."""
    seen = {}

    def observe(kernel, grid, args, meta):
        if kernel.__name__.startswith("interp_"):
            names = kernel.arg_names
            params = dict(zip(names, args), **{k: v for k, v in meta.items() if k in names})
            constexprs = {names[i] for i in kernel.constexprs}
            signature, constants = {}, {}
            for name, value in params.items():
                if name in constexprs or (type(value) is int and value == 1):  # as a GPU launch specialises
                    signature[name], constants[name] = "constexpr", value
                else:
                    signature[name] = arg_type(value)
            options = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages")}
            seen.setdefault(repr((kernel.__name__, sorted(constants.items()))), (kernel, signature, constants, options))
    launch_observers.append(observe)
    try:
        for shape in ((1, 2, 1, 5), (1, 2, 4, 1), (1, 1, 1, 1)):
            x = tgrad.randn(*shape, requires_grad=True)
            for kw in (dict(size=(1, 3)), dict(size=(3, 1), mode="bilinear"),
                       dict(size=(1, 1), mode="bilinear", align_corners=True),
                       dict(scale_factor=1, mode="nearest-exact")):
                F.interpolate(x, **kw).sum().backward()
    finally:
        launch_observers.remove(observe)
    target = GPUTarget("cuda", 90, 32)
    failures = []
    for kernel, signature, constants, options in seen.values():
        try:
            assert triton.compile(ASTSource(kernel, signature, constants), target=target, options=options).asm["cubin"]
        except Exception as e:
            failures.append(f"{kernel.__name__} {sorted(constants.items())}: {type(e).__name__}: {str(e)[:300]}")
    assert len(seen) >= 4
    assert not failures, "\n".join(failures)


def test_grid_sample_of_size_one_compiles_and_fp64_spills_nothing():
    """An input of height or width 1 made H or W a compile-time constant, on which the source
    coordinate's ``.to()`` failed (72 failed compilations in a whole-suite report); fp64 at 1024
    lanes over 4 warps spilled 128 B a thread on sm_90 (416 B on sm_80) in the grid gradient."""
    observer = cuda_compile.CompileObserver(archs=(90,), usage=True)
    deterministic = tgrad.are_deterministic_algorithms_enabled()
    tgrad.use_deterministic_algorithms(False)  # the input gradient's scatter-add kernel too
    launch_observers.append(observer)
    try:
        with as_cuda():
            for dtype in (tgrad.float32, tgrad.float64):
                for shape in ((1, 2, 1, 5), (1, 2, 4, 1), (2, 3, 40, 40)):
                    x = tgrad.randn(*shape, dtype=dtype, requires_grad=True)
                    grid = tgrad.randn(shape[0], 30, 40, 2, dtype=dtype, requires_grad=True)
                    for mode, padding in (("bilinear", "reflection"), ("bilinear", "zeros"), ("nearest", "border")):
                        F.grid_sample(x, grid, mode, padding).sum().backward()
    finally:
        launch_observers.remove(observer)
        tgrad.use_deterministic_algorithms(deterministic)
    assert not observer.failures, "\n".join(f"{k} sm_{a}: {m}" for _, k, a, m in observer.failures)
    records = [r for r in observer.compiled.values() if r["kernel"].startswith("grid_sample")]
    assert {r["kernel"] for r in records} == {"grid_sample_fwd_kernel", "grid_sample_dinput_kernel",
                                              "grid_sample_dgrid_kernel"}
    spills = [r for r in records if r["spill_bytes"]]
    assert not spills, spills


def test_conv_of_bf16_interpreted_as_a_gpu_configures_it_matches_torch():
    """Configured as on a GPU, conv hands ``tl.dot`` bf16 tiles (fp32 accumulators) as matmul now
    does; the interpreter's dot converted their uint16 bits as integers (errors of 3.6e10 on values
    of 16) until it widened bf16 operands itself."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(2, 3, 9, 9, generator=g).bfloat16(), torch.randn(4, 3, 3, 3, generator=g).bfloat16()
    with as_cuda():
        y = conv2d_forward(x, w, None, (1, 1), (1, 1), (1, 1), 1, (9, 9))
    want = torch.nn.functional.conv2d(x.double(), w.double(), padding=1).to(torch.bfloat16)
    torch.testing.assert_close(y, want, rtol=1.6e-2, atol=1e-2)
