"""In-place ops: ``t <- fn(t, *others)``, fused straight into ``t`` when nothing is recorded."""
from __future__ import annotations

from .. import _dtype
from ..autograd.function import records
from ..tensor import Tensor
from ..autograd.inplace_checks import check_inplace
from .common import as_operand, broadcast_shapes, check_runnable, dense_order, result_type
from .formula import fused
from .registry import op
from .views import rebase_history


def write_inplace(t: Tensor, fn, *others, formula=None, params=(), fill=False):
    """``t <- fn(t, *others)`` in place. Without a graph to record, the kernel writes straight into
    ``t`` (one launch); with one, the out-of-place result is computed, copied in, and ``t`` takes
    its history (PyTorch's rebase), after the tensors the new node saved are protected. Only a fill
    (``fill=True``) may write into a tensor whose elements share memory (an expanded one)."""
    if not fill:
        check_no_internal_overlap(t)
    for o in others:
        if isinstance(o, Tensor):
            check_no_partial_overlap(t, o)
    check_inplace(t, others)
    if formula is not None and not records(t, *others):
        # as the out-of-place ops: bool operands enter arithmetic as numbers (a fill's mask stays bool)
        operands = [t] + [o.to(t.dtype) if not fill and isinstance(o, Tensor) and o.dtype is _dtype.bool and t.dtype is
                          not _dtype.bool else as_operand(o, t, t.dtype) for o in others]
        check_runnable(*operands)
        shape = broadcast_shapes(*(o.shape for o in operands))
        if tuple(shape) != tuple(t.shape):
            raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(shape)}")
        fused(formula, operands, t.dtype, params, out=t, compute=result_type(t, *others), shape=t.shape)
        t._version.value += 1
        return t
    result = fn(t, *others)
    if tuple(result.shape) != tuple(t.shape):
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    rebase_history(t, result)
    return t


def _overlap(a, b):
    """PyTorch's overlap status of torch tensors a (written) and b (read): "full" (the same memory in
    the same layout), "partial" (some shared), or None (none shared, or too hard to tell: a layout
    that is not a dense block in some dim order, which PyTorch lets through)."""
    if a is b:
        return "full"
    if not a.numel() or not b.numel() or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return None
    if dense_order(a) is None or dense_order(b) is None:
        return None
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1, b1 = a0 + a.numel() * a.element_size(), b0 + b.numel() * b.element_size()
    if (a0, a1) == (b0, b1):
        return "full" if a.stride() == b.stride() else "partial"
    return "partial" if a0 < b1 and b0 < a1 else None


_SHARED = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")


def check_no_partial_overlap(t: Tensor, other: Tensor):
    """PyTorch's refusal to read an operand that shares some, but not exactly all, of the memory
    written (``x.add_(x.t())``; the same tensor, or the same layout, is fine), for dense layouts."""
    if _overlap(t._data, other._data) == "partial":
        raise RuntimeError(_SHARED)


def check_no_overlap(written, read):
    """PyTorch's refusal (index_put_) to read a torch tensor that shares any memory with the one
    written, the same memory too (``x[idx] = x[1:3]``), for dense layouts."""
    if _overlap(written, read) is not None:
        raise RuntimeError(_SHARED)


def check_no_internal_overlap(t: Tensor):
    """PyTorch's refusal to write into an expanded tensor (a stride-0 dim of size > 1): each result
    element would land on memory other elements share."""
    if t.numel() and any(st == 0 and n > 1 for n, st in zip(t.shape, t._data.stride())):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")


def write_result(name, self, fn, *args, **kwargs):
    """``self`` overwritten with ``fn(self, ...)`` (``copy_``: the gradient flows to self's old
    value through fn's own graph); fn reads a copy when recording, so what fn saves for its
    backward is not the tensor being written."""
    src = self.clone() if self.requires_grad else self
    result = fn(src, *args, **kwargs)
    if _dtype.category(result.dtype) > _dtype.category(self.dtype):
        raise RuntimeError(f"result type {result.dtype.scalar_type} can't be cast to the desired output type "
                           f"{self.dtype.scalar_type}")
    if tuple(result.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    return self.copy_(result)


def in_place(name, fn, function=True):
    op(name, function=function)(lambda self, *args, **kwargs: write_result(name, self, fn, *args, **kwargs))
