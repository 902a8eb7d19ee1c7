"""Negative log-likelihood of a class: ``cross_entropy`` and ``nll_loss``, with class-index targets
(with ``ignore_index``, class weights and label smoothing) or, for cross_entropy, class-probability
targets; one fused forward launch that keeps one float per row (log-sum-exp), never the softmax,
and one fused backward launch (``kernels/cross_entropy.py``). An out-of-range class raises
PyTorch's IndexError before anything is read there.
"""
from __future__ import annotations

import math

import tgrad
from tgrad import _dtype
from tgrad import ops
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import composed_grads, fused_backward
from tgrad.kernels.losses import cross_entropy as KCE
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.formula import ZeroSlope
from tgrad.tensor import Tensor

from .loss import reduction_of

__all__ = ["cross_entropy", "nll_loss"]


class _CrossEntropy(BuiltinFunction):
    """Fused (log-softmax +) NLL over x viewed as (N, C, I); see kernels/cross_entropy.py."""
    node_name = "NllLossBackward0"
    edge_args = (0,)
    no_grad_args = ("nll_loss_forward", {2: "weight"})

    @staticmethod
    def forward(ctx, x, target, weight, ignore_index, smoothing, reduction, softmax, nci):
        N, C, I = nci
        prob = target.dtype.is_floating_point
        t = target._data.reshape((N, C, I) if prob else (N, I))
        loss, saved = KCE.cross_entropy_forward(
            x._data.reshape(N, C, I), t, None if weight is None else weight._data, ignore_index,
            smoothing, reduction, softmax)
        ctx.kernel_saved = saved
        ctx.cfg = (ignore_index, smoothing, reduction, softmax, nci)
        ctx.save_for_backward(x, target, weight)
        if reduction == "none":
            loss = loss.view(tuple(x.shape[:1]) + tuple(x.shape[2:]) if x.ndim > 1 else ())
        return wrap(loss)

    @staticmethod
    def backward(ctx, g):
        x, target, w = ctx.saved_tensors
        ignore_index, smoothing, reduction, softmax, (N, C, I) = ctx.cfg
        need = ctx.needs_input_grad[:3]

        def kernel(g, x, target, w):
            if need[2]:  # the kernel has no weight gradient: the composed form gives all three
                return tuple(None if d is None else d.detach() for d in recorded(g, x, target, w))
            prob = target.dtype.is_floating_point
            dx, dt = KCE.cross_entropy_backward(
                x._data.reshape(N, C, I), target._data.reshape((N, C, I) if prob else (N, I)),
                None if w is None else w._data, ctx.kernel_saved,
                g._data.reshape(N, I) if reduction == "none" else g._data, ignore_index, smoothing,
                reduction, softmax, need_dx=need[0], need_target=need[1])
            return wrap(dx.view(x.shape)) if need[0] else None, wrap(dt.view(x.shape)) if need[1] else None, None

        cfg, total_weight = ctx.cfg, ctx.kernel_saved[2][1:2]

        def recorded(g, x, target, w):
            dx, dt, dw = composed_grads(lambda x, t, w: _cross_entropy_ops(x, t, w, cfg, total_weight, g.shape),
                                        (x, target, w), need, (g,))
            # nll's gradient reads x only to pick a class: its derivative in x is zero (not undefined)
            return ZeroSlope.apply(dx, x) if dx is not None and not softmax else dx, dt, dw

        return fused_backward(ctx, kernel, recorded, g, x, target, w) + (None,) * 5


class _NllLoss(_CrossEntropy):
    """nll_loss: the same kernels on log-probabilities (``softmax`` False)."""


class _CrossEntropyProb(_CrossEntropy):
    node_name = "CrossEntropyLossBackward0"
    edge_args = (0, 1, 2)
    no_grad_args = None  # probabilities: differentiable in the class weights too


def _cross_entropy_ops(x, target, w, cfg, total_weight, out_shape):
    """The same loss from differentiable ops: -sum_c a_c lp_c per position, lp = log_softmax(x) (or
    x for nll), a the (smoothed) one-hot or given probabilities times the class weights; 'mean'
    divides by the kernel's total weight (a constant in x and, where it may require grad, in w)."""
    ignore_index, eps, reduction, softmax, (N, C, I) = cfg
    x3 = x.reshape(N, C, I)
    lp = ops.log_softmax(x3, 1) if softmax else x3
    wb = w.reshape(1, C, 1) if w is not None else None
    if target.dtype.is_floating_point:
        p = target.reshape(N, C, I)
        if eps:
            p = p * (1.0 - eps) + eps / C
        a = p * wb if wb is not None else p
    else:
        t = target.reshape(N, I)
        valid = t != ignore_index
        classes = tgrad.arange(C, device=x.device).reshape(1, C, 1)
        hot = (ops.where(valid, t, 0).reshape(N, 1, I) == classes).to(x.dtype)
        w_t = (hot * wb).sum(1, keepdim=True) if wb is not None else 1.0
        a = hot * ((1.0 - eps) * w_t)
        if eps:
            a = a + (eps / C) * (wb if wb is not None else 1.0)
        a = a * valid.to(x.dtype).reshape(N, 1, I)
    loss = -(a * lp).sum(1)
    if reduction == "none":
        return loss.reshape(out_shape)
    return loss.sum() / wrap(total_weight).to(x.dtype).reshape(()) if reduction == "mean" else loss.sum()


def _target_dtype_error(target):
    return RuntimeError(f"expected target dtype to be Long or Byte, but got "
                        f"{target.dtype.scalar_type}")


def _nll_setup(input, target, weight, class_targets_only, fn_name):
    """Checks and the (N, C, I) view of the class dim; returns (nci, prob)."""
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{fn_name}(): input and target must be tensors")
    check_runnable(input, target, weight)
    if input.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if not input.dtype.is_floating_point:
        kernel = "log_softmax_lastdim_kernel_impl" if fn_name == "cross_entropy" else "nll_loss_out_frame"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{input.dtype.scalar_type}\'')
    C = input.shape[1] if input.ndim > 1 else input.shape[0]
    prob = target.dtype.is_floating_point and not class_targets_only and tuple(target.shape) == tuple(input.shape)
    if not prob:
        if target.dtype not in (_dtype.int64, _dtype.uint8):
            raise _target_dtype_error(target)
        if input.ndim == 1 and target.ndim != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if input.ndim == 2 and target.ndim != 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if input.ndim >= 2 and target.shape[0] != input.shape[0]:
            if input.ndim == 2:
                raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                                 f"({target.shape[0]}).")
        if input.ndim > 2 and tuple(target.shape) != tuple(input.shape[:1]) + tuple(input.shape[2:]):
            raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
                               f"{list(target.shape)}")
    if weight is not None and tuple(weight.shape) != (C,):
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    N = input.shape[0] if input.ndim > 1 else 1
    return (N, C, math.prod(input.shape[2:])), prob


@autocast_policy(cpu='fp32', cuda='fp32')
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """-sum_c a_c log softmax(input)_c per sample (class dim 1): a the one-hot target (or the given
    probabilities), smoothed by label_smoothing, weighted by class ``weight``; see
    kernels/cross_entropy.py for the exact conventions (PyTorch's)."""
    reduction = reduction_of(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    nci, prob = _nll_setup(input, target, weight, False, "cross_entropy")
    if prob:
        return _CrossEntropyProb.apply(input, target.to(input.dtype), weight, int(ignore_index),
                                       float(label_smoothing), reduction, True, nci)
    return _CrossEntropy.apply(input, target, weight, int(ignore_index), float(label_smoothing),
                               reduction, True, nci)


@autocast_policy(cpu='fp32', cuda='fp32')
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-w_t input[t] per sample (class dim 1, input holding log-probabilities)."""
    reduction = reduction_of(reduction, size_average, reduce)
    nci, _ = _nll_setup(input, target, weight, True, "nll_loss")
    return _NllLoss.apply(input, target, weight, int(ignore_index), 0.0, reduction, False, nci)
