"""Launches at GPU-plausible shapes, planned as a GPU would make them and compiled for sm_90/sm_80
without running them: registers, spills and grids per kernel and shape.

``planned()`` configures launches as CUDA ones (``as_cuda()``) and replaces the CPU executor by one
that runs nothing, so a forward and backward at 2 x 256 x 224 x 224 costs only the allocations (the
values computed are garbage, which no launch decision reads). ``SPILL_CASES`` are the shapes issue
23 names (conv 3x3/5x5/7x7 at 64-256 channels and 32-224 px, pools, indexing of 4096 x 1024,
attention at head dims 64/128 and L 1024-4096, in fp32/fp16/bf16); ``probe`` compiles each distinct
launch of them and reports its resource usage. Run as a script for the table:

    python tests/support/gpu_shapes.py [--archs 90,80] [--only conv] [--json out.json]
"""
import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tgrad  # noqa: E402
import tgrad.nn.functional as F  # noqa: E402
from tgrad.kernels.runtime import launch as launch_module  # noqa: E402
from tgrad.kernels.runtime.cuda_compile import GRID_LIMITS, CompileObserver, specialise  # noqa: E402
from tgrad.kernels.runtime.launch import launch_observers  # noqa: E402
from tgrad.kernels.runtime.target import as_cuda  # noqa: E402


class _RunsNothing:
    """A CPU executor that runs no launch: planning needs the configurations, not the values."""

    @staticmethod
    def run(kernel, grid, args, meta, keep_alive, recording, site):
        return None


@contextmanager
def planned(observer):
    """Inside: CPU launches configured as CUDA ones, shown to ``observer`` and not run."""
    saved = launch_module._cpu_executor
    launch_module._cpu_executor = _RunsNothing
    launch_observers.append(observer)
    try:
        with as_cuda():
            yield
    finally:
        launch_observers.remove(observer)
        launch_module._cpu_executor = saved


def _t(*shape, dtype=tgrad.float32, grad=True):
    return tgrad.empty(*shape, dtype=dtype, requires_grad=grad)


def _backward(y):
    y.backward(tgrad.empty(*y.shape, dtype=y.dtype))


def conv_case(c_in, c_out, k, px, dtype, stride=1, n=2):
    def run():
        x, w, b = _t(n, c_in, px, px, dtype=dtype), _t(c_out, c_in, k, k, dtype=dtype), _t(c_out, dtype=dtype)
        _backward(F.conv2d(x, w, b, stride=stride, padding=k // 2))
    return f"conv2d {c_in}->{c_out} {k}x{k} s{stride} {px}px {_name(dtype)}", run


def pool_case(kind, c, px, dtype, n=2):
    def run():
        x = _t(n, c, px, px, dtype=dtype)
        if kind == "max":
            _backward(F.max_pool2d(x, 3, 2, 1))
        elif kind == "avg":
            _backward(F.avg_pool2d(x, 3, 2, 1))
        else:
            _backward(F.adaptive_avg_pool2d(x, 1))
    return f"{kind}_pool2d {n}x{c}x{px}x{px} {_name(dtype)}", run


def index_case(rows, cols, dtype):
    def run():
        x = _t(rows, cols, dtype=dtype)
        idx = tgrad.zeros(rows, dtype=tgrad.int64)
        _backward(x.index_select(0, idx))
        _backward(x[idx, :cols // 2])
        with tgrad.no_grad():
            x.detach()[idx] = tgrad.empty(rows, cols, dtype=dtype)
    return f"index {rows}x{cols} {_name(dtype)}", run


def attention_case(length, head, dtype, causal, heads=8, n=2):
    def run():
        q, k, v = (_t(n, heads, length, head, dtype=dtype) for _ in range(3))
        _backward(F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    return f"attention L{length} E{head} {'causal ' if causal else ''}{_name(dtype)}", run


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


HALF, FLOATS = (tgrad.float16,), (tgrad.float32, tgrad.float16, tgrad.bfloat16)
SPILL_CASES = (
    [conv_case(c, c, k, px, d) for k in (3, 5, 7) for c, px in ((64, 224), (256, 56), (256, 32)) for d in FLOATS[:2]]
    + [conv_case(3, 64, 7, 224, d, stride=2) for d in FLOATS[:2]]
    + [pool_case(kind, 64, 112, d) for kind in ("max", "avg") for d in FLOATS[:2]]
    + [pool_case("adaptive_avg", 512, 7, tgrad.float32)]
    + [index_case(4096, 1024, d) for d in FLOATS[:2]]
    + [attention_case(L, E, d, causal) for E in (64, 128) for L in (1024, 4096) for d in FLOATS
       for causal in (False, True) if L == 1024 or not causal]
)


def probe(cases, archs=(90,), log=None):
    """[{case, kernel, arch, grid, blocks, registers, spill_bytes, shared}] for each distinct
    (case, kernel, specialisation): every launch of ``cases`` planned and compiled."""
    current = [None]
    compiler = CompileObserver(archs=tuple(archs), usage=True, context=lambda: current[0])
    rows, seen = [], set()

    def observe(kernel, grid, args, meta):
        compiler(kernel, grid, args, meta)
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        for arch in archs:
            key = specialise(kernel, args, meta, arch)[0]
            if (current[0], key) in seen:
                continue
            seen.add((current[0], key))
            record = compiler.compiled.get(key, {})
            blocks = {k: v for k, v in meta.items() if k.startswith("BLOCK") or k == "num_warps"}
            row = dict(case=current[0], kernel=kernel.__name__, arch=arch, grid=grid, blocks=blocks,
                       grid_ok=all(g <= limit for g, limit in zip(grid, GRID_LIMITS)),
                       **{k: record.get(k) for k in ("registers", "spill_bytes", "shared", "failed")})
            rows.append(row)
            if log:
                log(row)

    for name, run in cases:
        current[0] = name
        with planned(observe):
            run()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archs", default="90")
    parser.add_argument("--only", default="", help="cases whose name contains this")
    parser.add_argument("--json", default=None)
    opts = parser.parse_args(argv)
    cases = [c for c in SPILL_CASES if opts.only in c[0]]

    def log(row):
        print(f"{row['case']:<40} {row['kernel']:<24} sm_{row['arch']} regs {row['registers']} "
              f"spill {row['spill_bytes']} smem {row['shared']} grid {row['grid']} {row['blocks']}"
              + ("" if row["grid_ok"] else "  GRID OVER CUDA'S LIMITS") + (" FAILED" if row["failed"] else ""),
              flush=True)
    rows = probe(cases, [int(a) for a in opts.archs.split(",")], log)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)
    spills = [r for r in rows if r["spill_bytes"]]
    print(f"{len(rows)} launches, {len(spills)} spilling, {sum(not r['grid_ok'] for r in rows)} over the grid limits")


if __name__ == "__main__":
    main()
