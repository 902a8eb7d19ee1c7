"""A full MLP training step, tgrad against PyTorch eager: forward, cross-entropy, zero_grad,
backward, Adam step -- run eagerly, and captured once as a graph and replayed (``tgrad.graphs``:
a CUDA graph on CUDA, a launch recording on the CPU; Adam with ``capturable=True``).

    python benchmarks/mlp_step.py [--device cpu|cuda] [--repeats N] [--sizes 784,1024,1024,10] [--batch 256]

Defaults: on CUDA the issue's 784-1024-1024-10 at batch 256 in fp32 and bf16; on the CPU (Triton's
interpreter) 784-256-256-10 at batch 64 in fp32. Both libraries run the same source: an
``nn.Sequential`` of Linear/ReLU, ``F.cross_entropy`` and ``optim.Adam``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.nn.functional  # noqa: E402
import tgrad.optim  # noqa: E402


def _trainer(lib, sizes, batch, device, dtype, capturable=False):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to(device=device, dtype=dtype)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3, capturable=capturable)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, sizes[0], generator=gen).to(device=device, dtype=dtype)
    y = torch.randint(0, sizes[-1], (batch,), generator=gen).to(device)
    if lib is tgrad:
        x, y = tgrad.from_torch(x), tgrad.from_torch(y)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def bench(device, dtype, repeats, sizes, batch):
    tstep = _trainer(tgrad, sizes, batch, device, dtype)
    tstep()  # Adam's state is allocated on the first step
    with tgrad.count_launches() as counts:
        tstep()
    t = time_ms(tstep, device, repeats)
    pstep = _trainer(torch, sizes, batch, device, dtype)
    pt = time_ms(pstep, device, repeats)
    gstep = _trainer(tgrad, sizes, batch, device, dtype, capturable=True)
    for _ in range(2):  # warm-up: Adam's state, compiled kernels
        gstep()
    graph = tgrad.graphs.Graph(device)
    with tgrad.graphs.graph(graph):
        gstep()
    gt = time_ms(graph.replay, device, repeats)
    name = "MLP step " + "-".join(map(str, sizes))
    dt = str(dtype).replace("torch.", "")
    return [(name, f"batch {batch}", dt, f"{t:.3f}", f"{pt:.3f}", f"{t / pt:.2f}x", str(sum(counts.values()))),
            (name + ", graph replay", f"batch {batch}", dt, f"{gt:.3f}", f"{pt:.3f}", f"{gt / pt:.2f}x",
             str(sum(graph.launches.values())))], counts


HEADER = ("op", "shape", "dtype", "tgrad ms", "PyTorch ms", "ratio", "tgrad launches")


def defaults(device):
    return ([784, 1024, 1024, 10], 256) if device == "cuda" else ([784, 256, 256, 10], 64)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sizes", default=None, help="layer widths, comma-separated")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    p.add_argument("--by-kernel", action="store_true", help="also print tgrad's launches per step by kernel")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes, batch = defaults(args.device)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else sizes
    batch = args.batch or batch
    dtypes = [torch.float32] + ([torch.bfloat16] if args.device == "cuda" else [])
    print(f"# MLP training step (Linear/ReLU, cross_entropy, Adam) on {args.device}: {machine()}")
    rows = []
    for dt in dtypes:
        r, counts = bench(args.device, dt, args.repeats, sizes, batch)
        rows += r
    print(table(rows, HEADER))
    if args.by_kernel:
        print("tgrad launches in one step: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return rows


if __name__ == "__main__":
    main()
