"""One Adam step over a model of about 1M parameters: tgrad's fused step against PyTorch's.

    python benchmarks/optim_step.py [--device cpu|cuda] [--repeats N]

The parameters are an MLP's (784-1024-256-10 with biases: 1,068,810 parameters in 6 tensors) with
random gradients set. tgrad updates every parameter of the group in one launch
(``tgrad.kernels.optim.step``); PyTorch runs its default Adam (foreach on CUDA, the single-tensor loop
on the CPU) and, on CUDA, ``fused=True`` as well."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.optim  # noqa: E402

SHAPES = [(1024, 784), (1024,), (256, 1024), (256,), (10, 256), (10,)]


def _params(lib, device, dtype, shapes):
    gen = torch.Generator().manual_seed(0)
    out = []
    for s in shapes:
        p = torch.randn(s, generator=gen).to(device=device, dtype=dtype)
        g = torch.randn(s, generator=gen).to(device=device, dtype=dtype) * 1e-2
        if lib == "torch":
            p = torch.nn.Parameter(p)
            p.grad = g
        else:
            p = tgrad.nn.Parameter(tgrad.from_torch(p))
            p.grad = tgrad.from_torch(g)
        out.append(p)
    return out


def bench(device, dtype, repeats, shapes=SHAPES):
    n = sum(torch.Size(s).numel() for s in shapes)
    tparams = _params("tgrad", device, dtype, shapes)
    topt = tgrad.optim.Adam(tparams, lr=1e-3, weight_decay=1e-2)
    with tgrad.count_launches() as counts:
        topt.step()
    timings = {"tgrad": time_ms(topt.step, device, repeats)}
    variants = {"PyTorch": {}}
    if device == "cuda":
        variants["PyTorch fused"] = {"fused": True}
    for name, kw in variants.items():
        popt = torch.optim.Adam(_params("torch", device, dtype, shapes), lr=1e-3, weight_decay=1e-2, **kw)
        timings[name] = time_ms(popt.step, device, repeats)
    rows = []
    for name, ms in timings.items():
        if name == "tgrad":
            continue
        rows.append((f"Adam step ({len(shapes)} tensors)", f"{n:,} params", str(dtype).replace("torch.", ""),
                     f"{timings['tgrad']:.3f}", f"{ms:.3f} ({name})", f"{timings['tgrad'] / ms:.2f}x",
                     str(sum(counts.values()))))
    return rows


HEADER = ("op", "size", "dtype", "tgrad ms", "PyTorch ms", "ratio", "tgrad launches")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (CPU)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtypes = [torch.float32] + ([torch.bfloat16] if args.device == "cuda" else [])
    print(f"# optimizer step on {args.device}: {machine()}")
    rows = []
    for dt in dtypes:
        rows += bench(args.device, dt, args.repeats)
    print(table(rows, HEADER))
    return rows


if __name__ == "__main__":
    main()
