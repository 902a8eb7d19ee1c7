"""logsumexp and the softmax family as autograd Functions over ``kernels.reduce`` and
``kernels.softmax``; softmax's backward is a Function of its own, so it is differentiable in turn."""
from __future__ import annotations

from .. import _dtype
from ..autograd.function import BuiltinFunction
from tgrad.kernels.reductions import softmax as KS
from .common import check_runnable, wrap
from .reduce import ReadsResult, _dims, _expand_back
from .registry import op


class Logsumexp(ReadsResult):
    node_name = "LogsumexpBackward0"

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape, dims, keepdim = ctx.meta
        return _expand_back(g, *ctx.meta) * (x - _expand_back(out, shape, dims, keepdim)).exp(), None, None, None


class Softmax(BuiltinFunction):
    node_name = "SoftmaxBackward0"
    log = False

    @classmethod
    def forward(cls, ctx, x, dim, dtype):
        check_runnable(x)
        if dtype is not None:
            x = x.to(dtype)
        y = wrap(KS.softmax(x._data, dim, log=cls.log))
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @classmethod
    def backward(cls, ctx, g):
        y, = ctx.saved_tensors
        return cls.data_backward.apply(g, y, ctx.dim), None, None


class SoftmaxBackwardData(BuiltinFunction):
    """softmax's backward as a Function of its own (PyTorch's ``_softmax_backward_data``): the
    fused kernel, and its own derivative written once here (for create_graph).
    softmax: dx = y (g - sum(g y));  log_softmax (y the log-probabilities): dx = g - e^y sum(g)."""
    node_name = "SoftmaxBackwardDataBackward0"
    log = False

    @classmethod
    def forward(cls, ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return wrap(KS.softmax_backward(y._data, g._data, dim, log=cls.log))

    @classmethod
    def backward(cls, ctx, h):
        g, y = ctx.saved_tensors
        d, (need_g, need_y) = ctx.dim, ctx.needs_input_grad[:2]
        if cls.log:
            he = h * y.exp()
            dg = h - he.sum(d, keepdim=True) if need_g else None
            dy = -he * g.sum(d, keepdim=True) if need_y else None
        else:  # the Jacobian in g is symmetric: the same map applied to h
            dg = cls.apply(h, y, d) if need_g else None
            dy = h * (g - (g * y).sum(d, keepdim=True)) - g * (h * y).sum(d, keepdim=True) if need_y else None
        return dg, dy, None


class LogSoftmaxBackwardData(SoftmaxBackwardData):
    node_name = "LogSoftmaxBackwardDataBackward0"
    log = True


Softmax.data_backward = SoftmaxBackwardData


class LogSoftmax(Softmax):
    node_name = "LogSoftmaxBackward0"
    log = True
    data_backward = LogSoftmaxBackwardData


@op("logsumexp")
def logsumexp(x, dim, keepdim=False):
    return Logsumexp.apply(x if x.dtype.is_floating_point else x.float(), _dims(x, dim), keepdim, "logsumexp")


def _softmax(cls, what, x, dim, dtype):
    if dim is None:
        raise TypeError(f"{what}() missing required argument 'dim' (tgrad, like PyTorch 2, needs it explicitly)")
    d = x._dim(dim)  # a 0-d tensor takes dim 0 or -1
    dtype = _dtype.as_dtype(dtype) if dtype is not None else None
    if not (dtype or x.dtype).is_floating_point and x.numel():  # (PyTorch returns an empty input as is)
        kernel = f"{what}_lastdim_kernel_impl" if d == x.ndim - 1 or x.ndim == 0 or dtype is not None else \
            f"{what}_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.scalar_type}\'')
    if x.numel() == 0 and not (dtype or x.dtype).is_floating_point:
        return x.clone()
    return cls.apply(x, d, dtype)


@op("softmax")
def softmax(x, dim=None, dtype=None):
    return _softmax(Softmax, "softmax", x, dim, dtype)


@op("log_softmax")
def log_softmax(x, dim=None, dtype=None):
    return _softmax(LogSoftmax, "log_softmax", x, dim, dtype)
