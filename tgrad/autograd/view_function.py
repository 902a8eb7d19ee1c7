"""``ViewFunction``: the built-in views' lean ``apply``.

A view (view, reshape, slice, transpose, permute, expand, squeeze, unsqueeze, as_strided) takes one
tensor, returns one tensor sharing its storage and runs no kernel, so ``Function.apply``'s general
work (keyword binding, grad-mode switching around forward, several outputs, dirty and
non-differentiable marks, saved tensors) has nothing to do for it. This ``apply`` builds the same
node (class, name, edges, input and output metadata) for a recorded call and nothing for an
unrecorded one; the view's version counter and base come from ``ops.views.make_view`` as before.
"""
from __future__ import annotations

from .._dtype import _BY_TORCH
from ..modes import _inference_mode_enabled, is_grad_enabled
from .function import BuiltinFunction, FunctionCtx, _view_requires_grad, edge_of


class ViewFunction(BuiltinFunction):
    """Base of the built-in single-input views: ``forward(ctx, x, *args)`` with ``x`` the only
    tensor and no op run on tensors (so grad mode need not be switched off around it)."""

    @classmethod
    def apply(cls, x, *args):
        if not (is_grad_enabled() and (x._requires_grad or x._base is not None and _view_requires_grad(x))) \
                or _inference_mode_enabled():
            return cls.forward(FunctionCtx(), x, *args)
        ctx = cls._backward_cls()
        n = len(args)
        ctx.needs_input_grad = (True,) + (False,) * n
        out = cls.forward(ctx, x, *args)
        data = x._data
        ctx._next = (edge_of(x),) + ((None, 0),) * n
        ctx._edge_pos = (0,)
        ctx._input_meta = ((data.shape, _BY_TORCH[data.dtype], data.device),) + (None,) * n
        od = out._data
        if od.dtype.is_floating_point:
            out._grad_fn, out._output_nr, out._requires_grad = ctx, 0, True
        else:  # (a view of an integer tensor cannot require grad; kept as Function.apply decides it)
            out._requires_grad = False
        ctx._output_meta = ((od.shape, _BY_TORCH[od.dtype], od.device, False),)
        return out
