"""Every private name of Triton's interpreter that tgrad's CPU path uses, in one place.

Triton's interpreter has no public API for what the CPU launcher (``kernels/runtime/interpreter.py``) and
the recording executor (``kernels/runtime/recorder.py``, ``kernels/runtime/trace.py``) do: run a rewritten kernel
under the language patch, build argument handles, wrap the builder, replay numpy loads and stores.
These names move between Triton releases, so they are imported here, on the first CPU launch (not
by ``import tgrad``: CUDA-only programs never need them), and checked against the versions tested.
``pyproject.toml`` bounds Triton to the same versions.
"""
from __future__ import annotations

import triton

SUPPORTED = ("3.9",)  # major.minor of the Triton releases the CPU executor is tested with


def _version_error(detail: str) -> RuntimeError:
    return RuntimeError(
        f"tgrad runs CPU tensors through Triton's interpreter using its private names, tested with Triton "
        f"{', '.join(SUPPORTED)}.x; the installed Triton is {triton.__version__} ({detail}). Install a supported "
        f"version (pip install 'triton>={SUPPORTED[0]},<{_next_minor(SUPPORTED[-1])}') or run on CUDA.")


def _next_minor(version: str) -> str:
    major, minor = version.split(".")
    return f"{major}.{int(minor) + 1}"


_installed = ".".join(triton.__version__.split(".")[:2])
if _installed not in SUPPORTED:
    raise _version_error("not a tested version")

try:
    from triton._C.libtriton import interpreter as native  # C++ load/store/atomics on raw addresses
    from triton._utils import _tuple_create as tuple_create
    from triton.runtime import interpreter as module
    from triton.runtime.interpreter import _MISSING as MISSING
    from triton.runtime.interpreter import InterpretedFunction, InterpreterBuilder, InterpreterError, TensorHandle
    from triton.runtime.interpreter import _get_np_dtype as get_np_dtype
    from triton.runtime.interpreter import _implicit_cvt as implicit_cvt
    from triton.runtime.interpreter import _patch_lang as patch_lang
    from triton.runtime.interpreter import interpreter_builder, interpreter_semantic
    from triton.runtime.jit import JITFunction
    from triton.runtime.jit import _normalize_ty as normalize_ty
except ImportError as e:  # pragma: no cover - only on an untested Triton
    raise _version_error(f"missing {e.name or e}") from e

__all__ = ["SUPPORTED", "native", "tuple_create", "module", "MISSING", "InterpretedFunction", "InterpreterBuilder",
           "InterpreterError", "TensorHandle", "get_np_dtype", "implicit_cvt", "patch_lang", "interpreter_builder",
           "interpreter_semantic",
           "JITFunction", "normalize_ty"]
