"""cat / stack of many small inputs, tgrad against PyTorch eager: median CPU us per call and launches.

    python benchmarks/joins.py [--repeats 300]

The issue's case is ``stack([d[i:i+8] for i in range(32)])`` (the 32 slices included, as user code
writes it); the other rows time the join alone on inputs made beforehand.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402


def cases(lib):
    d = lib.arange(64.0)
    rows = [d[i:i + 8] for i in range(32)]
    pieces = [d[:1 + i % 7] for i in range(32)]
    mixed = [d[:8].double() if i % 2 else d[:8] for i in range(32)]
    return [("stack of 32 slices, slicing included", lambda: lib.stack([d[i:i + 8] for i in range(32)])),
            ("stack of 32 (8,) tensors", lambda: lib.stack(rows)),
            ("cat of 32 tensors of sizes 1..7", lambda: lib.cat(pieces)),
            ("cat of 32 tensors, float32 and float64", lambda: lib.cat(mixed))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    print(machine())
    rows = []
    for (name, t), (_, p) in zip(cases(tgrad), cases(torch)):
        with tgrad.count_launches() as counts:
            t()
        tu, pu = (1e3 * time_ms(f, "cpu", args.repeats, warmup=20, clock=time.process_time) for f in (t, p))
        rows.append([name, sum(counts.values()), f"{tu:.0f}", f"{pu:.0f}", f"{tu / pu:.1f}"])
    print(table(rows, ["call", "tgrad launches", "tgrad CPU us", "torch CPU us", "ratio"]))


if __name__ == "__main__":
    main()
