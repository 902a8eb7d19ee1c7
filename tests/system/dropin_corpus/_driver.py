"""Runs corpus programs one after another in this process and writes what each printed as JSON.

    python _driver.py OUT.json PROG.py ...             (real PyTorch)
    python -m tgrad _driver.py OUT.json PROG.py ...    (through tgrad's drop-in runner)

One process for all programs saves a torch/tgrad start-up per program; each program still runs as
``__main__`` in fresh globals, with the default dtype and grad mode reset before it.
"""
import contextlib
import io
import json
import os
import runpy
import sys
import time
import traceback

import torch


def run(path):
    buf = io.StringIO()
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    start = time.perf_counter()
    error = None
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(path, run_name="__main__")
    except BaseException:  # noqa: BLE001  (a program's failure is data for the test)
        error = traceback.format_exc()
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    return {"stdout": buf.getvalue(), "error": error, "seconds": time.perf_counter() - start}


if __name__ == "__main__":
    out, progs = sys.argv[1], sys.argv[2:]
    results = {os.path.basename(p): run(p) for p in progs}
    with open(out, "w") as f:
        json.dump(results, f)
