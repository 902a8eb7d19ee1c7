"""Resampling with PyTorch's functional signatures: ``interpolate`` (nearest, nearest-exact,
linear, bilinear, area), ``pixel_shuffle`` / ``pixel_unshuffle``, ``channel_shuffle`` and ``unfold`` /
``fold``.

interpolate and unfold/fold are autograd Functions over ``tgrad.kernels.spatial.interpolate`` and
``.unfold`` (one launch each way). All of them are linear in x, and each backward is the adjoint
of its forward: interpolate's backward is a Function whose own backward is interpolate again, and
unfold and fold are each other's backward. So every order records the same kernels and the
derivative is written once. pixel_shuffle and channel_shuffle only move elements (a view, then one copy, as torch's
own storage functions do it).
"""
from __future__ import annotations

import math

from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.spatial import interpolate as INTERP
from tgrad.kernels.spatial import unfold as UNFOLD
from tgrad.ops.common import check_runnable, wrap

from .arguments import check_tensor, pair
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

__all__ = ["interpolate", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "unfold", "fold"]

# ----------------------------------------------------------------------------- interpolate

def _lift(t):
    return t if t.dim() == 4 else t.unsqueeze(2)


class Interpolate(BuiltinFunction):
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, out_size, mode, align_corners, scales):
        check_runnable(x)
        ctx.cfg = (tuple(x.shape), mode, align_corners, scales)
        hw = out_size if len(out_size) == 2 else (1,) + tuple(out_size)
        y = INTERP.interpolate_forward(_lift(x._data), hw, mode, align_corners, scales)
        return wrap(y.view(tuple(x.shape[:2]) + tuple(out_size)))

    @staticmethod
    def backward(ctx, g):
        shape, mode, align_corners, scales = ctx.cfg
        return _node(InterpolateBackward, mode, len(shape) - 2, g, shape, mode, align_corners, scales), \
            None, None, None, None


class InterpolateBackward(BuiltinFunction):
    """dx = interpolate's adjoint applied to g; its gradient is the interpolation of gg."""
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, shape, mode, align_corners, scales):
        ctx.cfg = (tuple(g.shape[2:]), mode, align_corners, scales)
        dx = INTERP.interpolate_backward(_lift(g._data), _lift_shape(shape), mode, align_corners, scales)
        return wrap(dx.view(shape))

    @staticmethod
    def backward(ctx, gg):
        out_size, mode, align_corners, scales = ctx.cfg
        return _node(Interpolate, mode, len(out_size), gg, out_size, mode, align_corners, scales), \
            None, None, None, None


def _lift_shape(shape):
    return tuple(shape) if len(shape) == 4 else (shape[0], shape[1], 1, shape[2])


_NAMES = {("nearest", 1): "UpsampleNearest1D", ("nearest", 2): "UpsampleNearest2D",
          ("nearest-exact", 1): "UpsampleNearestExact1D", ("nearest-exact", 2): "UpsampleNearestExact2D",
          ("linear", 1): "UpsampleLinear1D", ("linear", 2): "UpsampleBilinear2D"}
_CLASSES = {}


def _node(base, mode, dims, *args):
    """base.apply under the node name PyTorch gives this mode and rank."""
    name = _NAMES[mode, dims] + ("Backward0" if base is Interpolate else "BackwardBackward0")
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name[:-1], (base,), {"node_name": name})
    return cls.apply(*args)


def _per_dim(value, cast, dim, spatial, what, shown, layout):
    """interpolate's size or scale_factor as one value per spatial dim (a number stands for all)."""
    if not isinstance(value, (list, tuple)):
        return [cast(value)] * dim
    if len(value) != dim:
        raise ValueError(f"Input and {what} must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {spatial} and {shown} {value}. Please provide input tensor in "
                         f"(N, C, d1, d2, ...,dK) format and {layout} format.")
    return [cast(v) for v in value]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resample the spatial dims of input (N, C, L) or (N, C, H, W) to ``size`` or by
    ``scale_factor``: nearest, nearest-exact, linear (3-d), bilinear (4-d) with or without
    align_corners, or area (adaptive average pooling). See kernels/interpolate.py for the formulas."""
    check_tensor(input, "input", "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        output_size = _per_dim(size, int, dim, spatial, "output", "output size of", "output size in (o1, o2, ...,oK)")
        scales = None
    elif scale_factor is not None:
        scales = _per_dim(scale_factor, float, dim, spatial, "scale_factor", "scale_factor of shape",
                          "scale_factor in (s1, s2, ...,sK)")
        output_size = [math.floor(float(spatial[i]) * scales[i]) for i in range(dim)] if dim > 0 else []
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor or mode == "area":
        scales = None
    if antialias:
        raise NotImplementedError("tgrad's interpolate has no antialias option")
    need = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}  # spatial dims each mode takes
    if mode not in ("nearest", "nearest-exact", "area", *need) or dim not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode in need and dim != need[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need[mode] + 2}D input")
    if mode in ("bicubic", "trilinear") or dim == 3:
        raise NotImplementedError(f"tgrad's interpolate does not implement mode={mode!r} for {input.ndim}D input")
    if mode == "area":
        return (adaptive_avg_pool1d if dim == 1 else adaptive_avg_pool2d)(input, output_size)
    if min(output_size) <= 0 or min(spatial) <= 0:
        names = ("W",) if dim == 1 else ("H", "W")
        shown = lambda v: ", ".join(f"{n}: {s}" for n, s in zip(names, v))  # noqa: E731
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({shown(spatial)}) "
                           f"output ({shown(output_size)})")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"tgrad's interpolate takes floating point input, not {input.dtype}")
    kernel_mode = "linear" if mode == "bilinear" else mode
    kernel_scales = (None,) * (2 - dim) + (tuple(scales) if scales is not None else (None,) * dim)
    return _node(Interpolate, kernel_mode, dim, input, tuple(output_size), kernel_mode, bool(align_corners),
                 kernel_scales)


# ----------------------------------------------------------------------------- pixel shuffle

class PixelShuffle(BuiltinFunction):
    """(*, C r^2, H, W) -> (*, C, H r, W r): y[c, h r + i, w r + j] = x[c r^2 + i r + j, h, w]."""
    node_name = "PixelShuffleBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, r, unshuffle):
        ctx.cfg = (r, unshuffle)
        return wrap(_shuffle(x._data, r, unshuffle))

    @staticmethod
    def backward(ctx, g):  # the inverse permutation, itself differentiable
        r, unshuffle = ctx.cfg
        return (PixelUnshuffle if not unshuffle else PixelShuffle).apply(g, r, not unshuffle), None, None


class PixelUnshuffle(PixelShuffle):
    node_name = "PixelUnshuffleBackward0"


def _shuffle(d, r, unshuffle):
    """The permutation as torch views plus one copy (storage only)."""
    lead, (C, H, W) = tuple(d.shape[:-3]), tuple(d.shape[-3:])
    k = len(lead)
    if not unshuffle:
        v = d.reshape(lead + (C // (r * r), r, r, H, W)).permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
        return v.reshape(lead + (C // (r * r), H * r, W * r))
    v = d.reshape(lead + (C, H // r, r, W // r, r)).permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return v.reshape(lead + (C * r * r, H // r, W // r))


def _factor(fn, what, r):
    if isinstance(r, bool) or not isinstance(r, int):
        raise TypeError(f"{fn}(): argument '{what}' (position 2) must be int, not {type(r).__name__}")
    if r <= 0:
        raise RuntimeError(f"{fn} expects a positive {what}, but got {r}")


def pixel_shuffle(input, upscale_factor):
    check_tensor(input, "input", "pixel_shuffle")
    _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if input.shape[-3] % (upscale_factor * upscale_factor):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={input.shape[-3]} is not divisible by "
                           f"{upscale_factor * upscale_factor}")
    return PixelShuffle.apply(input, upscale_factor, False)


def pixel_unshuffle(input, downscale_factor):
    check_tensor(input, "input", "pixel_unshuffle")
    _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    for name, d in (("height", -2), ("width", -1)):
        if input.shape[d] % downscale_factor:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({d})={input.shape[d]} is not divisible by {downscale_factor}")
    return PixelUnshuffle.apply(input, downscale_factor, True)


# ----------------------------------------------------------------------------- unfold / fold

class Unfold(BuiltinFunction):
    node_name = "Im2ColBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, image_hw, blocks, geometry):
        check_runnable(x)
        ctx.cfg = (image_hw, blocks, geometry)
        data = x._data if x.ndim == 4 else x._data.unsqueeze(0)
        y = UNFOLD.im2col(data, *geometry, blocks)
        return wrap(y if x.ndim == 4 else y.squeeze(0))

    @staticmethod
    def backward(ctx, g):  # col2im: fold, whose backward is unfold again
        return Fold.apply(g, *ctx.cfg), None, None, None


class Fold(BuiltinFunction):
    node_name = "Col2ImBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, cols, image_hw, blocks, geometry):
        check_runnable(cols)
        ctx.cfg = (image_hw, blocks, geometry)
        data = cols._data if cols.ndim == 3 else cols._data.unsqueeze(0)
        y = UNFOLD.col2im(data, image_hw, *geometry, blocks)
        return wrap(y if cols.ndim == 3 else y.squeeze(0))

    @staticmethod
    def backward(ctx, g):  # im2col: unfold, whose backward is fold again
        return Unfold.apply(g, *ctx.cfg), None, None, None


def _geometry(fn, kernel_size, dilation, padding, stride):
    message = f"{fn}(): argument '{{what}}' must be an int or a tuple of two ints, but got {{value}}"
    kernel, dilation = pair(kernel_size, "kernel_size", message), pair(dilation, "dilation", message)
    padding, stride = pair(padding, "padding", message), pair(stride, "stride", message)
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if min(padding) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} pad_width: "
                           f"{padding[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} stride_width: "
                           f"{stride[1]}")
    return kernel, stride, padding, dilation


def _blocks(hw, kernel, stride, padding, dilation):
    return tuple((hw[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C*KH*KW, L): each sliding block of x flattened into a column (im2col)."""
    check_tensor(input, "input", "unfold")
    kernel, stride, padding, dilation = _geometry("unfold", kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[input.ndim - 3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    hw = tuple(input.shape[-2:])
    blocks = _blocks(hw, kernel, stride, padding, dilation)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {hw}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, but its "
                           f"components must be at least one.")
    return Unfold.apply(input, hw, blocks, (kernel, stride, padding, dilation))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C*KH*KW, L) -> (N, C, H, W): the columns summed back into the image (col2im), the
    adjoint of unfold."""
    check_tensor(input, "input", "fold")
    kernel, stride, padding, dilation = _geometry("fold", kernel_size, dilation, padding, stride)
    hw = pair(output_size, "output_size", "fold(): argument '{what}' must be an int or a tuple of two ints, "
                                           "but got {value}")
    if input.ndim not in (2, 3) or any(s == 0 for s in input.shape[input.ndim - 2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    CKK, L = input.shape[-2:]
    if CKK % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension {input.ndim - 2} to be divisible by the product of "
                           f"kernel_size, but got input.size({input.ndim - 2})={CKK} and kernel_size={kernel}.")
    blocks = _blocks(hw, kernel, stride, padding, dilation)
    if min(blocks) < 1 or blocks[0] * blocks[1] != L:
        raise RuntimeError(f"Given output_size={hw}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"stride={stride}, expected size of input's dimension {input.ndim - 1} to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                           f"but got input.size({input.ndim - 1})={L}.")
    return Fold.apply(input, hw, blocks, (kernel, stride, padding, dilation))


def channel_shuffle(input, groups):
    """(N, C, *) with its channels read as (groups, C / groups) and written as (C / groups, groups)."""
    check_tensor(input, "input", "channel_shuffle")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    C = input.shape[1]
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape((n, groups, C // groups) + rest).transpose(1, 2).reshape((n, C) + rest)
