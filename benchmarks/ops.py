"""Per-op speed of tgrad against PyTorch eager, forward and forward+backward, on each device.

    python benchmarks/ops.py [--device cpu|cuda] [--repeats N]

CPU timings run tgrad's kernels through Triton's interpreter (so shapes are small); GPU timings use
triton.testing.do_bench at the issue's sizes. The ratio is tgrad / PyTorch (lower is better)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn.functional as TF  # noqa: E402


def _cases(device):
    big = device == "cuda"
    rows, cols = (8192, 4096) if big else (256, 512)
    n = 1 << 26 if big else 1 << 16
    mm = 4096 if big else 128
    return [
        ("add (broadcast)", (rows, cols), lambda L, x, y: x + y, lambda s: [(s[0], s[1]), (s[1],)]),
        ("gelu", (n,), lambda L, x: L.gelu(x), lambda s: [s]),
        ("sum over rows", (rows, cols), lambda L, x: x.sum(1), lambda s: [s]),
        ("softmax", (rows, cols), lambda L, x: L.softmax(x, -1), lambda s: [s]),
        ("log_softmax", (rows, cols), lambda L, x: L.log_softmax(x, -1), lambda s: [s]),
        ("layer_norm", (rows, cols), lambda L, x, w, b: L.layer_norm(x, (x.shape[-1],), w, b),
         lambda s: [s, (s[1],), (s[1],)]),
        ("cross_entropy", (rows, cols), None, lambda s: [s]),
        ("matmul", (mm, mm, mm), lambda L, a, b: a @ b, lambda s: [(s[0], s[2]), (s[2], s[1])]),
        ("linear+bias+relu", (rows, cols, cols), lambda L, x, w, b: L.relu(L.linear(x, w, b)),
         lambda s: [(s[0], s[1]), (s[2], s[1]), (s[2],)]),
    ]


def _inputs(shapes, lib, device, dtype, grad):
    gen = torch.Generator().manual_seed(0)
    base = [torch.randn(s, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype) for s in shapes]
    if lib == "torch":
        return [b.clone().requires_grad_(grad) for b in base]
    return [tgrad.from_torch(b.clone()).requires_grad_(grad) for b in base]


def bench(device, dtype, repeats):
    rows = []
    libs = {"tgrad": TF, "torch": torch.nn.functional}
    for name, shape, fn, shapes_of in _cases(device):
        shapes = shapes_of(shape)
        for mode in ("fwd", "fwd+bwd"):
            timings = {}
            for lib, L in libs.items():
                xs = _inputs(shapes, lib, device, dtype, mode != "fwd")
                if name == "cross_entropy":
                    tgt = torch.randint(0, shape[1], (shape[0],), generator=torch.Generator().manual_seed(1))
                    target = tgrad.from_torch(tgt.to(device)) if lib == "tgrad" else tgt.to(device)
                    run = lambda L=L, xs=xs, target=target: L.cross_entropy(xs[0], target)  # noqa: E731
                else:
                    run = lambda L=L, xs=xs: fn(L, *xs)  # noqa: E731

                def step(run=run):
                    out = run()
                    if mode != "fwd":
                        out.sum().backward() if out.ndim else out.backward()

                timings[lib] = time_ms(step, device, repeats)
            rows.append((name, "x".join(map(str, shape)), str(dtype).replace("torch.", ""), mode,
                         f"{timings['tgrad']:.2f}", f"{timings['torch']:.3f}",
                         f"{timings['tgrad'] / timings['torch']:.1f}x"))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    dtypes = [torch.float32] + ([torch.bfloat16] if args.device == "cuda" else [])
    print(f"# ops on {args.device}: {machine()}")
    rows = []
    for dt in dtypes:
        rows += bench(args.device, dt, args.repeats)
    print(table(rows, ("op", "shape", "dtype", "pass", "tgrad ms", "PyTorch ms", "ratio")))


if __name__ == "__main__":
    main()
