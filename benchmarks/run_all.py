"""Every benchmark table for one device, one after the other.

    python benchmarks/run_all.py [--device cpu|cuda] [--quick]

CPU: the per-op table, the moons demo against PyTorch, tinygrad and micrograd, the optimizer step,
the MLP training step and the digits CNN step against PyTorch and tinygrad, all single-threaded (``--threads 1``: torch and numpy's BLAS), so a shared
machine's other load moves the numbers less. ``--quick`` runs fewer repeats and moons steps.
On a GPU, ``benchmarks/gpu_check.py`` is the fuller run (issue sizes, bandwidth, memory, tests)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (first: it pins BLAS threads and makes tgrad importable)

import torch  # noqa: E402

import cnn_step  # noqa: E402
import mlp_step  # noqa: E402
import moons  # noqa: E402
import ops  # noqa: E402
import optim_step  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    repeats = "3" if args.quick else "7"
    dev = ["--device", args.device]
    threads = ["--threads", "1"] if args.device == "cpu" else []
    if threads:
        torch.set_num_threads(1)
    ops.main(dev + ["--repeats", repeats])
    print()
    moons.main(dev + threads + ["--steps", "30" if args.quick else "100",
                                "--micrograd-steps", "2" if args.quick else "5", "--by-kernel"])
    print()
    optim_step.main(dev + threads + ["--repeats", repeats])
    print()
    mlp_step.main(dev + threads + ["--repeats", repeats, "--by-kernel"])
    print()
    cnn_step.main(dev + threads + ["--steps", "10" if args.quick else "30"])


if __name__ == "__main__":
    main()
