"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled`` (context, decorator or call)."""
from __future__ import annotations

import functools
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set(enabled: bool):
    _state.enabled = bool(enabled)


class _ContextDecorator:
    """A context manager that is also a decorator (``@no_grad()``), as in PyTorch: each call of the
    decorated function enters a fresh instance built from ``_args``, so recursion nests properly."""

    _args = ()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper


class _GradMode(_ContextDecorator):
    enabled: bool

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self.enabled)
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False


class no_grad(_GradMode):
    enabled = False


class enable_grad(_GradMode):
    enabled = True


class set_grad_enabled(_GradMode):
    """``set_grad_enabled(False)`` switches grad mode at once (a plain call), and restores the
    previous mode when used as ``with`` and the block ends."""

    def __init__(self, mode: bool):
        self._prev = is_grad_enabled()
        self.enabled = bool(mode)
        self._args = (mode,)
        _set(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(self._prev)
        return False


def _inference_mode_enabled() -> bool:
    return getattr(_state, "inference", False)


def is_inference_mode_enabled() -> bool:
    return _inference_mode_enabled()


class inference_mode(_GradMode):
    """Like ``no_grad``; tensors made inside are inference tensors (``is_inference()``), which
    autograd refuses to use afterwards (spec E.24). No graph is recorded inside, even under a
    nested ``enable_grad()``. ``inference_mode(False)`` turns grad mode on for the block."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # bare ``@inference_mode`` decorator
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self._args = (mode,)

    @property
    def enabled(self):
        return not self.mode

    def __enter__(self):
        self._prev_inf = _inference_mode_enabled()
        _state.inference = self.mode
        return super().__enter__()

    def __exit__(self, *exc):
        _state.inference = self._prev_inf
        return super().__exit__(*exc)
