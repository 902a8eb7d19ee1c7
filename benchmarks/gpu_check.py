"""The GPU run in one script: the issue's GPU benchmark against PyTorch, then the test suite on CUDA.

    python benchmarks/gpu_check.py [--json PATH] [--tests cuda|all|none] [--budget-s 450] [--only SECTIONS]
    python benchmarks/gpu_check.py --dry-run      # tiny sizes on the CPU: checks the script itself

Installs nothing (a bare checkout with torch and triton is enough: ``common`` makes ``tgrad``
importable) and keeps to ``--budget-s`` (default 450 s, under the 8 minutes allowed): each section
is skipped once the budget is spent. The JSON is rewritten after every section, so a run stopped
from outside still returns what it measured.

Sections, each a table and a ``targets`` entry in the JSON (ratios are tgrad / PyTorch time unless
said otherwise; timings are ``triton.testing.do_bench`` medians):
1. matmul fp16 / bf16 / fp32 (TF32 allowed on both sides) at 4096^3: TFLOP/s against cuBLAS
   (target: >= 0.9x cuBLAS throughput).
2. elementwise and reductions at 2^26 elements (fp32): achieved bytes/s as a fraction of a
   measured device-to-device copy, and the time against PyTorch (target: >= 0.9x PyTorch).
3. softmax, log_softmax, layer_norm, cross_entropy forward+backward at (8192, 4096) and
   (8192, 32768), fp32 and bf16 (target: at least as fast as PyTorch), and cross_entropy's peak
   memory at V = 32768 against PyTorch's (target: <= 0.5x).
4. the MLP training step 784-1024-1024-10, batch 256, fp32 and bf16 (target: within 1.2x), and
   the same step captured once as a CUDA graph and replayed (target: <= 0.5x PyTorch eager).
5. the sequence models (benchmarks/sequence_models.py): the LSTM, attention and transformer
   block steps, and attention's memory at L = 4096.
6. the per-op table (benchmarks/ops.py) at its GPU sizes, and the optimizer step.
7. ``pytest tests -q`` on the GPU (``-k cuda`` by default: the CUDA-device tests; the CPU ones
   run in CI), every failure listed, in parallel processes (pytest-xdist) where installed. By
   default the tests run first, within ``--test-budget-s``: they are compile-bound, and the
   benchmarks' timings are then taken with the kernels compiled and the GPU otherwise idle.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, machine, table, time_ms  # noqa: E402  (first: it makes tgrad importable)

import torch  # noqa: E402
import triton  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn.functional as TF  # noqa: E402

T0 = time.perf_counter()
RESULTS: dict = {"sections": {}, "targets": [], "errors": []}


def elapsed():
    return time.perf_counter() - T0


def _target(name, value, goal, ok):
    RESULTS["targets"].append({"target": name, "value": value, "goal": goal, "met": bool(ok)})


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _pair(shape, dtype, device, grad=False, seed=0, scale=1.0):
    """The same data as a torch tensor and a tgrad tensor (separate storage)."""
    gen = torch.Generator().manual_seed(seed)
    base = (torch.randn(shape, generator=gen) * scale).to(device=device, dtype=dtype)
    return base.clone().requires_grad_(grad), tgrad.from_torch(base.clone()).requires_grad_(grad)


def _save(path):
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(RESULTS, indent=1))


def _name(dtype):
    return str(dtype).replace("torch.", "")


# ----------------------------------------------------------------------------- 1. matmul

def section_matmul(device, n):
    rows = []
    dtypes = [torch.float16, torch.bfloat16, torch.float32] if device == "cuda" else [torch.float16, torch.float32]
    for dtype in dtypes:
        tf32 = dtype == torch.float32 and device == "cuda"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        tgrad.backends.cuda.matmul.allow_tf32 = tf32
        (a, ta), (b, tb) = _pair((n, n), dtype, device, seed=1), _pair((n, n), dtype, device, seed=2)
        with tgrad.no_grad():
            out = (ta @ tb)._data
        err = (out.float() - (a @ b).float()).abs().max().item()
        t_ms = time_ms(lambda: ta @ tb, device)
        p_ms = time_ms(lambda: a @ b, device)
        flops = 2 * n ** 3
        ratio = p_ms / t_ms  # throughput ratio tgrad / cuBLAS
        label = _name(dtype) + (" (TF32)" if tf32 else "")
        rows.append((f"matmul {n}^3", label, f"{t_ms:.3f}", f"{p_ms:.3f}", f"{flops / t_ms / 1e9:.1f}",
                     f"{flops / p_ms / 1e9:.1f}", f"{ratio:.2f}x", f"{err:.2e}"))
        _target(f"matmul {n}^3 {label} throughput vs cuBLAS", round(ratio, 3), ">= 0.9", ratio >= 0.9)
        if tf32:  # wgmma reads tf32 K-major only: the same product with B stored K-major (column-major)
            tb_k = tgrad.from_torch(b.t().contiguous()).t()
            k_ms = time_ms(lambda: ta @ tb_k, device)
            rows.append((f"matmul {n}^3", label + ", B K-major", f"{k_ms:.3f}", f"{p_ms:.3f}",
                         f"{flops / k_ms / 1e9:.1f}", f"{flops / p_ms / 1e9:.1f}", f"{p_ms / k_ms:.2f}x", "-"))
    torch.backends.cuda.matmul.allow_tf32 = False
    tgrad.backends.cuda.matmul.allow_tf32 = False
    print(table(rows, ("op", "dtype", "tgrad ms", "cuBLAS ms", "tgrad TFLOP/s", "cuBLAS TFLOP/s",
                       "throughput ratio", "max |diff|")))
    return rows


# ----------------------------------------------------------------------------- 2. bandwidth

def section_bandwidth(device, n):
    dtype = torch.float32
    (x, tx), (y, ty) = _pair((n,), dtype, device, seed=3), _pair((n,), dtype, device, seed=4)
    dst = torch.empty_like(x)
    copy_ms = time_ms(lambda: dst.copy_(x), device)
    copy_bps = 2 * 4 * n / (copy_ms * 1e-3)
    cases = [  # name, tgrad fn, torch fn, bytes moved per element
        ("add", lambda: tx + ty, lambda: x + y, 12),
        ("mul by scalar", lambda: tx * 1.5, lambda: x * 1.5, 8),
        ("exp", lambda: tx.exp(), lambda: x.exp(), 8),
        ("gelu", lambda: TF.gelu(tx), lambda: torch.nn.functional.gelu(x), 8),
        ("sum", lambda: tx.sum(), lambda: x.sum(), 4),
        ("amax", lambda: tx.amax(), lambda: x.amax(), 4),
        ("sum over rows", lambda: tx.view(-1, 4096).sum(1), lambda: x.view(-1, 4096).sum(1), 4),
    ]
    rows = [("copy (device to device)", "-", f"{copy_ms:.3f}", f"{copy_ms:.3f}", f"{copy_bps / 1e9:.0f}", "1.00", "-")]
    with tgrad.no_grad():
        for name, tfn, pfn, per in cases:
            t_ms, p_ms = time_ms(tfn, device), time_ms(pfn, device)
            bps = per * n / (t_ms * 1e-3)
            ratio = p_ms / t_ms  # speed relative to PyTorch
            rows.append((name, f"2^{n.bit_length() - 1}", f"{t_ms:.3f}", f"{p_ms:.3f}", f"{bps / 1e9:.0f}",
                         f"{bps / copy_bps:.2f}", f"{ratio:.2f}x"))
            _target(f"{name} at 2^{n.bit_length() - 1} speed vs PyTorch", round(ratio, 3), ">= 0.9", ratio >= 0.9)
    print(table(rows, ("op", "elements", "tgrad ms", "PyTorch ms", "tgrad GB/s", "fraction of copy",
                       "speed vs PyTorch")))
    return rows


# ----------------------------------------------------------------------------- 3. row ops

def _row_ops():
    return [
        ("softmax", lambda L, x, w, b: L.softmax(x, -1)),
        ("log_softmax", lambda L, x, w, b: L.log_softmax(x, -1)),
        ("layer_norm", lambda L, x, w, b: L.layer_norm(x, (x.shape[-1],), w, b)),
    ]


def _peak_bytes(fn, device):
    """Peak allocation above what was allocated before ``fn`` ran (CUDA only)."""
    if device != "cuda":
        return None
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def section_rows(device, shapes, dtypes):
    rows = []
    for dtype in dtypes:
        for shape in shapes:
            R, C = shape
            (x, tx) = _pair(shape, dtype, device, grad=True, seed=5)
            (w, tw) = _pair((C,), dtype, device, grad=True, seed=6)
            (b, tb) = _pair((C,), dtype, device, grad=True, seed=7)
            (g, tg) = _pair(shape, dtype, device, seed=8)
            for name, fn in _row_ops():
                def tstep(fn=fn):
                    fn(TF, tx, tw, tb).backward(tg)

                def pstep(fn=fn):
                    fn(torch.nn.functional, x, w, b).backward(g)
                t_ms, p_ms = time_ms(tstep, device), time_ms(pstep, device)
                ratio = p_ms / t_ms
                rows.append((name, f"{R}x{C}", _name(dtype), "fwd+bwd", f"{t_ms:.3f}", f"{p_ms:.3f}", f"{ratio:.2f}x", ""))
                _target(f"{name} {R}x{C} {_name(dtype)} fwd+bwd speed vs PyTorch", round(ratio, 3), ">= 1.0",
                        ratio >= 1.0)
            gen = torch.Generator().manual_seed(9)
            target = torch.randint(0, C, (R,), generator=gen).to(device)
            ttarget = tgrad.from_torch(target.clone())

            def tce():
                TF.cross_entropy(tx, ttarget).backward()

            def pce():
                torch.nn.functional.cross_entropy(x, target).backward()
            t_ms, p_ms = time_ms(tce, device), time_ms(pce, device)
            tx.grad = None
            x.grad = None
            t_mem, p_mem = _peak_bytes(tce, device), _peak_bytes(pce, device)
            mem = f"{t_mem / 2**20:.0f} / {p_mem / 2**20:.0f} MiB = {t_mem / p_mem:.2f}x" if t_mem else "n/a (CPU)"
            ratio = p_ms / t_ms
            rows.append(("cross_entropy", f"{R}x{C}", _name(dtype), "fwd+bwd", f"{t_ms:.3f}", f"{p_ms:.3f}",
                         f"{ratio:.2f}x", mem))
            _target(f"cross_entropy {R}x{C} {_name(dtype)} fwd+bwd speed vs PyTorch", round(ratio, 3), ">= 1.0",
                    ratio >= 1.0)
            if t_mem and C == max(s[1] for s in shapes):
                _target(f"cross_entropy {R}x{C} {_name(dtype)} peak memory vs PyTorch", round(t_mem / p_mem, 3),
                        "<= 0.5", t_mem / p_mem <= 0.5)
            del x, tx, g, tg
    print(table(rows, ("op", "shape", "dtype", "pass", "tgrad ms", "PyTorch ms", "speed vs PyTorch",
                       "peak memory tgrad / PyTorch")))
    return rows


# ----------------------------------------------------------------------------- 4-5. steps, ops table

def section_mlp(device, sizes, batch, dtypes):
    import mlp_step
    rows = []
    for dtype in dtypes:
        r, counts = mlp_step.bench(device, dtype, 5, sizes, batch)
        rows += r
        t, p, g = float(r[0][3]), float(r[0][4]), float(r[1][3])
        _target(f"MLP step {'-'.join(map(str, sizes))} batch {batch} {_name(dtype)} time vs PyTorch eager",
                round(t / p, 3), "<= 1.2", t / p <= 1.2)
        _target(f"MLP step {'-'.join(map(str, sizes))} batch {batch} {_name(dtype)} graph replay vs PyTorch eager",
                round(g / p, 3), "<= 0.5", g / p <= 0.5)
    print(table(rows, mlp_step.HEADER))
    return rows


def section_sequence(device):
    import sequence_models
    rows, header, mem_rows, mem_header, mem_title = sequence_models.bench(device, 20 if device == "cuda" else 2)
    print(table(rows, header))
    print(mem_title)
    print(table(mem_rows, mem_header))
    return rows + [[mem_title]] + mem_rows


def section_ops_table(device, dtypes):
    import ops
    import optim_step
    rows = []
    for dtype in dtypes:
        rows += ops.bench(device, dtype, 5)
    print(table(rows, ("op", "shape", "dtype", "pass", "tgrad ms", "PyTorch ms", "ratio")))
    opt_rows = []
    for dtype in dtypes:
        opt_rows += optim_step.bench(device, dtype, 5)
    print(table(opt_rows, optim_step.HEADER))
    return rows + opt_rows


# ----------------------------------------------------------------------------- 6. tests

def _has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _xdist_workers():
    if not _has("xdist"):  # pytest-xdist: the GPU image has it; CI does not need it
        return 0
    return max(2, min(8, (os.cpu_count() or 2) - 2))


def run_tests(which, seconds, log=None):
    if which == "none" or seconds < 30:
        print(f"# tests: skipped ({'asked' if which == 'none' else f'{seconds:.0f} s left'})")
        return {"skipped": True}
    args = ["tests", "-v", "-p", "no:cacheprovider", "-rfE", "--maxfail=60"] + (["-k", "cuda"] if which == "cuda" else [])
    workers = _xdist_workers()
    if workers:
        args += ["-n", str(workers)]
    if _has("pytest_timeout"):
        args += ["--timeout", "150"]
    # every process (xdist's workers too) makes a bare checkout's tgrad importable first; only
    # that module joins the path (train_examples/ has a ``common`` of its own)
    args += ["-p", "bare_checkout"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "benchmarks"),
                                                                    os.environ.get("PYTHONPATH")])))
    print(f"# tests: pytest {' '.join(args)} (time limit {seconds:.0f} s)", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=seconds, env=env)
        out, rc, timed_out = proc.stdout + proc.stderr, proc.returncode, False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, timed_out = None, True
    if log:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        Path(log).write_text(out)
    lines = out.strip().splitlines()
    failed = list(dict.fromkeys(line for line in lines if line.startswith(("FAILED", "ERROR"))))
    if timed_out:  # no summary was printed: the per-test lines say what failed so far
        failed = [line for line in lines if " FAILED " in line or " ERROR " in line]
    tail = "\n".join(lines[-25:])
    print("\n".join(failed[:80]) if failed else "")
    print(tail if not failed else "\n".join(lines[-3:]))
    summary = {"returncode": rc, "timed_out": timed_out, "seconds": round(time.perf_counter() - t0, 1),
               "failed": failed, "tail": tail}
    _target(f"pytest {' '.join(args)}", "timed out" if timed_out else f"exit {rc}", "exit 0", rc == 0)
    return summary


# ----------------------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU (checks the script, measures nothing)")
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--tests", default="cuda", choices=["cuda", "all", "none"])
    p.add_argument("--budget-s", type=float, default=450.0, help="whole-run time limit (default 450)")
    p.add_argument("--bench-share", type=float, default=0.5, help="fraction of the budget the benchmarks may use "
                   "(with --tests-last)")
    p.add_argument("--test-budget-s", type=float, default=200.0, help="the tests' time limit when they run first")
    p.add_argument("--tests-last", action="store_true", help="benchmarks first, tests with the time left")
    p.add_argument("--test-log", default=None, help="the whole pytest output goes here")
    p.add_argument("--only", default=None, help="comma-separated sections to run (matmul, bandwidth, rows, "
                   "mlp_step, sequence, ops_table)")
    args = p.parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("gpu_check: no CUDA device (use --dry-run to check the script on the CPU)")
    dry = args.dry_run
    float_dtypes = [torch.float32] if dry else [torch.float32, torch.bfloat16]
    RESULTS["machine"] = machine()
    RESULTS["device"] = device
    print(f"# gpu_check on {device}: {RESULTS['machine']}", flush=True)
    sections = [
        ("matmul", lambda: section_matmul(device, 64 if dry else 4096)),
        ("bandwidth", lambda: section_bandwidth(device, 1 << 12 if dry else 1 << 26)),
        ("rows", lambda: section_rows(device, [(8, 64), (8, 256)] if dry else [(8192, 4096), (8192, 32768)],
                                      float_dtypes)),
        ("mlp_step", lambda: section_mlp(device, [32, 64, 64, 10] if dry else [784, 1024, 1024, 10],
                                         16 if dry else 256, float_dtypes)),
        ("sequence", lambda: section_sequence(device)),
        ("ops_table", lambda: section_ops_table(device, float_dtypes)),
    ]
    if args.only:
        keep = set(args.only.split(","))
        sections = [(name, run) for name, run in sections if name in keep]
    tests = "none" if dry and args.tests == "cuda" else args.tests
    if not args.tests_last:
        RESULTS["tests"] = run_tests(tests, min(args.test_budget_s, args.budget_s - 60), args.test_log)
        _save(args.json)
    bench_budget = args.budget_s - 10 if not args.tests_last else args.budget_s * args.bench_share
    for name, run in sections:
        if elapsed() > bench_budget:
            print(f"# {name}: skipped, the benchmarks' {bench_budget:.0f} s are spent", flush=True)
            RESULTS["sections"][name] = "skipped (time)"
            continue
        t0 = elapsed()
        try:
            rows = run()
            RESULTS["sections"][name] = {"rows": [list(map(str, r)) for r in rows], "seconds": round(elapsed() - t0, 1)}
        except Exception as e:  # one section's failure must not cost the others
            traceback.print_exc()
            RESULTS["errors"].append(f"{name}: {type(e).__name__}: {e}")
            RESULTS["sections"][name] = f"error: {type(e).__name__}: {e}"
        if device == "cuda":
            torch.cuda.empty_cache()
        print(f"# {name}: {elapsed() - t0:.0f} s (total {elapsed():.0f} s)", flush=True)
        _save(args.json)
    if args.tests_last:
        RESULTS["tests"] = run_tests(tests, args.budget_s - elapsed() - 10, args.test_log)
    met = sum(t["met"] for t in RESULTS["targets"])
    print(f"# targets met: {met} / {len(RESULTS['targets'])}")
    for t in RESULTS["targets"]:
        print(f"  {'ok ' if t['met'] else 'MISS'} {t['target']}: {t['value']} (goal {t['goal']})")
    print(f"# total {elapsed():.0f} s")
    _save(args.json)
    return RESULTS


if __name__ == "__main__":
    main()
