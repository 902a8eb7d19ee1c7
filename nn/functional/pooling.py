"""Pooling with PyTorch's functional signatures: ``max_pool1d/2d``, ``avg_pool1d/2d`` (windows of
``kernels/pool.py``) and ``adaptive_avg_pool1d/2d``, ``adaptive_max_pool1d/2d`` (windows
[floor(i L/O), ceil((i+1) L/O)) of ``kernels/adaptive_pool.py``), one launch each way.

The pools are linear in x (avg) or pick one element per window (max): avg's backward is a
Function whose own backward is the pooling again, max's scatters g to the saved argmax, its
adjoint the gather of the upstream gradient at those indices. x only picked windows / winners, so
its second derivative is zero (reported as zeros, as PyTorch does). The 1-d pools are the 2-d
ones on (N, C, 1, L), as PyTorch composes them (their node is a SqueezeBackward1 there too).
``max_unpool1d/2d`` scatter x into zeros at the pooled indices (tgrad's ``scatter``: its backward
gathers the upstream gradient there).
"""
from __future__ import annotations

from tgrad import _dtype, ops
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.spatial import adaptive_pool as AP
from tgrad.kernels.spatial import pool as POOL
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.formula import ZeroSlope

from .arguments import check_tensor, float_only, pair

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d", "max_unpool2d"]


def _pool_args(fn, kernel_size, stride, padding, dilation=1):
    kernel = pair(kernel_size, "kernel_size",
                   f"{fn}: kernel_size must either be a single int, or a tuple of two ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        stride = kernel
    else:
        stride = pair(stride, "stride", f"{fn}: stride must either be omitted, a single int, or a tuple of two ints")
    padding = pair(padding, "padding", f"{fn}: padding must either be a single int, or a tuple of two ints")
    dilation = pair(dilation, "dilation", f"{fn}: dilation must be either a single int, or a tuple of two ints")
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
    check_tensor(x, "input", fn)
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-3:]):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    float_only(x, fn)
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
        return _keep_argmax(ctx, x, wrap(y), wrap(idx), (data.shape, kernel, stride, padding, dilation))

    @staticmethod
    def backward(ctx, g, _):
        return _scatter_to_argmax(MaxPool2dBackward, ctx, g) + (None,) * 5


def _keep_argmax(ctx, x, y, idx, cfg):
    """A max pool's forward end: idx saved (not differentiable) for the scatter that is the
    backward, x kept for that scatter's (zero) dependence on it."""
    ctx.x, ctx.cfg = x, cfg
    ctx.mark_non_differentiable(idx)
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(idx)
    return y, idx


def _scatter_to_argmax(scatter, ctx, g):
    """(dx,): g scattered to the saved argmax by the Function ``scatter`` (None without g)."""
    return (None if g is None else scatter.apply(g, ctx.x, ctx.saved_tensors[0], ctx.cfg),)


class _ArgmaxScatter(BuiltinFunction):
    """dx = g scattered to the argmax positions ``idx`` (a max pooling's gradient) as an op of
    (g, x). It is linear in g, with adjoint the gather of an upstream gg at idx; x only chose idx,
    so its derivative is zero (reported as zeros, as PyTorch does). Subclasses: the scatter kernel."""
    edge_args = (0, 1)

    @staticmethod
    def backward(ctx, gg):
        idx, = ctx.saved_tensors
        dg = gg.flatten(-2).gather(-1, idx.flatten(-2)).reshape(ctx.g_shape) if ctx.needs_input_grad[0] else None
        dx = gg.new_zeros(gg.shape) if ctx.needs_input_grad[1] else None
        return dg, dx, None, None


class MaxPool2dBackward(_ArgmaxScatter):
    node_name = "MaxPool2DWithIndicesBackwardBackward0"

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
    def backward(ctx, g):  # the scatter as an op of g (x: zero derivative)
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


# ----------------------------------------------------------------------------- adaptive pools

def _as4d(t):
    return t if t.dim() == 4 else t.unsqueeze(0)


class AdaptiveAvgPool2d(BuiltinFunction):
    node_name = "AdaptiveAvgPool2DBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, out_hw):
        check_runnable(x)
        y, _ = AP.adaptive_pool2d_forward(_as4d(x._data), out_hw, False)
        ctx.shape, ctx.x = tuple(x.shape), x  # x: the recorded backward's (zero) dependence
        return wrap(y.view(tuple(x.shape[:-2]) + tuple(out_hw)))

    @staticmethod
    def backward(ctx, g):
        return ZeroSlope.apply(AdaptiveAvgPool2dBackward.apply(g, ctx.shape), ctx.x), None


class AdaptiveAvgPool2dBackward(BuiltinFunction):
    """dx = the adaptive average's gradient, linear in g; its own gradient pools gg again."""
    node_name = "AdaptiveAvgPool2DBackwardBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, shape):
        ctx.out_hw = tuple(g.shape[-2:])
        return wrap(AP.adaptive_avg_pool2d_backward(_as4d(g._data), _lift(shape)).view(shape))

    @staticmethod
    def backward(ctx, gg):
        return AdaptiveAvgPool2d.apply(gg, ctx.out_hw), None


class AdaptiveMaxPool2d(BuiltinFunction):
    node_name = "AdaptiveMaxPool2DBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, out_hw):
        check_runnable(x)
        y, idx = AP.adaptive_pool2d_forward(_as4d(x._data), out_hw, True)
        shape = tuple(x.shape[:-2]) + tuple(out_hw)
        return _keep_argmax(ctx, x, wrap(y.view(shape)), wrap(idx.view(shape)), tuple(x.shape))

    @staticmethod
    def backward(ctx, g, _):
        return _scatter_to_argmax(AdaptiveMaxPool2dBackward, ctx, g) + (None,)


class AdaptiveMaxPool2dBackward(_ArgmaxScatter):
    node_name = "AdaptiveMaxPool2DBackwardBackward0"

    @staticmethod
    def forward(ctx, g, x, idx, shape):
        ctx.save_for_backward(idx)
        ctx.g_shape = g.shape
        dx = AP.adaptive_max_pool2d_backward(_as4d(g._data), _as4d(idx._data), _lift(shape))
        return wrap(dx.view(shape))


def _lift(shape):
    return tuple(shape) if len(shape) == 4 else (1,) + tuple(shape)


def _adaptive_input(fn, x, output_size, dims):
    """The output size (ints; None entries keep the input's), checking x as PyTorch does."""
    check_tensor(x, "input", fn)
    if dims == 2:
        if x.ndim not in (3, 4):
            colon = ":" if "max" in fn else ""
            raise RuntimeError(f"{fn}(): Expected 3D or 4D tensor, but got{colon} {list(x.shape)}")
        size = output_size if isinstance(output_size, (tuple, list)) else (output_size, output_size)
        if len(size) != 2:
            raise RuntimeError(f"{fn}: output_size must be 2")
    else:
        if x.ndim not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {fn})")
        size = output_size if isinstance(output_size, (tuple, list)) else (output_size,)
        if len(size) != 1:
            raise RuntimeError(f"{fn}() argument 'output_size' should contain one int (got {len(size)})")
    spatial = tuple(x.shape[x.ndim - dims:])
    size = tuple(spatial[i] if s is None else int(s) for i, s in enumerate(size))
    if min(size) < 0:
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(str(s) for s in size)}}}")
    for d in range(0 if x.ndim == dims + 1 else 1, x.ndim):
        if x.shape[d] == 0:
            raise RuntimeError(f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {d} being empty")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{fn}" not implemented for \'{x.dtype.legacy.replace("Tensor", "")}\'')
    return size


def adaptive_avg_pool2d(input, output_size):
    """y[.., i, j] = mean of x over rows [floor(i H/OH), ceil((i+1) H/OH)) and columns likewise."""
    size = _adaptive_input("adaptive_avg_pool2d", input, output_size, 2)
    return AdaptiveAvgPool2d.apply(input, size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The max over adaptive_avg_pool2d's windows; with return_indices also the argmax as h*W + w."""
    size = _adaptive_input("adaptive_max_pool2d", input, output_size, 2)
    y, idx = AdaptiveMaxPool2d.apply(input, size)
    return (y, idx) if return_indices else y


def adaptive_avg_pool1d(input, output_size):
    size = _adaptive_input("adaptive_avg_pool1d", input, output_size, 1)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1,) + size).squeeze(-2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    size = _adaptive_input("adaptive_max_pool1d", input, output_size, 1)
    y, idx = adaptive_max_pool2d(input.unsqueeze(-2), (1,) + size, return_indices=True)
    y, idx = y.squeeze(-2), idx.squeeze(-2)
    return (y, idx) if return_indices else y


def _single(fn, value, what, default=None):
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, (tuple, list)) and len(value) == 1 and isinstance(value[0], int):
        return value[0]
    raise RuntimeError(f"{fn}() {what} must be an int, list of ints or tuple of ints of size 1 but got size "
                       f"{len(value) if isinstance(value, (tuple, list)) else value}")


def _pool1d_input(fn, x, kernel, padding):
    check_tensor(x, "input", fn)
    if x.ndim not in (2, 3):
        if fn == "max_pool1d":
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                               f"for input, but got:{list(x.shape)}")
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 'self' "
                           f"(while checking arguments for {fn})")
    if padding > kernel // 2:
        raise RuntimeError(f"{fn}() padding should be at most half of kernel size, but got padding={padding} and "
                           f"kernel_size={kernel}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """y[n, c, i] = max over k < K of x[n, c, i*s - p + k*d]; with return_indices also the argmax."""
    fn = "max_pool1d"
    kernel = _single(fn, kernel_size, "kernel_size")
    stride = _single(fn, stride, "stride", kernel)
    padding, dilation = _single(fn, padding, "padding"), _single(fn, dilation, "dilation")
    _pool1d_input(fn, input, kernel, padding)
    L = input.shape[-1]
    out = (L + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= L + padding:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    y, idx = max_pool2d(input.unsqueeze(-2), (1, kernel), (1, stride), (0, padding), (1, dilation), ceil_mode,
                        return_indices=True)
    y, idx = y.squeeze(-2), idx.squeeze(-2)
    return (y, idx) if return_indices else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """y[n, c, i] = mean of x[n, c, i*s - p + k] over k < K (the padding counted or not)."""
    fn = "avg_pool1d"
    kernel = _single(fn, kernel_size, "kernel_size")
    stride = _single(fn, stride, "stride", kernel)
    padding = _single(fn, padding, "padding")
    _pool1d_input(fn, input, kernel, padding)
    return avg_pool2d(input.unsqueeze(-2), (1, kernel), (1, stride), (0, padding), ceil_mode,
                      count_include_pad).squeeze(-2)


def _unpool_output_size(input, kernel, stride, padding, output_size):
    """PyTorch's: the default (L - 1) s + k - 2 p per spatial dim, or ``output_size`` (its last dims)
    within a stride of it."""
    n = len(kernel)
    default = [(input.shape[input.ndim - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between {lo} and {hi})')
    return output_size


def _max_unpool(input, indices, size):
    """x scattered into zeros of spatial ``size`` at ``indices`` (flat per (n, c) plane)."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with {input.ndim} "
                           "dimensions.")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.scalar_type}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    check_runnable(input, indices)
    lead = tuple(input.shape[:-2])
    planes = 1
    for s in lead:
        planes *= s
    H, W = size
    idx = indices.reshape(planes, -1)
    if idx.numel():
        bad = ((idx < 0) | (idx >= H * W)).nonzero()
        if bad.shape[0]:
            raise RuntimeError(f"Found an invalid max index: {int(idx[int(bad[0, 0]), int(bad[0, 1])])} (output "
                               f"volumes are of size {H}x{W}")
    out = ops.zeros(planes, H * W, dtype=input.dtype, device=input.device)
    return out.scatter(1, idx, input.reshape(planes, -1)).reshape(lead + (H, W))


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each input element at its ``indices`` position, zeros elsewhere."""
    msg = "max_unpool2d(): {what} must be an int or a tuple of 1 or 2 ints, got {value}"
    kernel = pair(kernel_size, "kernel_size", msg)
    stride = kernel if stride is None else pair(stride, "stride", msg)
    return _max_unpool(input, indices, _unpool_output_size(input, kernel, stride, pair(padding, "padding", msg),
                                                           output_size))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d`` (the 2-d unpool on (N, C, L, 1), as PyTorch composes it)."""
    kernel = _single("max_unpool1d", kernel_size, "kernel_size")
    stride = kernel if stride is None else _single("max_unpool1d", stride, "stride")
    size = _unpool_output_size(input, [kernel], [stride], [_single("max_unpool1d", padding, "padding")], output_size)
    return _max_unpool(input.unsqueeze(-1), indices.unsqueeze(-1), list(size) + [1]).squeeze(-1)
