"""Determinism: the same seed gives the same bits, on the CPU and (by construction) on CUDA.

- CPU: two runs of every training example with the same seed write byte-identical checkpoints and
  report identical metrics (so every step's loss was identical too); a training loop with dropout,
  a shuffled DataLoader and Adam gives bit-identical per-step losses.
- CUDA: a float ``tl.atomic_add`` sums in whatever order threads arrive, so it is the one source of
  run-to-run differences. The audit below lists every atomic in ``kernels/`` with why it is
  harmless; the two float scatter-adds (embedding backward, advanced-index/gather/index_select
  backward and scatter_add) take the sort-based path of ``kernels/reductions/segment.py`` on CUDA while
  ``tgrad.use_deterministic_algorithms`` is on (the default). Without a GPU here, that path is
  forced on the CPU (``segment.deterministic`` patched) and a training workload is run with every atomic
  the interpreter executes recorded: no float atomic may remain. The path is also compiled for sm_90.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.interpreter import InterpreterBuilder, interpreter_builder

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
import tgrad.optim as optim
from support.launches import arg_type
from tgrad.kernels.indexing import embedding as KE
from tgrad.kernels.reductions import segment
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.utils.data import DataLoader, TensorDataset

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "train_examples"))

# (module, arguments): every example, a few steps each
EXAMPLES = [("moons", ["--steps", "3"]), ("spirals", ["--steps", "3"]), ("digits", ["--steps", "3"]),
            ("digits", ["--steps", "1", "--model", "cnn"]), ("sequence", ["--steps", "1"]),
            ("custom_triton_function", ["--steps", "3"])]
TIMING = {"ms_per_step", "launches_per_step", "png", "checkpoint", "model"}


def _run_example(module, argv, out, seed):
    mod = __import__(module)
    result = mod.main(argv + ["--no-progress", "--quick", "--out", str(out), "--seed", str(seed)])
    metrics = {k: v for k, v in result.items() if k not in TIMING}
    return metrics, Path(result["checkpoint"]).read_bytes()


@pytest.mark.parametrize("module, argv", EXAMPLES, ids=[f"{m}{'-' + a[-1] if '--model' in a else ''}"
                                                        for m, a in EXAMPLES])
def test_training_examples_are_bit_identical_for_a_seed(module, argv, tmp_path, capsys):
    first = _run_example(module, argv, tmp_path / "a", 5)
    again = _run_example(module, argv, tmp_path / "b", 5)
    assert first[0] == again[0]  # every metric (loss, accuracy ...) to the last bit
    assert first[1] == again[1], "the checkpoints differ: some step computed different bits"


def test_a_different_seed_gives_a_different_run(tmp_path, capsys):
    assert _run_example("spirals", ["--steps", "3"], tmp_path / "a", 5)[1] != \
        _run_example("spirals", ["--steps", "3"], tmp_path / "b", 6)[1]


def _inline_training(seed):
    tgrad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    opt = optim.Adam(model.parameters(), lr=0.01)
    data = TensorDataset(tgrad.randn(40, 6), tgrad.randint(0, 3, (40,)))
    losses = []
    for _ in range(2):
        for x, y in DataLoader(data, batch_size=8, shuffle=True):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def test_training_with_dropout_and_shuffling_repeats_bit_for_bit():
    a, b, c = _inline_training(0), _inline_training(0), _inline_training(1)
    assert a == b and a != c


# ----------------------------------------------------------------------------- atomics

KERNELS = ROOT / "kernels"
# every atomic in kernels/, and why it cannot make a run differ from another
ATOMICS = {
    ("losses/cross_entropy.py", "tl.atomic_min(bad_ptr"): "int64 min of a row number: order-independent",
    ("indexing/embedding.py", "tl.atomic_min(bad_ptr"): "int64 min of a row number: order-independent",
    ("indexing/embedding.py", "tl.atomic_add(dw_rows"): "float: replaced by segment.embedding_grad when deterministic",
    ("indexing/embedding.py", "tl.atomic_min(out_ptr"): "int64 min of an index: order-independent",
    ("indexing/embedding.py", "tl.atomic_max(out_ptr"): "int64 max of an index: order-independent",
    ("indexing/index.py", "tl.atomic_add(src"): "float: replaced by segment.index_add when deterministic",
    ("indexing/index.py", "tl.atomic_min(first_ptr"): "int64 min of a position: order-independent",
    ("indexing/index.py", "tl.atomic_add(total_ptr"): "int64 count: integer addition is exact in any order",
    ("losses/elementwise.py", "tl.atomic_max(bad_ptr"): "int64 max of a count: order-independent",
    ("spatial/grid_sample.py", "tl.atomic_add(dx_ptr"): "float: grid_sample's input gradient comes from the composed "
                                                        "form (a deterministic scatter-add) when deterministic",
}


def test_every_atomic_in_the_kernels_is_accounted_for():
    found = set()
    for path in sorted(KERNELS.rglob("*.py")):
        for line in path.read_text().splitlines():
            m = re.search(r"(tl\.atomic_\w+\(\w+)", line.split("#")[0])
            if m:
                found.add((path.relative_to(KERNELS).as_posix(), m.group(1)))
    assert found == set(ATOMICS), f"unaccounted: {sorted(found - set(ATOMICS))}, gone: {sorted(set(ATOMICS) - found)}"


class _AtomicRecorder:
    """Records (kernel, op, dtype) of every atomic the interpreter executes."""

    def __init__(self):
        self.kernel, self.seen = None, set()

    def __enter__(self):
        rmw = InterpreterBuilder.create_atomic_rmw

        def record(op, ptr, val, mask, sem, scope):
            self.seen.add((self.kernel, str(op).split(".")[-1], np.asarray(val.data).dtype.kind))
            return rmw(interpreter_builder, op, ptr, val, mask, sem, scope)

        self.before = interpreter_builder.__dict__.get("create_atomic_rmw")
        interpreter_builder.create_atomic_rmw = record
        launch_observers.append(self.observe)
        return self

    def observe(self, kernel, grid, args, meta):
        self.kernel = kernel.__name__

    def __exit__(self, *exc):
        launch_observers.remove(self.observe)
        if self.before is None:
            del interpreter_builder.create_atomic_rmw
        else:
            interpreter_builder.create_atomic_rmw = self.before

    def float_adds(self):
        return {s for s in self.seen if s[2] == "f" and "ADD" in s[1]}


def _training_step_of_everything():
    """One step of a model using every op with a gradient scatter: embedding, advanced indexing,
    gather, index_select, scatter_add; plus conv, pool, batch_norm, layer_norm, cross-entropy."""
    tgrad.manual_seed(0)
    emb, conv, bn, ln = nn.Embedding(10, 6), nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.LayerNorm(6)
    params = list(emb.parameters()) + list(conv.parameters()) + list(bn.parameters()) + list(ln.parameters())
    opt = optim.AdamW(params, lr=0.01)
    tokens = tgrad.tensor([[1, 3, 3, 9], [3, 3, 0, 1]])
    e = ln(emb(tokens))                                                     # (2, 4, 6)
    img = F.max_pool2d(bn(conv(e[:, None, :, :])), 2)                      # (2, 2, 2, 3)
    rows = e[tgrad.tensor([0, 1, 1]), tgrad.tensor([2, 2, 2])]              # advanced index, duplicates
    picked = e.reshape(8, 6).gather(1, tgrad.tensor([[0, 0, 5]] * 8))
    sel = e.reshape(8, 6).index_select(0, tgrad.tensor([7, 7, 2]))
    scat = tgrad.zeros(8, 6).scatter_add(0, tgrad.tensor([[1] * 6] * 8), e.reshape(8, 6))
    logits = rows @ sel.t() + img.reshape(2, -1).sum() + picked.sum() + scat.sum()
    loss = F.cross_entropy(logits, tgrad.tensor([0, 2, 1]))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


@pytest.mark.cpu_launch_decisions
def test_no_float_atomics_on_the_deterministic_path(monkeypatch):
    with _AtomicRecorder() as atomic_path:
        _training_step_of_everything()
    assert {k for k, _, _ in atomic_path.float_adds()} == {"embedding_bwd_kernel", "index_kernel"}  # the recorder sees
    # what CUDA runs while deterministic algorithms are on
    monkeypatch.setattr(segment, "deterministic", lambda device: True)
    with _AtomicRecorder() as sorted_path:
        loss = _training_step_of_everything()
    assert not sorted_path.float_adds(), f"float atomics left: {sorted_path.float_adds()}"
    monkeypatch.undo()
    assert _training_step_of_everything() == loss  # the same numbers either way


@pytest.mark.cpu_launch_decisions
def test_the_deterministic_switch():
    assert tgrad.are_deterministic_algorithms_enabled()  # tgrad's default, unlike PyTorch's
    cuda = torch.device("cuda")
    assert segment.deterministic(cuda) and not segment.deterministic(torch.device("cpu"))
    try:
        tgrad.use_deterministic_algorithms(False)
        assert not tgrad.are_deterministic_algorithms_enabled() and not segment.deterministic(cuda)
    finally:
        tgrad.use_deterministic_algorithms(True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_sort_based_scatter_matches_the_atomic_one_bit_for_bit(dtype, monkeypatch):
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 5, (300,), generator=gen)          # every row hit ~60 times
    g = (torch.randn(300, 7, generator=gen) * 100).to(dtype)
    cases = [(idx, g, 2), (idx.to(torch.int32).reshape(20, 15), g.t().contiguous().t(), None)]
    x = tgrad.from_torch(torch.randn(5, 7, generator=gen).to(dtype)).requires_grad_()

    def index_grad():
        x.grad = None
        x[tgrad.from_torch(idx)].backward(tgrad.from_torch(g))
        return x.grad.torch()

    atomic = [KE.embedding_backward(i, gg, 6, p) for i, gg, p in cases] + [index_grad()]
    monkeypatch.setattr(segment, "deterministic", lambda device: True)
    sort_based = [KE.embedding_backward(i, gg, 6, p) for i, gg, p in cases] + [index_grad()]
    for a, b in zip(atomic, sort_based):
        assert a.dtype == b.dtype == dtype and torch.equal(a, b)


def _signature(kernel, args, meta):
    names = kernel.arg_names
    params = dict(zip(names, args))
    params.update({k: v for k, v in meta.items() if k in names})
    constexprs = {names[i] for i in kernel.constexprs}
    sig = {n: ("constexpr" if n in constexprs else arg_type(params[n])) for n in names if n in params}
    return sig, {n: params[n] for n in names if n in constexprs and n in params}


def test_the_sort_based_path_compiles_for_sm90_without_atomics(monkeypatch):
    monkeypatch.setattr(segment, "deterministic", lambda device: True)
    launches = []

    def observe(kernel, grid, args, meta):
        if kernel.__name__ in ("segment_sum_kernel", "index_kernel", "_sort_block_kernel"):
            launches.append((kernel, *_signature(kernel, args, meta)))
    launch_observers.append(observe)
    try:
        w = tgrad.randn(7, 3, requires_grad=True)
        F.embedding(tgrad.tensor([1, 1, 2]), w).sum().backward()
        x = tgrad.randn(6, 5, requires_grad=True)
        x[tgrad.tensor([0, 3, 3]), 1:4].sum().backward()
    finally:
        launch_observers.remove(observe)
    kinds = set()
    for kernel, sig, consts in launches:
        key = (kernel.__name__, getattr(consts.get("OP"), "__name__", None))  # the index formula
        if key in kinds:
            continue
        kinds.add(key)
        compiled = triton.compile(ASTSource(kernel, sig, consts), target=GPUTarget("cuda", 90, 32))
        assert compiled.asm["cubin"] and "atomic_rmw" not in compiled.asm["ttir"], key
    assert {("segment_sum_kernel", None), ("index_kernel", "offsets")} <= kinds


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_scatters_repeat_bit_for_bit():
    gen = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 50, (20000,), generator=gen).cuda()
    g = torch.randn(20000, 64, generator=gen).cuda()
    runs = [KE.embedding_backward(idx, g, 50) for _ in range(3)]
    assert all(torch.equal(runs[0], r) for r in runs)
    x = tgrad.randn(50, 64, device="cuda", requires_grad=True)
    grads = []
    for _ in range(3):
        x.grad = None
        x[tgrad.from_torch(idx)].sum().backward()
        grads.append(x.grad.torch().clone())
    assert all(torch.equal(grads[0], r) for r in grads)
