"""How many CPU launch signatures a pytest run makes, and how many would remain if scalars or grids
did not key them: the measure of how often a run pays Triton's interpreter.

    python benchmarks/signature_census.py [--top 15] [--json PATH] -- tests/ops tests/nn [pytest args]

Runs pytest in this process, watching every CPU launch the executor binds (from outside: the
executor's binding is wrapped here), and prints at exit: launches, replayed / recorded /
interpreted, first sightings, the distinct signatures, and how many distinct signatures there
would be with every integer scalar a replay input (keyed by its dtype), and with the grid left out
too, per kernel for the kernels with the most signatures."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (first: it pins BLAS threads and makes tgrad importable)

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tgrad.kernels.runtime import executor, signature  # noqa: E402


def _symbolic(key):
    """The signature with every integer scalar keyed by its dtype and every float by its kind."""
    static, keys = key
    static = tuple("F" if type(a) is tuple and len(a) == 2 and a[0] == "F" else a for a in static)
    return static, tuple(signature._kind(k[1]) if type(k) is tuple else k for k in keys)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv[:split])
    pytest_args = argv[split + 1:] or ["tests/ops", "tests/nn"]

    launches = defaultdict(Counter)  # kernel -> signature -> launches
    original = signature.KernelState.bind

    def bind(self, grid, args_, meta):
        bound = original(self, grid, args_, meta)
        name = self.runner.fn.__name__
        launches[name][bound[0] if bound is not None else ("unkeyed", id(args_))] += 1
        return bound
    signature.KernelState.bind = bind
    before = Counter(executor.replay_counts)
    reasons_before = Counter(executor.fallback_reasons)
    try:
        code = pytest.main(["-q", "-p", "no:cacheprovider"] + pytest_args)
    finally:
        signature.KernelState.bind = original
    counts = Counter(executor.replay_counts)
    counts.subtract(before)
    reasons = Counter(executor.fallback_reasons)
    reasons.subtract(reasons_before)
    first = sum(n for r, n in reasons.items() if r.endswith(": first sighting"))
    exact = sym = nogrid = 0
    rows = []
    for name, sigs in launches.items():
        s = {_symbolic(key) if key[0] != "unkeyed" else key for key in sigs}
        g = {(key[0][1:], key[1]) if key[0] != "unkeyed" else key for key in s}
        exact, sym, nogrid = exact + len(sigs), sym + len(s), nogrid + len(g)
        rows.append((len(sigs), len(s), len(g), sum(sigs.values()), name))
    rows.sort(reverse=True)
    summary = {"pytest_exit": int(code), "bound_launches": sum(sum(c.values()) for c in launches.values()),
               "replayed": counts["replayed"], "recorded": counts["recorded"],
               "interpreted": counts["interpreted"], "first_sightings": first, "kernels": len(launches),
               "signatures": exact, "signatures_scalars_symbolic": sym, "signatures_scalars_grid_symbolic": nogrid,
               "fallback_reasons": {r: n for r, n in reasons.most_common(20) if n}}
    print("\nsignature census:")
    for k, v in summary.items():
        if k != "fallback_reasons":
            print(f"  {k:34s} {v}")
    print("  top fallback reasons:")
    for r, n in list(summary["fallback_reasons"].items())[:12]:
        print(f"    {n:7d}  {r}")
    print(f"  {'kernel':40s} {'sigs':>6s} {'scalars sym':>11s} {'+grid sym':>9s} {'launches':>8s}")
    for n, s, g, total, name in rows[:args.top]:
        print(f"  {name:40s} {n:6d} {s:11d} {g:9d} {total:8d}")
    if args.json:
        summary["kernels_table"] = [dict(zip(("signatures", "scalars_symbolic", "grid_symbolic", "launches", "kernel"),
                                             r)) for r in rows]
        Path(args.json).write_text(json.dumps(summary, indent=1, default=str))
    return code


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
