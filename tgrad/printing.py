"""How a tensor prints: PyTorch's text, number for number.

torch formats the numbers (printing is on no forward/backward path) under its print options
(``tgrad.set_printoptions`` is ``torch.set_printoptions``); tgrad writes the autograd suffix
(``grad_fn=<...>`` or ``requires_grad=True``), wrapping it onto a new line as PyTorch's
``_add_suffixes`` does when the last line would pass the line width.
"""
from __future__ import annotations

import torch

from . import _dtype

__all__ = ["format_tensor", "set_printoptions"]

set_printoptions = torch.set_printoptions
_INDENT = len("tensor(")
_SUFFIX_KEYS = ("dtype=", "device=", "layout=", "size=", "names=")


def _last_line_length(body: str) -> int:
    """The length PyTorch's suffix writer has counted for the last line of ``body`` (its own quirk:
    one more than the line's characters, and two fewer when that line is a suffix it wrapped)."""
    last = body[body.rfind("\n") + 1:]
    length = len(body) - body.rfind("\n") + 1
    if "\n" in body and last[:_INDENT].isspace() and last[_INDENT:].startswith(_SUFFIX_KEYS):
        length -= 2
    return length


def format_tensor(t) -> str:
    body = repr(t._data.detach())
    assert body.endswith(")")
    body = body[:-1].replace("torch.", f"{_dtype.NAMESPACE}.")
    if t._grad_fn is not None:
        suffix = f"grad_fn=<{t._grad_fn.name()}>"
    elif t._requires_grad:
        suffix = "requires_grad=True"
    else:
        return body + ")"
    linewidth = torch._tensor_str.PRINT_OPTS.linewidth
    if _last_line_length(body) + len(suffix) + 2 > linewidth:
        return f"{body},\n{' ' * _INDENT}{suffix})"
    return f"{body}, {suffix})"
