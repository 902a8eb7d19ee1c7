"""One training step of the digits CNN in tgrad, PyTorch and tinygrad: ms per step.

    python benchmarks/cnn_step.py [--steps 30] [--device cpu|cuda] [--batch 32]

The model is ``train_examples/digits.py``'s CNN: 1x8x8 -> Conv2d(16, 3x3, pad 1), BatchNorm2d,
ReLU, MaxPool2d(2) -> Conv2d(32, 3x3, pad 1), BatchNorm2d, ReLU, MaxPool2d(2) -> Flatten ->
Linear(10); cross-entropy on a batch of sklearn's 8x8 digits; zero_grad, backward, one Adam step,
the loss read back (``.item()``). "captured" rows record the step once and replay it (tgrad.graphs
with a capturable Adam; tinygrad's TinyJit). tinygrad runs on its CPU backend (clang; skipped with
a message when it or clang is missing). tgrad's row also says how its CPU launches ran over the
timed steps (replayed / recorded / interpreted).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table  # noqa: E402  (first: it pins BLAS threads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.kernels  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.optim  # noqa: E402

from moons import run  # noqa: E402  (the same timing loop: median wall and CPU ms per step)


def digits(batch):
    from sklearn.datasets import load_digits
    d = load_digits()
    X = (d.images[:batch] / 16.0).astype(np.float32)[:, None]
    return X, d.target[:batch].astype(np.int64)


def _model(lib, device):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10)).to(device)


def _framework_trainer(lib, X_np, y_np, device, captured=False):
    model = _model(lib, device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2, capturable=captured)
    X, y = lib.tensor(X_np, device=device), lib.tensor(y_np, device=device)

    def body():
        loss = lib.nn.functional.cross_entropy(model(X), y)
        loss.backward()
        opt.step()
        return loss
    if not captured:
        def step(k):
            opt.zero_grad()
            return body().item(), 0.0
        return step
    for _ in range(2):
        opt.zero_grad(set_to_none=True)
        body()
    opt.zero_grad(set_to_none=True)
    graph = tgrad.graphs.Graph(device)
    with tgrad.graphs.graph(graph):
        static = body()
    if device == "cuda":
        graph.replay()

    def replayed(k):
        graph.replay()
        return static.item(), 0.0
    return replayed


def _tinygrad_trainers(X_np, y_np):
    if shutil.which("clang") is None:
        return "clang not found (tinygrad's CPU backend compiles with it: apt-get install clang)"
    try:
        from tinygrad import Tensor, TinyJit, nn as tnn
        from tinygrad.helpers import Context
        from tinygrad.nn.optim import Adam
    except ImportError:
        return "not installed (pip install tinygrad)"

    def make(jit):
        Tensor.manual_seed(0)
        layers = [tnn.Conv2d(1, 16, 3, padding=1), tnn.BatchNorm2d(16), tnn.Conv2d(16, 32, 3, padding=1),
                  tnn.BatchNorm2d(32), tnn.Linear(32 * 2 * 2, 10)]
        opt = Adam(tnn.state.get_parameters(layers), lr=1e-2)
        X, y = Tensor(X_np), Tensor(y_np.astype(np.int32))

        def body():
            with Context(TRAINING=1):
                h = layers[1](layers[0](X)).relu().max_pool2d(2)
                h = layers[3](layers[2](h)).relu().max_pool2d(2)
                loss = layers[4](h.flatten(1)).sparse_categorical_crossentropy(y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                return loss.realize()
        fn = TinyJit(body) if jit else body
        return lambda k: (fn().item(), 0.0)
    return make(False), make(True)


def bench(steps=30, device="cpu", batch=32):
    X, y = digits(batch)
    results, notes = {}, {}
    with tgrad.count_launches() as launches:
        _framework_trainer(tgrad, X, y, device)(0)
    with tgrad.kernels.count_replays() as executed:
        results["tgrad"] = run(_framework_trainer(tgrad, X, y, device), steps, device)
        results["tgrad captured"] = run(_framework_trainer(tgrad, X, y, device, captured=True), steps, device)
    results["PyTorch"] = run(_framework_trainer(torch, X, y, device), steps, device)
    tiny = _tinygrad_trainers(X, y) if device == "cpu" else "CPU rows only"
    if isinstance(tiny, str):
        notes["tinygrad"] = tiny
    else:
        results["tinygrad"] = run(tiny[0], min(steps, 10), "cpu")
        results["tinygrad TinyJit"] = run(tiny[1], steps, "cpu", warmup=3)
    base = results["tgrad"][0]
    rows = [(name, f"{wall:.2f}", f"{cpu:.2f}", f"{base / wall:.3g}x",
             str(sum(launches.values())) if name.startswith("tgrad") else "", f"{loss:.4f}")
            for name, (wall, cpu, loss, _) in results.items()]
    rows += [(name, why, "", "", "", "") for name, why in notes.items()]
    return rows, executed


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"# digits CNN training step (batch {args.batch}, Adam, {args.steps} steps) on {args.device}: {machine()}")
    rows, executed = bench(args.steps, args.device, args.batch)
    print(table(rows, ("library", "wall ms/step", "CPU ms/step", "tgrad / it", "launches/step", "final loss")))
    if args.device == "cpu":
        print("tgrad's CPU launches in the timed runs: " + ", ".join(f"{k} {v}" for k, v in sorted(executed.items())))
    return rows


if __name__ == "__main__":
    main()
