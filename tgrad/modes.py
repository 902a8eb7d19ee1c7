"""The modes autograd runs in: grad mode (``no_grad``, ``enable_grad``, ``set_grad_enabled``),
inference mode and anomaly mode. Thread-local state and its context managers (also decorators);
a leaf module, so that the Tensor, the graph and the ops all read it without importing autograd."""
from __future__ import annotations

import functools
import threading
import warnings

class _State(threading.local):
    """Each thread's modes; the class holds a fresh thread's defaults, read without a miss (asked
    on every op and every new tensor)."""
    enabled = True
    inference = False
    anomaly = False
    check_nan = True


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


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
    return _state.inference


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


# ----------------------------------------------------------------------------- anomaly mode


def is_anomaly_enabled() -> bool:
    return _state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return _state.check_nan


def _set_anomaly(enabled: bool, check_nan: bool):
    _state.anomaly, _state.check_nan = bool(enabled), bool(check_nan)


class _AnomalyMode(_ContextDecorator):
    """Restores the previous mode on exit."""

    def __exit__(self, *exc):
        _set_anomaly(*self._prev)
        return False


class detect_anomaly(_AnomalyMode):
    """``with tgrad.autograd.detect_anomaly():`` turns anomaly mode on for the block."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        self._args = (check_nan,)

    def __enter__(self):
        self._prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", UserWarning, stacklevel=2)
        _set_anomaly(True, self.check_nan)
        return None


class set_detect_anomaly(_AnomalyMode):
    """``set_detect_anomaly(mode, check_nan=True)`` switches anomaly mode at once (a plain call) and,
    used as ``with``, restores the previous mode when the block ends."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        self._args = (mode, check_nan)
        _set_anomaly(mode, check_nan)

    def __enter__(self):
        return None
