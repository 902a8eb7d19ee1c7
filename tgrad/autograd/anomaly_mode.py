"""Anomaly mode: find the forward call behind a failing backward.

While enabled, every graph node records the Python stack of the forward call that created it
(``node.metadata["traceback_"]``, as PyTorch names it), and the engine checks the gradients each
backward node returns: a NaN raises ``Function 'XBackward0' returned nan values in its 0th output.``
Any error raised in backward is preceded by a UserWarning that shows the recorded forward stack.
Recording a stack per node is slow, so this is for debugging only.
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings

from ..modes import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                     no_grad, set_detect_anomaly)
from ..tensor import Tensor

def _internal_dirs():
    dirs = []
    for name in ("tgrad", "tgrad.kernels", "tgrad.nn"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.append(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)
    return tuple(dirs)


def record_forward_stack(node):
    """Store where the user's code created ``node``: the current stack without tgrad's own
    trailing frames (the user's line is the last one shown)."""
    frames = traceback.extract_stack()
    internal = _internal_dirs()
    while frames and os.path.abspath(frames[-1].filename).startswith(internal):
        frames.pop()
    node.metadata["traceback_"] = traceback.format_list(frames)


def warn_backward_error(node):
    """PyTorch's warning before a backward error re-raises: where the failing node's forward ran."""
    name = node.name()
    stack = node.metadata.get("traceback_")
    if stack is None:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect anomaly during "
               "forward pass for more information.")
    else:
        msg = f"Error detected in {name}. Traceback of forward call that caused the error:\n" + "".join(stack)
    warnings.warn(msg, UserWarning, stacklevel=4)


def check_nan(node, grads):
    """Raise if a gradient ``node`` returned holds a NaN, found by a tgrad kernel (``g != g``)."""
    with no_grad():
        for i, g in enumerate(grads):
            if isinstance(g, Tensor) and g.dtype.is_floating_point and g.numel() and (g != g).any().item():
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
