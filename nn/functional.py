"""``tgrad.nn.functional``: PyTorch's functional API on fused Triton kernels.

- ``linear(x, W, b)`` = x W^T + b, with ``linear_act`` adding act(.) in the same matmul epilogue.
  Backward: dZ = dY * act'(.) (one pointwise launch, skipped without activation), then
  dX = dZ W, dW = dZ^T X (all leading dims folded into the matmul's K), db = sum_rows dZ summed
  by the dW launch beside its product.
- ``layer_norm``: one forward launch (row mean/rstd in fp32, saved), one backward launch for dx
  with dw/db as deterministic per-program partial sums (``kernels/layer_norm.py``).
- ``dropout``: y = x * keep / (1 - p) with a Philox keep-mask drawn from (seed, offset) and drawn
  again in the backward, never stored (``kernels/dropout.py``).
- ``embedding``: a checked row gather; backward scatter-adds rows with atomics
  (``kernels/embedding.py``). ``one_hot``: int64, no gradient.
- activations and softmax wrap the tgrad ops; the losses live in ``functional_loss.py``.

Each fused op is a ``tgrad.autograd.Function`` named as PyTorch names its node. Under
``create_graph`` the backward is written with differentiable tgrad ops instead of fused kernels,
so higher-order gradients are exact.
"""
from __future__ import annotations

import math
import numbers
import warnings

import tgrad
from tgrad import _dtype
from tgrad import ops
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.random import dropout as KD
from tgrad.kernels.indexing import embedding as KE
from tgrad.kernels.normalization import layer_norm as KLN
from tgrad.kernels import elementwise as M
from tgrad.kernels.linalg import matmul as KM
from tgrad.kernels.elementwise.pointwise import pointwise
from tgrad.kernels.reductions.reduce import reduce as _reduce
from tgrad.ops.formula import traced_backward
from tgrad.ops.inplace import write_inplace
from tgrad.ops.registry import NN_FUNCTIONAL
from tgrad.ops.table import BY_NAME as OP_ROWS
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.random import default_generator
from tgrad.tensor import Tensor

__all__ = ["linear", "linear_act", "layer_norm", "dropout", "embedding", "one_hot", "relu", "relu_",
           "gelu", "tanh", "sigmoid", "softmax", "log_softmax", *NN_FUNCTIONAL]

# ----------------------------------------------------------------------------- activations
# the core's op table has the activations PyTorch keeps in torch.nn.functional (silu, elu,
# hardtanh, mish, ...: each with ``inplace=``); the ones below are the core ops' own twins


def relu(input, inplace=False):
    return input.relu_() if inplace else tgrad.relu(input)


def relu_(input):
    return input.relu_()


def gelu(input, approximate="none"):
    return tgrad.gelu(input, approximate)


def tanh(input):
    return tgrad.tanh(input)


def sigmoid(input):
    return tgrad.sigmoid(input)


globals().update(NN_FUNCTIONAL)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return ops.log_softmax(input, dim, dtype=dtype)


# ----------------------------------------------------------------------------- linear

# activation -> (the unary op whose derivative it shares, its fused backward formula, whether
# that formula reads the output y or the pre-activation z)
_ACTS = {name: (OP_ROWS[name], "y" if OP_ROWS[name].saves == "y" else "z")
         for name in ("relu", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu")}


def _allow_tf32(t):
    return t.device.type == "cuda" and tgrad.backends.cuda.matmul.allow_tf32


class _Linear(BuiltinFunction):
    """y = act(x W^T + b) over x (*, K), W (N, K), b (N,) or None."""
    act = None
    edge_args = (0, 1, 2)

    @classmethod
    def forward(cls, ctx, x, weight, bias):
        N, K = weight.shape
        x2 = x._data.reshape(math.prod(x.shape[:-1]), K)  # (not -1: ambiguous when K or a batch dim is 0)
        kind = _ACTS[cls.act][1] if cls.act else None
        out = KM.matmul(x2, weight._data.t(), bias=None if bias is None else bias._data,
                        activation=cls.act, allow_tf32=_allow_tf32(x), return_preact=kind == "z")
        y, z = out if kind == "z" else (out, None)
        y = wrap(y.view(tuple(x.shape[:-1]) + (N,)))
        saved = y if kind == "y" else wrap(z) if kind == "z" else None
        ctx.save_for_backward(x, weight, bias, saved)
        return y

    @classmethod
    def backward(cls, ctx, g):
        x, w, b, s = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        N, K = w.shape
        rows = math.prod(x.shape[:-1])
        g2 = g._data.reshape(rows, N)
        if cls.act:  # dZ = dY act'(.): the activation row's derivative formula, one launch
            g2, = pointwise(_ACTS[cls.act][0].derivative, [s._data.reshape(rows, N), g2], g2.shape, [g2.dtype])
        tf32 = _allow_tf32(g)
        dx = wrap(KM.matmul(g2, w._data, allow_tf32=tf32).view(x.shape)) if nx else None
        if nw and nb:  # dW = dZ^T X and db = dZ^T 1 from one launch (db summed beside the product)
            dw, db = (wrap(t) for t in KM.matmul(g2.t(), x._data.reshape(rows, K), allow_tf32=tf32, rowsum=True))
            return dx, dw, db
        dw = wrap(KM.matmul(g2.t(), x._data.reshape(rows, K), allow_tf32=tf32)) if nw else None
        db = wrap(_reduce(g2, (0,), "sum")) if nb else None
        return dx, dw, db


    @classmethod
    def differentiable_backward(cls, ctx, g):  # the same formulas from differentiable ops
        x, w, b, s = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad[:3]
        N, K = w.shape
        gz = g
        if cls.act:
            row, kind = _ACTS[cls.act]
            gz = traced_backward(row.derivative, (s if kind == "y" else _linear_ops(x, w, b),), g, (), row.zero_edges)
        rows = math.prod(x.shape[:-1])
        g2 = gz.reshape(rows, N)
        return gz @ w if nx else None, g2.t() @ x.reshape(rows, K) if nw else None, g2.sum(0) if nb else None


class _PlainLinear(_Linear):
    """x W^T + b for a 2-D x, recorded as PyTorch records it: AddmmBackward0 with edges (bias, x,
    W^T), or MmBackward0 with (x, W^T), where W^T is a TBackward0 view of the weight."""
    node_name = "AddmmBackward0"

    @classmethod
    def forward(cls, ctx, bias, x, weight_t):
        y = super().forward.__func__(cls, ctx, x, weight_t.t(), bias)
        ctx.save_for_backward(x, weight_t)
        return y

    @staticmethod
    def backward(ctx, g):
        x, wt = ctx.saved_tensors
        nb, nx, nw = ctx.needs_input_grad[:3]
        tf32 = _allow_tf32(g)
        dx = wrap(KM.matmul(g._data, wt._data.t(), allow_tf32=tf32)) if nx else None
        if nw and nb:  # dW = dZ^T X and db = dZ^T 1 from one launch (db summed beside the product)
            dw, db = (wrap(t) for t in KM.matmul(g._data.t(), x._data, allow_tf32=tf32, rowsum=True))
        else:
            dw = wrap(KM.matmul(g._data.t(), x._data, allow_tf32=tf32)) if nw else None
            db = wrap(_reduce(g._data, (0,), "sum")) if nb else None
        return db, dx, None if dw is None else wrap(dw._data.t())

    @staticmethod
    def differentiable_backward(ctx, g):
        x, wt = ctx.saved_tensors
        nb, nx, nw = ctx.needs_input_grad[:3]
        return g.sum(0) if nb else None, g @ wt.t() if nx else None, x.t() @ g if nw else None


class _PlainMm(_PlainLinear):
    node_name = "MmBackward0"
    edge_args = (1, 2)


def _linear_ops(x, w, b):
    z = x @ w.t()
    return z + b if b is not None else z


def _linear_class(activation, has_bias):
    key = (activation, has_bias)
    cls = _LINEAR_CLASSES.get(key)
    if cls is None:
        if activation is None:
            name = "AddmmBackward0" if has_bias else "MmBackward0"
        else:
            name = _ACTS[activation][0].node  # the activation's own node name
        attrs = {"act": activation, "node_name": name}
        cls = type(f"Linear_{activation}", (_Linear,), attrs)
        _LINEAR_CLASSES[key] = cls
    return cls


_LINEAR_CLASSES: dict = {}


def linear_act(input, weight, bias=None, activation=None):
    """``act(input @ weight.T + bias)`` in one matmul launch; ``activation`` is None, 'relu',
    'gelu', 'gelu_tanh', 'tanh', 'sigmoid' or 'silu'."""
    if activation is not None and activation not in _ACTS:
        raise ValueError(f"unknown activation {activation!r}; expected None or one of {list(_ACTS)}")
    check_runnable(input, weight, bias)
    if weight.ndim != 2:
        raise RuntimeError(f"tgrad linear expects a 2-D weight (out_features, in_features), got "
                           f"shape {list(weight.shape)}")
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1]) if input.ndim else 1
        cols = input.shape[-1] if input.ndim else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype):
        other = weight if input.dtype is not weight.dtype else bias
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {input.dtype.c_type} != "
                           f"{other.dtype.c_type}")
    if input.dtype is _dtype.bool:
        raise NotImplementedError('"addmm_impl_cpu_" not implemented for \'Bool\'')
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        target = list(input.shape[:-1]) + [weight.shape[0]]
        raise RuntimeError(f"The expanded size of the tensor ({weight.shape[0]}) must match the existing "
                           f"size ({bias.shape[-1] if bias.ndim else 1}) at non-singleton dimension "
                           f"{len(target) - 1}.  Target sizes: {target}.  Tensor sizes: {list(bias.shape)}")
    if not input.dtype.is_floating_point:  # integers: exact, through the integer matmul
        if activation is not None:
            raise NotImplementedError(f"tgrad linear_act: activations need a floating point input, got "
                                      f"{input.dtype}")
        out = tgrad.matmul(input, weight.t())
        return out + bias if bias is not None else out
    if activation is None and input.ndim == 2:
        cls = _PlainLinear if bias is not None else _PlainMm
        return cls.apply(bias, input, weight.t())
    return _linear_class(activation, bias is not None).apply(input, weight, bias)


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` for input (*, in_features), weight (out_features, in_features)."""
    return linear_act(input, weight, bias, None)


# ----------------------------------------------------------------------------- layer_norm


class _LayerNorm(BuiltinFunction):
    node_name = "NativeLayerNormBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, weight, bias, normalized_shape, eps):
        D = math.prod(normalized_shape)
        M_ = math.prod(x.shape[:x.ndim - len(normalized_shape)])
        y, mean, rstd = KLN.layer_norm_forward(
            x._data.reshape(M_, D), None if weight is None else weight._data.reshape(D),
            None if bias is None else bias._data.reshape(D), eps)
        ctx.stats, ctx.meta = (mean, rstd), (normalized_shape, eps, M_, D)
        ctx.save_for_backward(x, weight, bias)
        return wrap(y.view(x.shape))

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        shape, eps, M_, D = ctx.meta
        nx, nw, nb = ctx.needs_input_grad[:3]
        mean, rstd = ctx.stats
        wb = w if w is not None else b
        dx, dw, db = KLN.layer_norm_backward(
            x._data.reshape(M_, D), g._data.reshape(M_, D),
            None if w is None else w._data.reshape(D), mean, rstd, need_dx=nx, need_wb=nw or nb,
            wb_dtype=None if wb is None else wb._data.dtype)
        return (wrap(dx.view(x.shape)) if nx else None, wrap(dw.view(shape)) if nw else None,
                wrap(db.view(shape)) if nb else None, None, None)

    @staticmethod
    def differentiable_backward(ctx, g):  # the kernel's formulas from differentiable ops
        x, w, b = ctx.saved_tensors
        shape, eps, _, _ = ctx.meta
        return _layer_norm_grads_ops(x, w, g, shape, eps, *ctx.needs_input_grad[:3]) + (None, None)


def _layer_norm_grads_ops(x, w, g, shape, eps, nx, nw, nb):
    """dx = rstd (gw - mean(gw) - xhat mean(gw xhat)), dw = sum g xhat, db = sum g, as tgrad ops."""
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    lead = tuple(range(x.ndim - len(shape)))
    xc = x - x.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    gw = g * w if w is not None else g
    dx = None
    if nx:
        dx = rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True))
    dw = ((g * xhat).sum(lead) if lead else g * xhat) if nw else None
    db = (g.sum(lead) if lead else g) if nb else None
    return dx, dw, db


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims: (x - mean) / sqrt(var + eps) * w + b,
    var the biased variance."""
    shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) else \
        tuple(int(s) for s in normalized_shape)
    check_runnable(input, weight, bias)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(t.shape)} and normalized_shape = {list(shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for \'{input.dtype.scalar_type}\'')
    return _LayerNorm.apply(input, weight, bias, shape, float(eps))


# ----------------------------------------------------------------------------- dropout


class _Dropout(BuiltinFunction):
    """y = x * keep / (1 - p), keep regenerated from (seed, offset) in the backward."""
    node_name = "NativeDropoutBackward0"

    @staticmethod
    def forward(ctx, x, p, seed, offset, state):
        check_runnable(x)
        ctx.cfg = (p, seed, offset, state)  # state: the graph's (seed, base) tensor when captured
        return wrap(KD.dropout(x._data, p, seed, offset, state))

    @staticmethod
    def backward(ctx, g):
        p, seed, offset, state = ctx.cfg
        # linear in g: the same masked scaling, itself a Function (recorded under create_graph)
        return _Dropout.apply(g, p, seed, offset, state), None, None, None, None


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (when training)."""
    if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:  # nothing is kept: PyTorch multiplies by zero (a MulBackward0 node)
        return input.mul_(0.0) if inplace else input * 0.0
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"dropout expects a floating point input, got {input.dtype}")
    seed, offset = default_generator._seed, default_generator.take(KD.counters_for(input.numel()))
    state = default_generator.graph_state
    if inplace:
        return write_inplace(input, lambda t: _Dropout.apply(t, float(p), seed, offset, state))
    return _Dropout.apply(input, float(p), seed, offset, state)


# ----------------------------------------------------------------------------- embedding


class _Embedding(BuiltinFunction):
    node_name = "EmbeddingBackward0"
    edge_args = (0,)  # the indices are not differentiable: no edge, as in PyTorch

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        out, bad = KE.embedding_forward(indices._data, weight._data)
        if bad is not None:  # PyTorch's text, then the offending value
            raise IndexError(f"index out of range in self (index {bad} for an embedding of "
                             f"{weight.shape[0]} rows)")
        ctx.meta = (weight.shape[0], padding_idx)
        ctx.save_for_backward(indices)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        V, padding_idx = ctx.meta
        # the row scatter-add is itself a Function (recorded under create_graph)
        return _EmbeddingDense.apply(g, indices, V, padding_idx), None, None


class _EmbeddingDense(BuiltinFunction):
    """The embedding backward as a differentiable op of g (for create_graph): its own gradient is
    the embedding of the incoming gradient, with the padding row zeroed."""
    node_name = "EmbeddingDenseBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, indices, V, padding_idx):
        ctx.save_for_backward(indices)
        ctx.padding_idx = padding_idx
        D = g.shape[-1]
        return wrap(KE.embedding_backward(indices._data, g._data.reshape(indices.numel(), D), V, padding_idx))

    @staticmethod
    def backward(ctx, gg):
        indices, = ctx.saved_tensors
        if ctx.padding_idx is not None:  # the padding row received nothing, so sends nothing back
            keep = ops.ones(gg.shape[0], 1, dtype=gg.dtype, device=gg.device)
            keep[ctx.padding_idx] = 0.0
            gg = gg * keep
        return embedding(indices, gg), None, None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer tensor ``input``; the
    ``padding_idx`` row gets no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("tgrad's embedding supports neither max_norm, scale_grad_by_freq nor sparse")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype.legacy} instead (while checking arguments for "
                           "embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.ndim}-D")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                                 f"num_embeddings={V})")
        padding_idx %= V
    check_runnable(input, weight)
    return _Embedding.apply(weight, input, padding_idx)


def one_hot(tensor, num_classes=-1):
    """int64 (*tensor.shape, num_classes) with a 1 at each index; num_classes=-1 takes max + 1."""
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo, hi = KE.index_range(tensor._data)  # one launch, one read-back
        if lo < 0:
            raise RuntimeError(f"Class values must be non-negative. (got {lo})")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"Class values must be smaller than num_classes. (got {hi} with "
                               f"num_classes={num_classes})")
    return wrap(KE.one_hot(tensor._data, int(num_classes)))


from .functional_loss import *  # noqa: E402,F401,F403
from .functional_loss import __all__ as _loss_all  # noqa: E402

from .functional_conv import *  # noqa: E402,F401,F403  (conv2d, max_pool2d, avg_pool2d, batch_norm)
from .functional_conv import __all__ as _conv_all  # noqa: E402

from .functional_extra import *  # noqa: E402,F401,F403  (prelu, mish, glu, kl_div, cosine_similarity ...)
from .functional_extra import __all__ as _extra_all  # noqa: E402

__all__ += _loss_all + _conv_all + _extra_all
from .functional_convnd import *  # noqa: E402,F401,F403  (conv1d, conv_transpose1d, conv_transpose2d)
from .functional_convnd import __all__ as _convnd_all  # noqa: E402

__all__ += _convnd_all

from .functional_pad import pad  # noqa: E402,F401

__all__ += ["pad"]

from .functional_pool import *  # noqa: E402,F401,F403  (adaptive pools, 1-d pools)
from .functional_pool import __all__ as _pool_all  # noqa: E402

__all__ += _pool_all

from .functional_resample import *  # noqa: E402,F401,F403  (interpolate, pixel_shuffle, unfold/fold, dropout1d/2d)
from .functional_resample import __all__ as _resample_all  # noqa: E402

__all__ += _resample_all

from .functional_attention import multi_head_attention_forward, scaled_dot_product_attention  # noqa: E402,F401
__all__ += ["scaled_dot_product_attention", "multi_head_attention_forward"]
from .functional_norm import group_norm, instance_norm, rms_norm  # noqa: E402,F401
__all__ += ["rms_norm", "group_norm", "instance_norm"]
from .functional_more import hardshrink, softshrink, threshold, threshold_  # noqa: E402,F401
__all__ += ["threshold", "threshold_", "hardshrink", "softshrink"]
