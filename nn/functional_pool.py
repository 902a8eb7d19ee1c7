"""Adaptive average / max pooling (1-d and 2-d) and the 1-d window pools, with PyTorch's
functional signatures.

The 2-d adaptive pools are autograd Functions over ``tgrad.kernels.adaptive_pool`` (one launch
each way). Under create_graph their backward is recorded as a Function: avg's is linear in g with
the pooling itself as adjoint; max's scatters g to the saved argmax, its adjoint the gather of the
upstream gradient at those indices. x only picked windows / winners, so its second derivative is
zero (reported as zeros, as PyTorch does). The 1-d pools are the 2-d ones on (N, C, 1, L), as
PyTorch composes them (their node is a SqueezeBackward1 there too).
"""
from __future__ import annotations

from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.spatial import adaptive_pool as AP
from tgrad.ops.formula import ZeroSlope
from tgrad.ops.common import check_runnable, wrap

from .functional_conv import _check_tensor, avg_pool2d, max_pool2d

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "max_pool1d", "avg_pool1d"]


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
        dx = AP.adaptive_avg_pool2d_backward(_as4d(g._data), _lift(ctx.shape))
        return wrap(dx.view(ctx.shape)), None

    @staticmethod
    def differentiable_backward(ctx, g):
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
        y, idx = wrap(y.view(shape)), wrap(idx.view(shape))
        ctx.shape, ctx.x = tuple(x.shape), x
        ctx.mark_non_differentiable(idx)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(idx)
        return y, idx

    @staticmethod
    def backward(ctx, g, _):
        if g is None:
            return None, None
        idx, = ctx.saved_tensors
        dx = AP.adaptive_max_pool2d_backward(_as4d(g._data), _as4d(idx._data), _lift(ctx.shape))
        return wrap(dx.view(ctx.shape)), None

    @staticmethod
    def differentiable_backward(ctx, g, _):
        if g is None:
            return None, None
        idx, = ctx.saved_tensors
        return AdaptiveMaxPool2dBackward.apply(g, ctx.x, idx, ctx.shape), None


class AdaptiveMaxPool2dBackward(BuiltinFunction):
    """dx = g scattered to the argmax positions, as an op of (g, x): linear in g with the gather
    of gg at idx as adjoint; zero in x."""
    node_name = "AdaptiveMaxPool2DBackwardBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, g, x, idx, shape):
        ctx.save_for_backward(idx)
        ctx.g_shape = g.shape
        dx = AP.adaptive_max_pool2d_backward(_as4d(g._data), _as4d(idx._data), _lift(shape))
        return wrap(dx.view(shape))

    @staticmethod
    def backward(ctx, gg):
        idx, = ctx.saved_tensors
        dg = gg.flatten(-2).gather(-1, idx.flatten(-2)).reshape(ctx.g_shape) if ctx.needs_input_grad[0] else None
        dx = gg.new_zeros(gg.shape) if ctx.needs_input_grad[1] else None
        return dg, dx, None, None


def _lift(shape):
    return tuple(shape) if len(shape) == 4 else (1,) + tuple(shape)


def _adaptive_input(fn, x, output_size, dims):
    """The output size (ints; None entries keep the input's), checking x as PyTorch does."""
    _check_tensor(x, "input", fn)
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
    _check_tensor(x, "input", fn)
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

