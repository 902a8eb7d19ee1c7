"""The per-family table docs/gpu.md keeps, from a ``--compile-report`` JSON.

    python tests/support/compile_report_table.py REPORT.json [REPORT.json ...]

A kernel's family is the module of tgrad.kernels that defines it (``pointwise``, ``matmul``,
``jacobi``, ...); kernels defined elsewhere (the tests' own) are one row. Each row: the family's
kernels, its configurations per architecture, failed compilations, and the most registers, spill
bytes (local memory and stack frame) and shared memory (KB, static and dynamic) of any of its
configurations, for sm_90 / sm_80. Several reports (the suite run in parts, side by side) make one
table: their configurations add up (one that two parts both launched counts in each), the rest is
the most of any.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from triton.runtime.jit import JITFunction

import tgrad.kernels

OTHERS = "tests' own"
ARCHS = (90, 80)


def families() -> dict:
    """kernel name -> the stem of the tgrad.kernels module that defines it (with its package where
    the stem names a package too: losses.elementwise)."""
    found = {}
    root = Path(tgrad.kernels.__file__).parent
    packages = {p.parent.name for p in root.rglob("__init__.py")}
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        name = ".".join(("tgrad.kernels",) + path.relative_to(root).with_suffix("").parts)
        module = __import__(name, fromlist=["_"])
        for kernel, value in vars(module).items():
            if isinstance(value, JITFunction) and value.fn.__module__ == module.__name__:
                found[kernel] = f"{path.parent.name}.{path.stem}" if path.stem in packages else path.stem
    return found


def rows(report, family_of: dict) -> dict:
    """family -> {'kernels', 'configurations', 'failures', 'registers', 'spill_bytes', 'shared'},
    the last four of them per architecture ({arch: value}), from a report or a list of them."""
    table: dict = {}
    for key, row in (item for part in ([report] if isinstance(report, dict) else report) for item in part.items()):
        kernel, arch = key.rsplit(" sm_", 1)
        arch = int(arch)
        fam = table.setdefault(family_of.get(kernel, OTHERS), {
            "kernels": set(), "configurations": {}, "failures": 0, "registers": {}, "spill_bytes": {}, "shared": {}})
        fam["kernels"].add(kernel)
        fam["configurations"][arch] = fam["configurations"].get(arch, 0) + row["configurations"]
        fam["failures"] += row["failures"]
        for name in ("registers", "spill_bytes", "shared"):
            fam[name][arch] = max(fam[name].get(arch, 0), row.get(name, 0))
    return table


def markdown(table: dict) -> str:
    def pair(values, scale=1):
        return " / ".join(str(round(values.get(a, 0) / scale)) for a in ARCHS)

    lines = ["| family | kernels | sm_90 configs | sm_80 configs | failures | max registers (90/80) "
             "| spill bytes (90/80) | max shared KB (90/80) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in sorted(table, key=lambda n: (n == OTHERS, n)):
        fam = table[name]
        lines.append(f"| {name} | {len(fam['kernels'])} | {fam['configurations'].get(90, 0)} | "
                     f"{fam['configurations'].get(80, 0)} | {fam['failures']} | {pair(fam['registers'])} | "
                     f"{pair(fam['spill_bytes'])} | {pair(fam['shared'], 1024)} |")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        raise SystemExit("usage: python tests/support/compile_report_table.py REPORT.json [REPORT.json ...]")
    reports = []
    for path in argv:
        with open(path) as f:
            reports.append(json.load(f))
    print(markdown(rows(reports, families())))


if __name__ == "__main__":
    main()
