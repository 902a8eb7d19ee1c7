"""Eager overhead per op: CPU time per call of small-tensor ops, tgrad against PyTorch.

    python benchmarks/overhead.py [--calls 2000] [--rounds 5]

Each op runs on tensors of a few dozen elements, where the work is nothing and what is measured
is the path from the Python call to the launch (argument checks, promotion, output allocation,
autograd bookkeeping, the replayed launch). PyTorch runs with one thread. The time is CPU time
(``time.process_time``) per call, the best of ``--rounds`` rounds of ``--calls`` calls after a
warm-up (the best round: the machine's other load only ever adds); tgrad and PyTorch alternate
round by round in one process, so both see the same machine. The ratio is tgrad / PyTorch.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402


def _cases(lib):
    """(name, the call) per op, on ``lib``'s tensors (the same source for both)."""
    lib.manual_seed(0)
    a, b, d = lib.randn(32), lib.randn(32), lib.randn(64)
    ag = lib.randn(32, requires_grad=True)
    m = lib.randn(8, 8)
    x = lib.randn(4, 8)
    i = lib.tensor(517)  # a 0-d int64, as get_batch's `i + 8` in the bigram tutorial
    return [
        ("add", lambda: a + b),
        ("add, requires_grad", lambda: ag + b),
        ("mul by a Python scalar", lambda: a * 2.5),
        ("0-d int64 + Python int", lambda: i + 8),
        ("slice d[5:13]", lambda: d[5:13]),
        ("view / reshape", lambda: x.reshape(8, 4)),
        ("transpose", lambda: x.t()),
        ("sum", lambda: a.sum()),
        ("relu", lambda: a.relu()),
        ("matmul 8x8", lambda: m @ m),
    ]


def per_call_us(fn, calls: int) -> float:
    t0 = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - t0) / calls * 1e6


def measure(calls: int, rounds: int):
    cases = {lib: _cases(lib) for lib in (tgrad, torch)}
    best = {lib: [float("inf")] * len(cases[lib]) for lib in cases}
    for lib in cases:  # warm-up: tgrad's first calls of a site interpret and record
        for _, fn in cases[lib]:
            for _ in range(20):
                fn()
    for _ in range(rounds):
        for lib in cases:
            for k, (_, fn) in enumerate(cases[lib]):
                best[lib][k] = min(best[lib][k], per_call_us(fn, calls))
    return [(name, best[tgrad][k], best[torch][k]) for k, (name, _) in enumerate(cases[tgrad])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(machine())
    rows = [(name, f"{t:.1f}", f"{p:.1f}", f"{t / p:.1f}x") for name, t, p in measure(args.calls, args.rounds)]
    print(table(rows, ("op (small tensors, CPU time)", "tgrad us/call", "PyTorch us/call", "ratio")))


if __name__ == "__main__":
    main()
