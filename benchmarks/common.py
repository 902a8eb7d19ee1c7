"""Timing helpers shared by the benchmarks: medians after warm-up, the same way for tgrad and torch;
and making ``import tgrad`` work from a bare checkout (a GPU machine where nothing is installed)."""
from __future__ import annotations

import importlib.util
import os
import platform
import statistics
import sys
import time
from pathlib import Path

# One BLAS thread unless told otherwise, set before numpy loads OpenBLAS (import this module
# first): tgrad's interpreted tl.dot calls numpy's BLAS on small tiles, and on a busy 2-core
# machine a multithreaded OpenBLAS call waits for a descheduled worker thread, up to 100x longer.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import triton  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def ensure_tgrad_importable():
    """Make ``import tgrad`` work without ``pip install``: the package maps ``tgrad.kernels`` to
    ``kernels/`` and ``tgrad.nn``/``tgrad.optim``/``tgrad.utils`` to ``nn/``, ``nn/optim``,
    ``nn/utils`` (pyproject's package-dir), so a bare checkout needs the same search path."""
    try:
        if importlib.util.find_spec("tgrad.kernels") is not None:
            return
    except ImportError:  # a bare checkout's tgrad/ found on the path fails at ``tgrad.kernels``
        sys.modules.pop("tgrad", None)
    spec = importlib.util.spec_from_file_location(
        "tgrad", ROOT / "tgrad" / "__init__.py",
        submodule_search_locations=[str(ROOT / "tgrad"), str(ROOT), str(ROOT / "nn")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["tgrad"] = module
    spec.loader.exec_module(module)


ensure_tgrad_importable()


def sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def time_ms(fn, device: str, repeats: int = 10, warmup: int = 2) -> float:
    """Median wall time of ``fn()`` in ms. On CUDA, triton.testing.do_bench (it flushes L2 and
    synchronises); on the CPU, perf_counter around each call."""
    if device == "cuda":
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
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
