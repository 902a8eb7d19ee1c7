"""Timing helpers shared by the benchmarks: medians after warm-up, the same way for tgrad and torch.
Importing it makes ``import tgrad`` work from a bare checkout (``bare_checkout``)."""
from __future__ import annotations

import os
import platform
import statistics
import time

# One BLAS thread unless told otherwise, set before numpy loads OpenBLAS (import this module
# first): tgrad's interpreted tl.dot calls numpy's BLAS on small tiles, and on a busy 2-core
# machine a multithreaded OpenBLAS call waits for a descheduled worker thread, up to 100x longer.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import triton  # noqa: E402

from bare_checkout import ROOT, ensure_tgrad_importable  # noqa: E402

ensure_tgrad_importable()


def sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def time_ms(fn, device: str, repeats: int = 10, warmup: int = 2, clock=time.perf_counter) -> float:
    """Median wall time of ``fn()`` in ms. On CUDA, triton.testing.do_bench (it flushes L2 and
    synchronises); on the CPU, ``clock`` around each call (``time.process_time``: this process's CPU
    time, which other jobs on a shared machine do not inflate)."""
    if device == "cuda":
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        samples.append((clock() - t0) * 1e3)
    return statistics.median(samples)


def machine() -> str:
    import tgrad  # noqa: F401 (version below)
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs{load}, "
            f"{torch.get_num_threads()} torch threads, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
            f"{gpu}; python {platform.python_version()}, torch {torch.__version__}, triton {triton.__version__}")


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths))
    out = [line, "-|-".join("-" * w for w in widths)]
    out += [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)
