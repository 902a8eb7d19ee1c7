"""Saved tensors: what a node keeps for its backward, with the version each had when saved, so
that an in-place change made since is reported as PyTorch reports it (``SavedVariable``)."""
from __future__ import annotations

__all__ = ["FREED_MESSAGE", "FREED", "Saved", "op_name"]

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
    "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
    "or if you need to access saved tensors after calling backward.")

FREED = object()  # what a node's saved tensors become once its graph is freed


def _type_tag(t):
    dev = "cuda." if t.device.type == "cuda" else ""
    return f"[tgrad.{dev}{t.dtype.legacy} {list(t.shape)}]".replace("[]]", "[]]")


class Saved:
    """A tensor saved for backward, with the version it had, so that an in-place change made after
    saving is caught when backward unpacks it (PyTorch's SavedVariable)."""

    __slots__ = ("tensor", "version", "producer")

    def __init__(self, tensor, producer=None):
        self.tensor, self.version, self.producer = tensor, tensor._vc.value, producer

    def unpack(self):
        t = self.tensor
        if t._vc.value != self.version:
            if self.producer is not None:
                where = f", which is output {t._output_nr} of {self.producer},"
            elif t._grad_fn is not None:
                where = f", which is output {t._output_nr} of {op_name(t._grad_fn)},"
            else:
                where = ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: {_type_tag(t)}{where} is at version {t._version.value}; expected version "
                f"{self.version} instead. Hint: enable anomaly detection to find the operation that failed "
                "to compute its gradient, with tgrad.autograd.set_detect_anomaly(True, check_nan=False).")
        return t


def op_name(node):
    """PyTorch's name of the op in saved-variable errors: ExpBackward0 -> Exp, PowBackward1 -> Pow1."""
    n = node.name()
    head, sep, tail = n.rpartition("Backward")
    if sep and (tail == "" or tail.isdigit()):
        return head + ("" if tail in ("", "0") else tail)
    return n
