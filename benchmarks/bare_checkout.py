"""Making ``import tgrad`` work from a bare checkout (a GPU machine where nothing is installed).
Also a pytest plugin (``-p bare_checkout`` with benchmarks/ on the path): gpu_check's test run
loads it in every process, xdist's workers too."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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
