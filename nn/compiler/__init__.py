"""``tgrad.compiler`` and ``tgrad.compile``, as ``torch.compiler`` and ``torch.compile``.

tgrad's ops are already Triton kernels, launched (and on the CPU replayed) by tgrad's executor, so
``compile`` has no graph to lower: it returns the model or function running the same computation
eagerly, as PyTorch's ``backend="eager"`` does, with PyTorch's wrapper types (a module comes back as
an ``OptimizedModule`` whose state_dict keys carry the ``_orig_mod.`` prefix, as PyTorch's do, so
checkpoints of compiled models move between the two). The arguments are checked as PyTorch checks
them. To capture and replay a fixed-shape step, use ``tgrad.cuda.graph`` / ``tgrad.graphs``.
"""
from __future__ import annotations

import functools

from tgrad.nn.modules.module import Module

__all__ = ["compile", "OptimizedModule", "disable", "is_compiling", "is_dynamo_compiling", "list_backends", "reset"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_BACKENDS = ("aot_eager", "cudagraphs", "eager", "inductor")


class OptimizedModule(Module):
    """A compiled module: calls ``_orig_mod`` (its parameters, buffers and attributes are the original's)."""

    def __init__(self, mod: Module):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def _check(backend, mode, options):
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, see `torch._dynamo.list_backends()` for available "
                           "backends.")
    if not (backend is None or isinstance(backend, str) or callable(backend)):
        raise RuntimeError(f"Invalid backend: {backend!r}")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None, name=None,
            disable=False, **kwargs):
    """``torch.compile``: the same computation, run eagerly (see the module's docstring)."""
    _check(backend, mode, options)
    if model is None:  # @compile(mode=...) as a decorator factory
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, name=name, disable=disable, **kwargs)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)

    @functools.wraps(model)
    def compiled(*args, **kw):
        return model(*args, **kw)
    return compiled


def disable(fn=None, recursive=True, *, reason=None):
    """``torch.compiler.disable``: nothing is compiled in tgrad, so the function comes back as it is."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    return fn


def is_compiling() -> bool:
    return False


is_dynamo_compiling = is_compiling


def list_backends(exclude_tags=("debug", "experimental")):
    return list(_BACKENDS)


def reset() -> None:
    """Nothing compiled, nothing cached to drop."""
