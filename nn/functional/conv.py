"""Convolutions with PyTorch's functional signatures on the implicit-GEMM kernels of
``tgrad.kernels.spatial.conv``: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d``.

- conv1d is conv2d with H = 1: the same ``Convolution`` Function, fed 3-d tensors, which the
  kernels view as (N, C, 1, L).
- conv2d's three GEMMs: y = conv(x, w) + b forward; backward dx = conv^T(g, w) (the input-gradient
  kernel), dw = the weight-gradient kernel of (x, g), db = sum g.
- conv_transpose is the adjoint of a convolution in its input: for x (N, C_in, H, W) and
  w (C_in, C_out/groups, kH, kW),

      y = conv_transpose(x, w) + b = dX_conv(g=x, w) + b,   out = (H-1)s - 2p + d(k-1) + output_padding + 1

  i.e. the conv's input-gradient kernel (with the bias added in its epilogue). Its derivatives are
  the conv's other two GEMMs: dx = conv(g, w), dw = dW_conv(input=g, grad=x), db = sum g.

Each of the three GEMMs is a Function whose backward is again two of the three, so the derivative
is written once, at every order. Arguments are checked as PyTorch checks them, with its messages.
"""
from __future__ import annotations

from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.spatial import conv as CONV
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.formula import ZeroSlope
from tgrad.tensor import Tensor
from tgrad.amp.autocast_mode import autocast_policy

from .arguments import check_tensor, float_only, pair

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]


class _ConvOp(BuiltinFunction):
    """A convolution-like op y(x, w) + b (the conv, or its transpose): bilinear in (x, w), so its
    backward is two of the three GEMMs as Functions (``input_grad``, ``weight_grad``: each
    differentiable in turn) and db = sum g."""
    edge_args = (0, 1, 2)

    @staticmethod
    def save(ctx, x, w, b, stride, padding, dilation, groups):
        check_runnable(x, w, b)
        ctx.conv = (stride, padding, dilation, groups)
        ctx.save_for_backward(x, w)

    @classmethod
    def backward(cls, ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        # (with an edge to x for dx and to w for dw, whose derivative is undefined, as PyTorch's)
        return (ZeroSlope.apply(cls.input_grad(g, w, x, ctx.conv), x, True) if need[0] else None,
                ZeroSlope.apply(cls.weight_grad(g, w, x, ctx.conv), w, True) if need[1] else None,
                g.sum((0,) + tuple(range(2, g.ndim))) if need[2] else None, None, None, None, None, None)


class Convolution(_ConvOp):
    """y = conv2d(x, w) + b for batched x; see kernels/conv.py for the three GEMMs."""
    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups, out_hw):
        _ConvOp.save(ctx, x, w, b, stride, padding, dilation, groups)
        return wrap(CONV.conv2d_forward(x._data, w._data, None if b is None else b._data, stride, padding,
                                        dilation, groups, out_hw))

    @staticmethod
    def input_grad(g, w, x, conv):
        return ConvGradInput.apply(g, w, x.shape, conv)

    @staticmethod
    def weight_grad(g, w, x, conv):
        return ConvGradWeight.apply(x, g, w.shape, conv)


class _ConvGEMM(BuiltinFunction):
    """One of the conv's backward GEMMs, ``gemm(a, b, shape, *conv)``, as a bilinear op of (a, b):
    its gradients are the conv and the other GEMM (each subclass's backward says which)."""
    edge_args = (0, 1)
    gemm = None

    @classmethod
    def forward(cls, ctx, a, b, shape, conv):
        ctx.conv = conv
        ctx.save_for_backward(a, b)
        return wrap(cls.gemm(a._data, b._data, shape, *conv))


class ConvGradInput(_ConvGEMM):
    """dx = conv^T(g, w), the input gradient of y = conv(x, w), as an op of (g, w). It is bilinear
    and <conv^T(g, w), a> = <g, conv(a, w)>, so its gradients for an upstream gg (x's shape) are
    conv(gg, w) for g and the weight gradient of conv(gg, .) against g for w."""
    node_name = "ConvolutionBackwardBackward0"
    gemm = staticmethod(CONV.conv2d_grad_input)

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.saved_tensors
        return (Convolution.apply(gg, w, None, *ctx.conv, tuple(g.shape[2:])) if ctx.needs_input_grad[0] else None,
                ConvGradWeight.apply(gg, g, w.shape, ctx.conv) if ctx.needs_input_grad[1] else None, None, None)


class ConvGradWeight(_ConvGEMM):
    """dw = the weight gradient of y = conv(x, w) for upstream g, as an op of (x, g):
    <dw(x, g), v> = <g, conv(x, v)>, so for an upstream gw (w's shape) the gradients are
    conv^T(g, gw) for x and conv(x, gw) for g."""
    node_name = "ConvolutionBackwardBackward0"
    gemm = staticmethod(CONV.conv2d_grad_weight)

    @staticmethod
    def backward(ctx, gw):
        x, g = ctx.saved_tensors
        return (ConvGradInput.apply(g, gw, x.shape, ctx.conv) if ctx.needs_input_grad[0] else None,
                Convolution.apply(x, gw, None, *ctx.conv, tuple(g.shape[2:])) if ctx.needs_input_grad[1] else None,
                None, None)


_CONV_ARG = ("expected {what} to be a single integer value or a list of 2 values to match the convolution "
             "dimensions, but got {what}={value}")


def _type_name(t):
    return f"tgrad.{'cuda.' if t.is_cuda else ''}{t.dtype.legacy}"


def _check_groups(input, weight, groups):
    OC, CG, C = weight.shape[0], weight.shape[1], input.shape[1]
    if OC % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(weight.shape)}] instead")
    if C != CG * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {CG * groups} channels, but got {C} channels instead")


@autocast_policy(cpu='lower', cuda='lower')
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation of input (N, C, H, W) or (C, H, W) with weight (OC, C/groups, KH, KW):
    y[n, o, i, j] = bias[o] + sum_{c,kh,kw} x[n, g*C/groups + c, i*s - p + kh*d, j*s - p + kw*d] w[o, c, kh, kw],
    g = o // (OC/groups), zero outside the image. padding may be 'valid' (0) or 'same' (output size
    = input size, stride 1; an odd total padding puts the extra row/column at the bottom/right)."""
    check_tensor(input, "input", "conv2d")
    check_tensor(weight, "weight", "conv2d")
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    if input.ndim == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-d weight (out_channels, in_channels/groups, kH, kW), but got "
                           f"weight of size {list(weight.shape)}")
    stride = pair(stride, "stride", _CONV_ARG)
    dilation = pair(dilation, "dilation", _CONV_ARG)
    _check_positive(groups, stride, dilation)
    H, W = input.shape[2:]
    OC, _, KH, KW = weight.shape
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
        pad, extra = pair(padding, "padding", _CONV_ARG), (0, 0)
        if min(pad) < 0:
            raise RuntimeError("negative padding is not supported")
    _check_groups(input, weight, groups)
    _check_types("conv2d", input, weight, bias, OC)
    padded = (H + 2 * pad[0] + extra[0], W + 2 * pad[1] + extra[1])
    if padded[0] < effective[0] or padded[1] < effective[1]:
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x {padded[1]}). Kernel size: "
                           f"({effective[0]} x {effective[1]}). Kernel size can't be greater than actual input size")
    out_hw = tuple((padded[i] - effective[i]) // stride[i] + 1 for i in range(2))
    return Convolution.apply(input, weight, bias, stride, pad, dilation, groups, out_hw)


def _tuple(value, n, what):
    """n ints from an int or a sequence of 1 or n ints, else PyTorch's message."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    if isinstance(value, (tuple, list)) and len(value) in (1, n) and all(isinstance(v, int) for v in value):
        return tuple(value) * n if len(value) == 1 else tuple(value)
    shown = list(value) if isinstance(value, (tuple, list)) else value
    raise RuntimeError(f"expected {what} to be a single integer value or a list of {n} values to match the "
                       f"convolution dimensions, but got {what}={shown}")


def _check_common(fn, input, weight, bias, dims, groups, stride, dilation, out_channels):
    """PyTorch's checks shared by every convolution: dims, groups, dtypes and the bias."""
    check_tensor(input, "input", fn)
    check_tensor(weight, "weight", fn)
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {fn}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.ndim != dims + 2:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.ndim}-dimensional input of size "
                           f"{list(input.shape)} instead")
    _check_positive(groups, stride, dilation)
    _check_types(fn, input, weight, bias, out_channels)


def _check_positive(groups, stride, dilation):
    if not isinstance(groups, int) or groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) <= 0:
        raise RuntimeError("non-positive dilation is not supported")


def _check_types(fn, input, weight, bias, out_channels):
    """The dtypes (equal, floating) and the bias (out_channels elements, the input's dtype)."""
    if input.dtype != weight.dtype:
        raise RuntimeError(f"Input type ({_type_name(input)}) and weight type ({_type_name(weight)}) should be the "
                           f"same")
    float_only(input, fn)
    if bias is not None:
        check_tensor(bias, "bias", fn)
        if bias.ndim != 1 or bias.shape[0] != out_channels:
            raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
                               f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
        if bias.dtype != input.dtype:
            raise RuntimeError(f"Input type ({input.dtype.c_type}) and bias type ({bias.dtype.c_type}) should be "
                               f"the same")


# ----------------------------------------------------------------------------- conv1d

@autocast_policy(cpu='lower', cuda='lower')
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation of input (N, C, L) or (C, L) with weight (OC, C/groups, K):
    y[n, o, i] = bias[o] + sum_{c,k} x[n, g*C/groups + c, i*s - p + k*d] w[o, c, k], zero outside.
    padding may be 'valid' or 'same' (stride 1; an odd total puts the extra column on the right)."""
    stride, dilation = _tuple(stride, 1, "stride"), _tuple(dilation, 1, "dilation")
    OC = weight.shape[0] if isinstance(weight, Tensor) and weight.ndim else 0
    _check_common("conv1d", input, weight, bias, 1, groups, stride, dilation, OC)
    if input.ndim == 2:
        return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(0)
    L, K = input.shape[2], weight.shape[2]
    effective = (K - 1) * dilation[0] + 1
    if isinstance(padding, str):
        if padding == "valid":
            pad, extra = 0, 0
        elif padding == "same":
            if stride != (1,):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad = (effective - 1) // 2
            extra = effective - 1 - 2 * pad
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        (pad,), extra = _tuple(padding, 1, "padding"), 0
        if pad < 0:
            raise RuntimeError("negative padding is not supported")
    _check_groups(input, weight, groups)
    padded = L + 2 * pad + extra
    if padded < effective:
        raise RuntimeError(f"Calculated padded input size per channel: ({padded}). Kernel size: ({effective}). "
                           f"Kernel size can't be greater than actual input size")
    out = (padded - effective) // stride[0] + 1
    return Convolution.apply(input, weight, bias, (1, stride[0]), (0, pad), (1, dilation[0]), groups, (1, out))


# ----------------------------------------------------------------------------- conv_transpose

class ConvTranspose(_ConvOp):
    """y = conv_transpose(x, w) + b, the conv input-gradient kernel applied to x (see above)."""
    node_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups, out_shape):
        _ConvOp.save(ctx, x, w, b, stride, padding, dilation, groups)
        return wrap(CONV.conv2d_grad_input(x._data, w._data, out_shape, stride, padding, dilation, groups,
                                           None if b is None else b._data))

    @staticmethod
    def input_grad(g, w, x, conv):
        return Convolution.apply(g, w, None, *conv, tuple(x.shape[2:]))

    @staticmethod
    def weight_grad(g, w, x, conv):
        return ConvGradWeight.apply(g, x, w.shape, conv)


def _conv_transpose(fn, dims, input, weight, bias, stride, padding, output_padding, groups, dilation):
    for name, value in (("padding", padding), ("output_padding", output_padding)):
        if isinstance(value, str):
            raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not str")
    stride, dilation = _tuple(stride, dims, "stride"), _tuple(dilation, dims, "dilation")
    padding, output_padding = _tuple(padding, dims, "padding"), _tuple(output_padding, dims, "output_padding")
    C_in = weight.shape[0] if isinstance(weight, Tensor) and weight.ndim else 0
    C_out = weight.shape[1] * groups if isinstance(weight, Tensor) and weight.ndim > 1 and isinstance(groups, int) \
        else 0
    _check_common(fn, input, weight, bias, dims, groups, stride, dilation, C_out)
    if input.ndim == dims + 1:
        return _conv_transpose(fn, dims, input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                               dilation).squeeze(0)
    if min(padding) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(output_padding) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation)):
        axes = ("height", "width") if dims == 2 else ("width",)
        parts = [f"output_padding_{a}: {v}" for a, v in zip(axes, output_padding)]
        parts += [f"stride_{a}: {v}" for a, v in zip(axes, stride)]
        parts += [f"dilation_{a}: {v}" for a, v in zip(axes, dilation)]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got " + " ".join(parts))
    if C_in % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{list(weight.shape)}] instead")
    if input.shape[1] != C_in:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {C_in} channels, but got {input.shape[1]} channels instead")
    size = tuple(input.shape[2:])
    kernel = tuple(weight.shape[2:])
    out = tuple((size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
                for i in range(dims))
    if min(out) <= 0:
        shown = lambda t: " x ".join(str(v) for v in t)  # noqa: E731
        raise RuntimeError(f"Given input size per channel: ({shown(size)}). Calculated output size per channel: "
                           f"({shown(out)}). Output size is too small")
    out_shape = (input.shape[0], C_out) + out
    if dims == 1:
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    return ConvTranspose.apply(input, weight, bias, stride, padding, dilation, groups, out_shape)


@autocast_policy(cpu='lower', cuda='lower')
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 2-d convolution ("deconvolution") of input (N, C_in, H, W) or (C_in, H, W) with
    weight (C_in, C_out/groups, kH, kW): each input pixel scatters w times its value onto the output
    window at (i*s - p, j*s - p); output_padding adds rows/columns at the bottom/right."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


@autocast_policy(cpu='lower', cuda='lower')
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transposed 1-d convolution of input (N, C_in, L) or (C_in, L) with weight (C_in, C_out/groups, K)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)
