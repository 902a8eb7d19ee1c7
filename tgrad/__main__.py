"""``python -m tgrad``: run an unmodified PyTorch program with ``torch`` resolved to tgrad.

    python -m tgrad SCRIPT [ARGS...]       run a script (as ``python SCRIPT ARGS...``)
    python -m tgrad -m MODULE [ARGS...]    run a module (as ``python -m MODULE ARGS...``)
    python -m tgrad -c CODE [ARGS...]      run a string of code
    python -m tgrad -- PROGRAM [ARGS...]   run a Python program found on PATH, e.g. ``pytest``

In the program's own code (and the user modules it imports) ``import torch`` gives tgrad; tgrad
and the libraries keep the real torch. See ``tgrad.dropin``.
"""
from __future__ import annotations

import importlib.util
import os
import runpy
import shutil
import sys

from . import dropin

USAGE = __doc__.split("\n\n")[1]


def _run_script(path, args):
    sys.argv = [path] + args
    sys.path[0] = os.path.dirname(os.path.abspath(path))
    runpy.run_path(path, run_name="__main__")


def _run_module(name, args):
    sys.argv = [name] + args  # runpy puts the module's file in argv[0]
    sys.path[0] = os.getcwd()
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _run_code(code, args):
    sys.argv = ["-c"] + args
    sys.path[0] = ""
    sys.modules["__main__"] = type(sys)("__main__")
    main = sys.modules["__main__"].__dict__
    exec(compile(code, "<string>", "exec"), main)


def _is_python_file(path):
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return path.endswith(".py") or (first.startswith(b"#!") and b"python" in first)


def _is_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    dropin.install()
    head, rest = argv[0], argv[1:]
    if head == "-m" and rest:
        _run_module(rest[0], rest[1:])
    elif head == "-c" and rest:
        _run_code(rest[0], rest[1:])
    elif head == "--" and rest:
        prog, args = rest[0], rest[1:]
        path = prog if os.path.exists(prog) else shutil.which(prog)
        if path and _is_python_file(path):
            _run_script(path, args)
        elif "/" not in prog and _is_module(prog):
            _run_module(prog, args)  # e.g. a shell wrapper on PATH for pytest: run the module itself
        else:
            print(f"python -m tgrad: {prog!r} is not a Python program", file=sys.stderr)
            return 2
    elif head.startswith("-"):
        print(f"python -m tgrad: unknown option {head!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    else:
        if not os.path.exists(head):
            print(f"python -m tgrad: can't open file {head!r}: No such file or directory", file=sys.stderr)
            return 2
        _run_script(head, rest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
