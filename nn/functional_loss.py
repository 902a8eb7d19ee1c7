"""The losses of ``tgrad.nn.functional``, each one fused forward launch (loss and reduction
together) and one fused backward launch; the formulas are in ``kernels/losses.py`` and
``kernels/cross_entropy.py``.

- ``cross_entropy`` / ``nll_loss``: class-index targets (with ``ignore_index``, class weights and
  label smoothing) or, for cross_entropy, class-probability targets; the forward keeps one float per
  row (log-sum-exp), never the softmax. An out-of-range class raises PyTorch's IndexError before
  anything is read there.
- ``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``,
  ``binary_cross_entropy_with_logits``: elementwise, broadcast by strides.

Under ``create_graph`` the elementwise losses' backward is their derivative formula of
``kernels/losses.py`` traced on Tensors; cross-entropy's (and the rare weight gradient of
probability-target cross-entropy) is written with differentiable tgrad ops, so higher-order
gradients are exact.
"""
from __future__ import annotations

import math
import warnings

import tgrad
from tgrad import _dtype
from tgrad import ops
from tgrad.autograd.function import BuiltinFunction
from tgrad.modes import is_grad_enabled
from tgrad.kernels.losses import cross_entropy as KCE
from tgrad.kernels.losses import elementwise as KL
from tgrad.ops.common import broadcast_shapes, check_runnable, result_type, wrap
from tgrad.ops.formula import ZeroSlope, traced_backward
from tgrad.tensor import Tensor

__all__ = ["cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits"]

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:  # the legacy flags, as torch maps them
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                      f"{_legacy(size_average, reduce)}' instead.", UserWarning, stacklevel=3)
        return _legacy(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _legacy(size_average, reduce):
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def _no_grad_for(fn_name, arg, t):
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fn_name}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


# ----------------------------------------------------------------------------- elementwise losses


class _Pointwise(BuiltinFunction):
    """loss(x, y) elementwise (optionally weighted), then reduced; one launch each way."""
    mode = None
    edge_args = (0, 1)

    @classmethod
    def forward(cls, ctx, x, y, weight, pos_weight, param, reduction):
        dtype = result_type(x, y)
        data = [None if t is None else t._data for t in (x, y, weight, pos_weight)]
        loss, n_bad = KL.loss_forward(cls.mode, *data, param=param, reduction=reduction,
                                      out_dtype=dtype.torch)
        if n_bad:
            raise RuntimeError("all elements of input should be between 0 and 1")
        ctx.cfg = (param, reduction)
        ctx.save_for_backward(x, y, weight, pos_weight)
        return wrap(loss)

    @classmethod
    def backward(cls, ctx, g):
        x, y, w, q = ctx.saved_tensors
        param, reduction = ctx.cfg
        nx, ny = ctx.needs_input_grad[:2]
        data = [None if t is None else t._data for t in (x, y, w, q)]
        dx, dy = KL.loss_backward(cls.mode, data[0], data[1], g._data, data[2], data[3], param,
                                  reduction, need_dx=nx, need_dy=ny)
        return (wrap(dx) if nx else None, wrap(dy) if ny else None, None, None, None, None)

    @classmethod
    def differentiable_backward(cls, ctx, g):  # the kernel's derivative formula, traced on Tensors
        x, y, w, q = ctx.saved_tensors
        param, reduction = ctx.cfg
        nx, ny = ctx.needs_input_grad[:2]
        if reduction == "mean":
            g = g / float(math.prod(broadcast_shapes(*(t.shape for t in (x, y, w, q) if t is not None))))
        if w is not None:
            g = g * w
        dx, dy = traced_backward(KL.LOSSES[cls.mode].backward, (x, y, 1.0 if q is None else q), g, (param, param),
                                 zero_edges=True)
        return dx if nx else None, dy if ny else None, None, None, None, None


def _pointwise_class(mode, node):
    return type(f"_{mode}", (_Pointwise,), {"mode": mode, "node_name": node})


_MSE = _pointwise_class("mse", "MseLossBackward0")
_L1 = _pointwise_class("l1", "L1LossBackward0")
_SMOOTH_L1 = _pointwise_class("smooth_l1", "SmoothL1LossBackward0")
_SMOOTH_L1_AT_0 = type("_smooth_l1", (_L1,), {"node_name": "SmoothL1LossBackward0"})  # beta = 0 is l1
_HUBER = _pointwise_class("huber", "HuberLossBackward0")
_BCE = _pointwise_class("bce", "BinaryCrossEntropyBackward0")
_BCE_LOGITS = _pointwise_class("bce_logits", "BinaryCrossEntropyWithLogitsBackward0")


def _regression(cls, name, input, target, reduction, param=0.0):
    check_runnable(input, target)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=3)
        broadcast_shapes(input.shape, target.shape)
    dtype = result_type(input, target)
    if not dtype.is_floating_point:
        if name in _NO_INTEGER_KERNEL:  # PyTorch's kernel refuses them; l1_loss's mean() does
            raise NotImplementedError(f'"{_NO_INTEGER_KERNEL[name]}" not implemented for \'{dtype.scalar_type}\'')
        if dtype is _dtype.bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                               "or `logical_xor()` operator instead.")
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {dtype.scalar_type}")
    return cls.apply(input, target, None, None, float(param), reduction)


_NO_INTEGER_KERNEL = {"mse_loss": "mse_cpu", "smooth_l1_loss": "smooth_l1_cpu", "huber_loss": "huber_cpu"}


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean/sum/none of (input - target)^2."""
    if weight is not None:
        raise NotImplementedError("tgrad's mse_loss takes no weight")
    return _regression(_MSE, "mse_loss", input, target, _reduction(reduction, size_average, reduce))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """mean/sum/none of |input - target|."""
    if weight is not None:
        raise NotImplementedError("tgrad's l1_loss takes no weight")
    return _regression(_L1, "l1_loss", input, target, _reduction(reduction, size_average, reduce))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """d^2 / (2 beta) where |d| < beta, |d| - beta / 2 elsewhere (d = input - target)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _regression(_SMOOTH_L1 if beta else _SMOOTH_L1_AT_0, "smooth_l1_loss", input, target,
                       _reduction(reduction, size_average, reduce), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """d^2 / 2 where |d| < delta, delta (|d| - delta / 2) elsewhere."""
    if weight is not None:
        raise NotImplementedError("tgrad's huber_loss takes no weight")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _regression(_HUBER, "huber_loss", input, target, _reduction(reduction), delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)) with each log clamped to >= -100."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    check_runnable(input, target, weight)
    _no_grad_for("binary_cross_entropy", "weight", weight)
    if weight is not None:
        broadcast_shapes(input.shape, weight.shape)
    return _BCE.apply(input, target, weight, None, 0.0, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """w ((1 - y) x + (1 + (q - 1) y) log(1 + e^-x)), computed stably (q = pos_weight)."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    check_runnable(input, target, weight, pos_weight)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for \'{input.dtype.scalar_type}\'')
    _no_grad_for("binary_cross_entropy_with_logits", "weight", weight)
    _no_grad_for("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    for t in (weight, pos_weight):
        if t is not None:
            broadcast_shapes(input.shape, t.shape)
    return _BCE_LOGITS.apply(input, target, weight, pos_weight, 0.0, reduction)


# ----------------------------------------------------------------------------- cross entropy


class _CrossEntropy(BuiltinFunction):
    """Fused (log-softmax +) NLL over x viewed as (N, C, I); see kernels/cross_entropy.py."""
    node_name = "NllLossBackward0"
    edge_args = (0,)

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
        nx, nt, nw = ctx.needs_input_grad[:3]
        if nw:  # the kernel has no weight gradient: the recorded formulas give all three
            return _CrossEntropy.differentiable_backward(ctx, g)
        prob = target.dtype.is_floating_point
        dx, dt = KCE.cross_entropy_backward(
            x._data.reshape(N, C, I), target._data.reshape((N, C, I) if prob else (N, I)),
            None if w is None else w._data, ctx.kernel_saved,
            g._data.reshape(N, I) if reduction == "none" else g._data, ignore_index, smoothing,
            reduction, softmax, need_dx=nx, need_target=nt)
        return (wrap(dx.view(x.shape)) if nx else None, wrap(dt.view(x.shape)) if nt else None,
                None, None, None, None, None, None)

    @staticmethod
    def differentiable_backward(ctx, g):  # the kernel's formulas from differentiable ops
        x, target, w = ctx.saved_tensors
        return _cross_entropy_grads_ops(ctx, g, x, target, w, *ctx.needs_input_grad[:3]) + (None,) * 5


class _NllLoss(_CrossEntropy):
    """nll_loss: the same kernels on log-probabilities (``softmax`` False)."""


class _CrossEntropyProb(_CrossEntropy):
    node_name = "CrossEntropyLossBackward0"
    edge_args = (0, 1, 2)


def _cross_entropy_grads_ops(ctx, g, x, target, w, nx, nt, nw):
    """dx = g_r (A softmax - a), dtarget = -g_r (1 - eps) w lp, dw = -sum g_r p' lp, from ops."""
    ignore_index, eps, reduction, softmax, (N, C, I) = ctx.cfg
    x3 = x.reshape(N, C, I)
    lp = ops.log_softmax(x3, 1) if softmax else x3
    wb = w.reshape(1, C, 1) if w is not None else None
    valid = None
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
    gr = g.reshape(N, 1, I) if reduction == "none" else g.reshape(1, 1, 1)
    if reduction == "mean":
        gr = gr / wrap(ctx.kernel_saved[2][1:2]).to(g.dtype).reshape(1, 1, 1)
    if valid is not None:
        gr = gr * valid.to(g.dtype).reshape(N, 1, I)
    dx = dt = dw = None
    if nx:
        dx = (gr * (a.sum(1, keepdim=True) * lp.exp() - a) if softmax else -(gr * a)).reshape(x.shape)
        if not softmax:  # nll's gradient reads x only to pick a class: x's derivative is zero
            dx = ZeroSlope.apply(dx, x)
    if nt:
        dt = (-(gr * (1.0 - eps)) * (wb if wb is not None else 1.0) * lp).reshape(x.shape)
    if nw:
        dw = -(gr * p * lp).sum((0, 2))
    return dx, dt, dw


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


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """-sum_c a_c log softmax(input)_c per sample (class dim 1): a the one-hot target (or the given
    probabilities), smoothed by label_smoothing, weighted by class ``weight``; see
    kernels/cross_entropy.py for the exact conventions (PyTorch's)."""
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    nci, prob = _nll_setup(input, target, weight, False, "cross_entropy")
    if prob:
        return _CrossEntropyProb.apply(input, target.to(input.dtype), weight, int(ignore_index),
                                       float(label_smoothing), reduction, True, nci)
    _no_grad_for("nll_loss_forward", "weight", weight)
    return _CrossEntropy.apply(input, target, weight, int(ignore_index), float(label_smoothing),
                               reduction, True, nci)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-w_t input[t] per sample (class dim 1, input holding log-probabilities)."""
    reduction = _reduction(reduction, size_average, reduce)
    nci, _ = _nll_setup(input, target, weight, True, "nll_loss")
    _no_grad_for("nll_loss_forward", "weight", weight)
    return _NllLoss.apply(input, target, weight, int(ignore_index), 0.0, reduction, False, nci)
