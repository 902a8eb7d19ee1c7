"""The checks every in-place op makes before it writes into a tensor, as PyTorch's: inference
tensors outside inference mode, leaves that require grad (and views of them), and views that one op
returned among several (split, unbind) while they require grad."""
from __future__ import annotations

from ..modes import _inference_mode_enabled, is_grad_enabled
from ..tensor import Tensor

__all__ = ["check_inplace"]


def check_inplace(t: Tensor, others=()):
    """The checks every in-place op makes before writing into ``t`` (``others``: the op's other
    operands; one that requires grad makes the write recorded, which a split/unbind view refuses)."""
    if t._is_inference:
        if not _inference_mode_enabled():
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make "
                               "a clone to get a normal tensor before doing inplace update.See "
                               "https://github.com/pytorch/rfcs/pull/17 for more details.")
    if not is_grad_enabled() or _inference_mode_enabled():  # inference mode skips autograd's checks
        return
    if t._grad_fn is None and t._requires_grad:
        if t._base is not None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = t._base
    if base is not None and base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t._multi_output and not t._requires_grad and any(isinstance(o, Tensor) and o._requires_grad for o in others):
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                           "This view is the output of a function that returns multiple views. Such functions do not "
                           "allow the output views to be modified inplace. You should replace the inplace operation by "
                           "an out-of-place one.")
    if t._multi_output and t._requires_grad:
        op = t._grad_fn.name().rsplit("Backward", 1)[0] if t._grad_fn is not None else "a view"
        raise RuntimeError(f"Output {t._output_nr} of {op} is a view and is being modified inplace. This view is the "
                           "output of a function that returns multiple views. Such functions do not allow the output "
                           "views to be modified inplace. You should replace the inplace operation by an out-of-place "
                           "one.")
