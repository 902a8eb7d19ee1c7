"""The trace cache's command line (``kernels/runtime/trace_cache.py``):

    python -m tgrad.kernels.cache info    # its directory, size bound, and per environment its kernels, traces, bytes
    python -m tgrad.kernels.cache clear   # remove every stored trace
"""
from __future__ import annotations

import argparse
import sys

from .runtime import trace_cache


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tgrad.kernels.cache", description="tgrad's on-disk trace cache")
    p.add_argument("command", choices=["info", "clear"], help="info: what it holds; clear: remove it all")
    p.add_argument("--dir", default=None, help="the cache directory (default: TGRAD_CACHE_DIR or ~/.cache/tgrad)")
    args = p.parse_args(argv)
    if args.command == "clear":
        freed = trace_cache.clear(args.dir)
        print(f"cleared {trace_cache.info(args.dir)['dir']}: {freed / 1e6:.1f} MB freed")
        return 0
    report = trace_cache.info(args.dir)
    state = "on" if report["enabled"] else "off (TGRAD_CACHE=0 or TGRAD_CACHE_DIR=\"\")"
    print(f"trace cache: {report['dir']} ({state}), bounded to {report['max_bytes'] / 1e6:.0f} MB")
    if not report["environments"]:
        print("  empty")
    for env, e in report["environments"].items():
        mark = " (this environment)" if env == report["current"] else ""
        print(f"  {env}{mark}: {e['kernels']} kernels, {e['traces']} traces, {e['bytes'] / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
