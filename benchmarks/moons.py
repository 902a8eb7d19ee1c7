"""The micrograd moons demo, written the same way in tgrad, PyTorch, tinygrad and micrograd: ms per step.

    python benchmarks/moons.py [--steps 100] [--device cpu|cuda] [--micrograd-steps 5]

The step is micrograd's ``demo.ipynb`` as a user would write it in each library: an MLP 2-16-16-1
with ReLU, labels y = +-1, the SVM max-margin loss plus an L2 term written in user code,

    loss = mean_i relu(1 - y_i s_i) + 1e-4 * sum((p*p).sum() for p in params)

then zero_grad, backward, one full-batch SGD step with lr_k = 1.0 - 0.9 k / steps, and the
step's loss and accuracy read back (``.item()``), as the demo prints them. The data is
``make_moons(100, noise=0.1)``. tgrad and PyTorch use the library's own ``nn.Sequential`` /
``nn.Linear`` / ``nn.ReLU`` / ``optim.SGD``; micrograd uses its ``MLP`` and updates ``p.data``
by hand, as its demo does. Each library trains its own model from its own initialisation; what is
compared is the time per step (median over steps after warm-up) and, for tgrad, the kernel
launches per step (``tgrad.count_launches``) and how the CPU executor ran them (replayed /
recorded / interpreted, ``tgrad.kernels.count_replays``) over the timed run.

Captured rows ("captured"): the step recorded once as a graph and replayed (tgrad.graphs.Graph on
the CPU, tinygrad's TinyJit); the learning rate is a Python number in both, so the captured step
keeps the schedule's value at capture (as a CUDA graph would), and the loss is read back after each
replay. tinygrad runs on its CPU backend, which compiles kernels with clang (skipped with a message
when clang or tinygrad is missing: ``apt-get install clang; pip install tinygrad``).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, sync, table  # noqa: E402  (first: it pins BLAS threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.optim  # noqa: E402
import tgrad.kernels  # noqa: E402

ALPHA = 1e-4


def moons(n=100, seed=0):
    from sklearn.datasets import make_moons
    X, y = make_moons(n_samples=n, noise=0.1, random_state=seed)
    return X.astype(np.float32), (y * 2 - 1).astype(np.float32)


def _framework_trainer(lib, X_np, y_np, device, steps):
    """One step of the demo in ``lib`` (tgrad or torch): the same source text for both."""
    nn = lib.nn
    lib.manual_seed(1337)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    params = list(model.parameters())
    opt = lib.optim.SGD(params, lr=1.0)
    X = lib.tensor(X_np, device=device)
    y = lib.tensor(y_np, device=device)

    def step(k):
        scores = model(X).squeeze(1)
        data_loss = (1 - y * scores).relu().mean()
        reg_loss = ALPHA * sum((p * p).sum() for p in params)
        total_loss = data_loss + reg_loss
        accuracy = ((y > 0) == (scores > 0)).float().mean()
        opt.zero_grad()
        total_loss.backward()
        for group in opt.param_groups:
            group["lr"] = 1.0 - 0.9 * k / steps
        opt.step()
        return total_loss.item(), accuracy.item()
    return step


def _captured_tgrad_trainer(X_np, y_np, device, steps):
    """The tgrad step captured once (after two eager warm-up steps) and replayed."""
    nn = tgrad.nn
    tgrad.manual_seed(1337)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    params = list(model.parameters())
    opt = tgrad.optim.SGD(params, lr=1.0)
    X, y = tgrad.tensor(X_np, device=device), tgrad.tensor(y_np, device=device)

    def body():
        scores = model(X).squeeze(1)
        total_loss = (1 - y * scores).relu().mean() + ALPHA * sum((p * p).sum() for p in params)
        accuracy = ((y > 0) == (scores > 0)).float().mean()
        total_loss.backward()
        opt.step()
        return total_loss, accuracy
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        body()
    opt.zero_grad(set_to_none=True)
    graph = tgrad.graphs.Graph(device)
    with tgrad.graphs.graph(graph):
        static = body()
    if device == "cuda":
        graph.replay()

    def step(k):
        graph.replay()
        return static[0].item(), static[1].item()
    return step


def _tinygrad_trainers(X_np, y_np, steps):
    """(eager step, TinyJit step) of the demo in tinygrad on its CPU backend, or a reason it cannot run."""
    import shutil
    if shutil.which("clang") is None:
        return "clang not found (tinygrad's CPU backend compiles with it: apt-get install clang)"
    try:
        from tinygrad import Tensor, TinyJit, nn as tnn
        from tinygrad.helpers import Context
        from tinygrad.nn.optim import SGD
    except ImportError:
        return "not installed (pip install tinygrad)"

    def make(jit):
        Tensor.manual_seed(1337)
        layers = [tnn.Linear(2, 16), tnn.Linear(16, 16), tnn.Linear(16, 1)]
        params = [t for layer in layers for t in (layer.weight, layer.bias)]
        opt = SGD(params, lr=1.0)
        X, y = Tensor(X_np), Tensor(y_np)

        def body():
            with Context(TRAINING=1):
                scores = layers[2](layers[1](layers[0](X).relu()).relu()).squeeze(1)
                total_loss = (1 - y * scores).relu().mean() + ALPHA * sum((p * p).sum() for p in params)
                accuracy = ((y > 0) == (scores > 0)).float().mean()
                opt.zero_grad()
                total_loss.backward()
                opt.step()
                return total_loss.realize(), accuracy.realize()
        run = TinyJit(body) if jit else body

        def step(k):
            opt.lr.assign(Tensor([1.0 - 0.9 * k / steps], dtype=opt.lr.dtype)).realize()
            loss, acc = run()
            return loss.item(), acc.item()
        return step
    return make(False), make(True)


def _micrograd_trainer(X_np, y_np, steps):
    from micrograd.engine import Value
    from micrograd.nn import MLP
    random.seed(1337)
    model = MLP(2, [16, 16, 1])

    def step(k):  # micrograd's demo.ipynb loss() and training loop, verbatim in substance
        inputs = [list(map(Value, xrow)) for xrow in X_np.tolist()]
        scores = list(map(model, inputs))
        losses = [(1 + -yi * scorei).relu() for yi, scorei in zip(y_np.tolist(), scores)]
        data_loss = sum(losses) * (1.0 / len(losses))
        reg_loss = ALPHA * sum((p * p for p in model.parameters()))
        total_loss = data_loss + reg_loss
        accuracy = [(yi > 0) == (scorei.data > 0) for yi, scorei in zip(y_np.tolist(), scores)]
        model.zero_grad()
        total_loss.backward()
        learning_rate = 1.0 - 0.9 * k / steps
        for p in model.parameters():
            p.data -= learning_rate * p.grad
        return total_loss.data, sum(accuracy) / len(accuracy)
    return step


def run(step, steps, device="cpu", warmup=2):
    """Times every step; returns (median wall ms/step and median CPU ms/step over the steps after
    ``warmup``, last loss, last accuracy). CPU time is this process's, all threads: on a shared
    machine it moves less than wall time, which waits for the scheduler."""
    wall, cpu, loss, acc = [], [], None, None
    for k in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        loss, acc = step(k)
        sync(device)
        if k >= warmup or steps <= warmup:
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(wall), statistics.median(cpu), loss, acc


def launches_per_step(step, k=0):
    with tgrad.count_launches() as counts:
        step(k)
    return sum(counts.values()), counts


def _fmt(ms):
    return f"{ms:.2f}" if ms >= 0.1 else f"{ms:.3f}"


def bench(steps=100, device="cpu", micrograd_steps=5):
    X, y = moons()
    rows, results, notes = [], {}, {}
    tg = _framework_trainer(tgrad, X, y, device, steps)
    n_launch, by_kernel = launches_per_step(tg)  # step 0, before timing; the timed run starts over
    with tgrad.kernels.count_replays() as executed:
        results["tgrad"] = run(_framework_trainer(tgrad, X, y, device, steps), steps, device)
        results["tgrad captured"] = run(_captured_tgrad_trainer(X, y, device, steps), steps, device)
    results["PyTorch"] = run(_framework_trainer(torch, X, y, device, steps), steps, device)
    tiny = _tinygrad_trainers(X, y, steps) if device == "cpu" else "CPU rows only"
    if isinstance(tiny, str):
        notes["tinygrad"] = tiny
    else:
        results["tinygrad"] = run(tiny[0], min(steps, 30), "cpu")
        results["tinygrad TinyJit"] = run(tiny[1], steps, "cpu", warmup=3)
    try:
        import micrograd  # noqa: F401
        # ~1.4 s a step and the same work every step: a few steps give its median
        results["micrograd"] = run(_micrograd_trainer(X, y, steps), min(micrograd_steps, steps), "cpu", warmup=0)
    except ImportError:
        notes["micrograd"] = "not installed (pip install micrograd==0.1.0)"
    base = results["tgrad"][0]
    for name, r in results.items():
        wall, cpu, loss, acc = r
        steps_run = {"micrograd": min(micrograd_steps, steps), "tinygrad": min(steps, 30)}.get(name, steps)
        rows.append((name, _fmt(wall), _fmt(cpu), f"{base / wall:.3g}x",
                     str(n_launch) if name.startswith("tgrad") else "", f"{loss:.4f} ({steps_run} steps)", f"{acc:.0%}"))
    for name, why in notes.items():
        rows.append((name, why, "", "", "", "", ""))
    return rows, by_kernel, executed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--micrograd-steps", type=int, default=5,
                   help="steps to time micrograd over (default 5; ~1.4 s each)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (default 1: these tensors are far too small to split, and on "
                        "a busy machine idle worker threads spinning cost PyTorch ~100x)")
    p.add_argument("--by-kernel", action="store_true", help="also print tgrad's launches per step by kernel")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"# moons demo (MLP 2-16-16-1, 100 points, full-batch SGD, {args.steps} steps) on {args.device}: "
          f"{machine()}")
    rows, by_kernel, executed = bench(args.steps, args.device, args.micrograd_steps)
    print(table(rows, ("library", "wall ms/step", "CPU ms/step", "tgrad / it", "launches/step", "final loss",
                       "final acc")))
    if args.device == "cpu":
        print("tgrad's CPU launches in the timed runs: " + ", ".join(f"{k} {v}" for k, v in sorted(executed.items())))
    if args.by_kernel:
        print("tgrad launches in one step: " + ", ".join(f"{k} {v}" for k, v in by_kernel.most_common()))
    return rows


if __name__ == "__main__":
    main()
