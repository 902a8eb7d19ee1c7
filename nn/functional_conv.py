"""conv2d, max_pool2d, avg_pool2d and batch_norm with PyTorch's functional signatures, as autograd
Functions over the Triton kernels in ``tgrad.kernels.conv``, ``.pool`` and ``.batch_norm``.

Each op's forward and backward are fused kernels. Under create_graph (grad mode on during backward)
the backward is recorded instead: conv's two gradient GEMMs and the pools' scatters are Functions
whose own backward is the adjoint kernel, and batch_norm's gradient is written with tgrad ops.
Arguments are checked as PyTorch checks them, with PyTorch's messages.
"""
from __future__ import annotations

import math

from tgrad import _dtype
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.normalization import batch_norm as BN
from tgrad.kernels.spatial import conv as CONV
from tgrad.kernels.spatial import pool as POOL
from tgrad.kernels.reductions.reduce import reduce
from tgrad.ops.formula import ZeroSlope
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "batch_norm"]


def _pair(value, what, message):
    """(a, b) from an int or a sequence of 1 or 2 ints; ``message`` when it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) in (1, 2) and all(isinstance(v, int) for v in value):
        return (value[0], value[0]) if len(value) == 1 else tuple(value)
    raise RuntimeError(message.format(what=what, value=list(value) if isinstance(value, (tuple, list)) else value))


def _check_tensor(x, name, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _float_only(x, fn):
    """PyTorch has no bool kernel for these (NotImplementedError); its integer convolutions and
    pools tgrad does not have (README)."""
    if x.dtype is _dtype.bool or fn == "batch_norm" and not x.dtype.is_floating_point:
        kernel = {"conv2d": "slow_conv2d_cpu", "conv1d": "slow_conv2d_cpu"}.get(fn, fn)
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type}\'')
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{fn}: tgrad has floating point kernels only, got tgrad.{x.dtype.name}")


# ----------------------------------------------------------------------------- conv2d

class Convolution(BuiltinFunction):
    """y = conv2d(x, w) + b for batched x; see kernels/conv.py for the three GEMMs."""
    node_name = "ConvolutionBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups, out_hw):
        check_runnable(x, w, b)
        ctx.conv = (stride, padding, dilation, groups)
        ctx.save_for_backward(x, w)
        return wrap(CONV.conv2d_forward(x._data, w._data, None if b is None else b._data, stride, padding,
                                        dilation, groups, out_hw))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.conv
        gd = g._data
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = wrap(CONV.conv2d_grad_input(gd, w._data, x.shape, stride, padding, dilation, groups))
        if ctx.needs_input_grad[1]:
            dw = wrap(CONV.conv2d_grad_weight(x._data, gd, w.shape, stride, padding, dilation, groups))
        if ctx.needs_input_grad[2]:
            db = wrap(reduce(gd, (0,) + tuple(range(2, gd.dim())), "sum"))
        return dx, dw, db, None, None, None, None, None

    @staticmethod
    def differentiable_backward(ctx, g):  # the same GEMMs as recorded, differentiable Functions
        x, w = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.conv
        # (with an edge to x for dx and to w for dw, whose derivative is undefined, as PyTorch's)
        need = ctx.needs_input_grad
        return (ZeroSlope.apply(ConvGradInput.apply(g, w, x.shape, ctx.conv), x, True) if need[0] else None,
                ZeroSlope.apply(ConvGradWeight.apply(x, g, w.shape, ctx.conv), w, True) if need[1] else None,
                g.sum((0,) + tuple(range(2, g.ndim))) if need[2] else None, None, None, None, None, None)


class ConvGradInput(BuiltinFunction):
    """dx = conv^T(g, w), the input gradient of y = conv(x, w), as an op of (g, w). It is bilinear
    and <conv^T(g, w), a> = <g, conv(a, w)>, so its gradients for an upstream gg (x's shape) are
    conv(gg, w) for g and the weight gradient of conv(gg, .) against g for w."""
    node_name = "ConvolutionBackwardBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, g, w, x_shape, conv):
        ctx.conv, ctx.out_hw = conv, tuple(g.shape[2:])
        ctx.save_for_backward(g, w)
        return wrap(CONV.conv2d_grad_input(g._data, w._data, x_shape, *conv))

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.saved_tensors
        return (Convolution.apply(gg, w, None, *ctx.conv, ctx.out_hw) if ctx.needs_input_grad[0] else None,
                ConvGradWeight.apply(gg, g, w.shape, ctx.conv) if ctx.needs_input_grad[1] else None, None, None)


class ConvGradWeight(BuiltinFunction):
    """dw = the weight gradient of y = conv(x, w) for upstream g, as an op of (x, g):
    <dw(x, g), v> = <g, conv(x, v)>, so for an upstream gw (w's shape) the gradients are
    conv^T(g, gw) for x and conv(x, gw) for g."""
    node_name = "ConvolutionBackwardBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, x, g, w_shape, conv):
        ctx.conv, ctx.out_hw = conv, tuple(g.shape[2:])
        ctx.save_for_backward(x, g)
        return wrap(CONV.conv2d_grad_weight(x._data, g._data, w_shape, *conv))

    @staticmethod
    def backward(ctx, gw):
        x, g = ctx.saved_tensors
        return (ConvGradInput.apply(g, gw, x.shape, ctx.conv) if ctx.needs_input_grad[0] else None,
                Convolution.apply(x, gw, None, *ctx.conv, ctx.out_hw) if ctx.needs_input_grad[1] else None,
                None, None)


_CONV_ARG = ("expected {what} to be a single integer value or a list of 2 values to match the convolution "
             "dimensions, but got {what}={value}")


def _type_name(t):
    return f"tgrad.{'cuda.' if t.is_cuda else ''}{t.dtype.legacy}"


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation of input (N, C, H, W) or (C, H, W) with weight (OC, C/groups, KH, KW):
    y[n, o, i, j] = bias[o] + sum_{c,kh,kw} x[n, g*C/groups + c, i*s - p + kh*d, j*s - p + kw*d] w[o, c, kh, kw],
    g = o // (OC/groups), zero outside the image. padding may be 'valid' (0) or 'same' (output size
    = input size, stride 1; an odd total padding puts the extra row/column at the bottom/right)."""
    _check_tensor(input, "input", "conv2d")
    _check_tensor(weight, "weight", "conv2d")
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    if input.ndim == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-d weight (out_channels, in_channels/groups, kH, kW), but got "
                           f"weight of size {list(weight.shape)}")
    stride = _pair(stride, "stride", _CONV_ARG)
    dilation = _pair(dilation, "dilation", _CONV_ARG)
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) <= 0:
        raise RuntimeError("non-positive dilation is not supported")
    N, C, H, W = input.shape
    OC, CG, KH, KW = weight.shape
    effective = ((KH - 1) * dilation[0] + 1, (KW - 1) * dilation[1] + 1)
    if isinstance(padding, str):
        if padding == "valid":
            pad, extra = (0, 0), (0, 0)
        elif padding == "same":
            if stride != (1, 1):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = (effective[0] - 1, effective[1] - 1)
            pad = (total[0] // 2, total[1] // 2)
            extra = (total[0] - 2 * pad[0], total[1] - 2 * pad[1])  # the odd row/column, bottom/right
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pad, extra = _pair(padding, "padding", _CONV_ARG), (0, 0)
        if min(pad) < 0:
            raise RuntimeError("negative padding is not supported")
    if OC % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(weight.shape)}] instead")
    if C != CG * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {CG * groups} channels, but got {C} channels instead")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"Input type ({_type_name(input)}) and weight type ({_type_name(weight)}) should be the "
                           f"same")
    _float_only(input, "conv2d")
    if bias is not None:
        _check_tensor(bias, "bias", "conv2d")
        if bias.ndim != 1 or bias.shape[0] != OC:
            raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                               f"{OC} elements, but got bias of size {list(bias.shape)} instead")
        if bias.dtype != input.dtype:
            raise RuntimeError(f"Input type ({input.dtype.c_type}) and bias type ({bias.dtype.c_type}) should be "
                               f"the same")
    padded = (H + 2 * pad[0] + extra[0], W + 2 * pad[1] + extra[1])
    if padded[0] < effective[0] or padded[1] < effective[1]:
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x {padded[1]}). Kernel size: "
                           f"({effective[0]} x {effective[1]}). Kernel size can't be greater than actual input size")
    out_hw = tuple((padded[i] - effective[i]) // stride[i] + 1 for i in range(2))
    return Convolution.apply(input, weight, bias, stride, pad, dilation, groups, out_hw)


# ----------------------------------------------------------------------------- pooling

def _pool_args(fn, kernel_size, stride, padding, dilation=1):
    kernel = _pair(kernel_size, "kernel_size",
                   f"{fn}: kernel_size must either be a single int, or a tuple of two ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        stride = kernel
    else:
        stride = _pair(stride, "stride", f"{fn}: stride must either be omitted, a single int, or a tuple of two ints")
    padding = _pair(padding, "padding", f"{fn}: padding must either be a single int, or a tuple of two ints")
    dilation = _pair(dilation, "dilation", f"{fn}: dilation must be either a single int, or a tuple of two ints")
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if min(stride) <= 0:
        raise RuntimeError("stride should not be zero")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} "
                           f"dilationW: {dilation[1]}")
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for i in range(2):
        if padding[i] > ((kernel[i] - 1) * dilation[i] + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={padding[i]}, "
                               f"kernel_size={kernel[i]} and dilation={dilation[i]}")
    return kernel, stride, padding, dilation


def _pool_out(size, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: with ceil_mode the last window may hang over the bottom/right
    edge, but must start inside the image or its top/left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_input(x, fn, kernel, stride, padding, dilation, ceil_mode):
    """(4-d torch view of x, output (OH, OW)), checking the input as torch does."""
    _check_tensor(x, "input", fn)
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-3:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    _float_only(x, fn)
    check_runnable(x)
    C, H, W = x.shape[-3:]
    out = (_pool_out(H, kernel[0], stride[0], padding[0], dilation[0], ceil_mode),
           _pool_out(W, kernel[1], stride[1], padding[1], dilation[1], ceil_mode))
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({C}x{H}x{W}). Calculated output size: ({C}x{out[0]}x{out[1]}). "
                           f"Output size is too small")
    data = x._data if x.ndim == 4 else x._data.unsqueeze(0)
    return data, out


class MaxPool2d(BuiltinFunction):
    """(values, indices) of 2-d max pooling; indices are h*W + w within each input plane."""
    node_name = "MaxPool2DWithIndicesBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, ceil_mode):
        data, out_hw = _pool_input(x, "max_pool2d", kernel, stride, padding, dilation, ceil_mode)
        y, idx = POOL.max_pool2d_forward(data, kernel, stride, padding, dilation, out_hw)
        if x.ndim == 3:
            y, idx = y.squeeze(0), idx.squeeze(0)
        y, idx = wrap(y), wrap(idx)
        ctx.pool = (data.shape, kernel, stride, padding, dilation)
        ctx.x = x  # only for create_graph: the recorded backward's (zero) dependence on x
        ctx.mark_non_differentiable(idx)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(idx)
        return y, idx

    @staticmethod
    def backward(ctx, g, _):
        if g is None:
            return (None,) * 6
        idx, = ctx.saved_tensors
        shape, kernel, stride, padding, dilation = ctx.pool
        gd, idxd = g._data, idx._data
        if len(shape) != gd.ndim:
            gd, idxd = gd.unsqueeze(0), idxd.unsqueeze(0)
        dx = POOL.max_pool2d_backward(gd, idxd, shape, kernel, stride, padding, dilation)
        return (wrap(dx.view(g.shape[:-2] + tuple(shape[-2:]))),) + (None,) * 5

    @staticmethod
    def differentiable_backward(ctx, g, _):  # the scatter as a recorded op
        if g is None:
            return (None,) * 6
        idx, = ctx.saved_tensors
        return (MaxPool2dBackward.apply(g, ctx.x, idx, ctx.pool),) + (None,) * 5


class MaxPool2dBackward(BuiltinFunction):
    """dx = g scattered to the argmax positions ``idx`` (max pooling's gradient) as an op of
    (g, x). It is linear in g, with adjoint the gather of an upstream gg at idx; x only chose idx,
    so its derivative is zero (reported as zeros, as PyTorch does)."""
    node_name = "MaxPool2DWithIndicesBackwardBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, g, x, idx, pool):
        shape, kernel, stride, padding, dilation = pool
        ctx.save_for_backward(idx)
        ctx.g_shape = g.shape
        gd, idxd = g._data, idx._data
        if len(shape) != gd.ndim:
            gd, idxd = gd.unsqueeze(0), idxd.unsqueeze(0)
        dx = POOL.max_pool2d_backward(gd, idxd, shape, kernel, stride, padding, dilation)
        return wrap(dx.view(g.shape[:-2] + tuple(shape[-2:])))

    @staticmethod
    def backward(ctx, gg):
        idx, = ctx.saved_tensors
        dg = gg.flatten(-2).gather(-1, idx.flatten(-2)).reshape(ctx.g_shape) if ctx.needs_input_grad[0] else None
        dx = gg.new_zeros(gg.shape) if ctx.needs_input_grad[1] else None
        return dg, dx, None, None


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """y[n, c, i, j] = max over kh < KH, kw < KW of x[n, c, i*s - p + kh*d, j*s - p + kw*d] (positions
    outside the image excluded); with return_indices also the argmax as h*W + w in the input plane."""
    kernel, stride, padding, dilation = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    y, idx = MaxPool2d.apply(input, kernel, stride, padding, dilation, bool(ceil_mode))
    return (y, idx) if return_indices else y


class AvgPool2d(BuiltinFunction):
    node_name = "AvgPool2DBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
        data, out_hw = _pool_input(x, "avg_pool2d", kernel, stride, padding, (1, 1), ceil_mode)
        y = POOL.avg_pool2d_forward(data, kernel, stride, padding, out_hw, count_include_pad, divisor_override)
        ctx.pool = (data.shape, kernel, stride, padding, count_include_pad, divisor_override)
        ctx.ceil_mode, ctx.x = ceil_mode, x  # for create_graph: the recorded backward's edges
        return wrap(y if x.ndim == 4 else y.squeeze(0))

    @staticmethod
    def backward(ctx, g):
        shape, kernel, stride, padding, count_include_pad, divisor_override = ctx.pool
        gd = g._data if g.ndim == 4 else g._data.unsqueeze(0)
        dx = POOL.avg_pool2d_backward(gd, shape, kernel, stride, padding, count_include_pad, divisor_override)
        return (wrap(dx if g.ndim == 4 else dx.squeeze(0)),) + (None,) * 6

    @staticmethod
    def differentiable_backward(ctx, g):  # the scatter as a recorded op (x: zero derivative)
        return (ZeroSlope.apply(AvgPool2dBackward.apply(g, ctx.pool, ctx.ceil_mode), ctx.x),) + (None,) * 6


class AvgPool2dBackward(BuiltinFunction):
    """dx = avg pooling's gradient, the adjoint of the (linear) pooling; as an op of g its own
    gradient is the pooling of the upstream gradient again."""
    node_name = "AvgPool2DBackwardBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, pool, ceil_mode):
        ctx.pool, ctx.ceil_mode = pool, ceil_mode
        shape, kernel, stride, padding, count_include_pad, divisor_override = pool
        gd = g._data if g.ndim == 4 else g._data.unsqueeze(0)
        dx = POOL.avg_pool2d_backward(gd, shape, kernel, stride, padding, count_include_pad, divisor_override)
        return wrap(dx if g.ndim == 4 else dx.squeeze(0))

    @staticmethod
    def backward(ctx, gg):
        _, kernel, stride, padding, count_include_pad, divisor_override = ctx.pool
        return AvgPool2d.apply(gg, kernel, stride, padding, ctx.ceil_mode, count_include_pad, divisor_override), \
            None, None


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """y[n, c, i, j] = sum of x over the window of (i, j) / divisor: divisor_override if given, else
    the window's size clipped to the padded image (count_include_pad) or to the image itself."""
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    return AvgPool2d.apply(input, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad),
                           divisor_override)


# ----------------------------------------------------------------------------- batch_norm

class BatchNorm(BuiltinFunction):
    """Batch normalisation over dim 1; see kernels/batch_norm.py for the formulas."""
    node_name = "NativeBatchNormBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        check_runnable(x, weight, bias, running_mean, running_var)
        # per-channel vectors of any shape holding C elements are read as (C,) views
        data = [x._data] + [None if t is None else t._data.view(-1)
                            for t in (weight, bias, running_mean, running_var)]
        y, mean, rstd = BN.batch_norm_forward(*data, training, momentum, eps)
        ctx.stats, ctx.eps = (mean, rstd, training), eps
        ctx.vec_meta = [None if t is None else (t._data.shape, t._data.dtype) for t in (weight, bias)]
        ctx.save_for_backward(x, weight)
        return wrap(y)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        mean, rstd, training = ctx.stats
        need = ctx.needs_input_grad
        (w_shape, w_dtype), (b_shape, b_dtype) = [(None, None) if v is None else v for v in ctx.vec_meta]
        dx, dw, db = BN.batch_norm_backward(x._data, g._data, None if weight is None else weight._data.view(-1),
                                            mean, rstd, training, need[0], need[1] or need[2], w_dtype, b_dtype)
        return (wrap(dx) if need[0] else None, wrap(dw.view(w_shape)) if need[1] else None,
                wrap(db.view(b_shape)) if need[2] else None, None, None, None, None, None)

    @staticmethod
    def differentiable_backward(ctx, g):  # the same formulas from differentiable ops
        x, weight = ctx.saved_tensors
        mean, rstd, training = ctx.stats
        need = ctx.needs_input_grad
        (w_shape, w_dtype), (b_shape, b_dtype) = [(None, None) if v is None else v for v in ctx.vec_meta]
        dx, dw, db = _batch_norm_grads_ops(x, weight, g, ctx, need)
        if not training and dx is not None:  # x's derivative of w rstd g: undefined, as PyTorch's
            dx = ZeroSlope.apply(dx, x, True)
        return (dx, None if dw is None else dw.reshape(w_shape).to(w_dtype),
                None if db is None else db.reshape(b_shape).to(b_dtype), None, None, None, None, None)


def _batch_norm_grads_ops(x, w, g, ctx, need):
    """Per channel c (dim 1), over the other dims: xhat = (x - mean) rstd, dw = sum g xhat, db = sum g,
    and dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training (the batch statistics depend on
    x), dx = w rstd g in eval (constant running statistics)."""
    mean, rstd, training = ctx.stats
    dims = (0,) + tuple(range(2, x.ndim))
    chan = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        xc = x - x.mean(dims, keepdim=True)
        r = ((xc * xc).mean(dims, keepdim=True) + ctx.eps).rsqrt()
    else:
        r = wrap(rstd).to(x.dtype).reshape(chan)
        xc = x - wrap(mean).to(x.dtype).reshape(chan)
    xhat = xc * r
    gw = g * w.reshape(chan) if w is not None else g
    dx = None
    if need[0]:
        dx = r * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True)) if training \
            else gw * r
    return dx, (g * xhat).sum(dims) if need[1] else None, g.sum(dims) if need[2] else None


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """y = (x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1) of x (N, C, *). Training
    uses the batch's mean and biased variance and, when running stats are given, updates them in place:
    r <- (1 - momentum) r + momentum * stat, with the unbiased variance; eval uses the running stats."""
    _check_tensor(input, "input", "batch_norm")
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(f"batch_norm(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    if input.ndim < 2:
        raise RuntimeError(f"batch_norm: expected an input of 2 or more dims (N, C, *), but got input of size "
                           f"{list(input.shape)}")
    C = input.shape[1]
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if training:
        per_channel = input.shape[0] * math.prod(input.shape[2:])
        if per_channel <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"tgrad.Size({list(input.shape)})")
    elif running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None:
            _check_tensor(t, name, "batch_norm")
            if t.numel() != C:
                raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")
    _float_only(input, "batch_norm")  # after the shape checks, as PyTorch
    return BatchNorm.apply(input, weight, bias, running_mean, running_var, bool(training), float(momentum),
                           float(eps))
