"""``linear(x, W, b)`` = x W^T + b, with ``linear_act`` adding act(.) in the same matmul epilogue;
``bilinear(x1, x2, W, b)`` = x1^T W_o x2 + b_o, composed: one matmul then a product summed over J.

Backward: dZ = dY * act'(.) (one pointwise launch, skipped without activation), then dX = dZ W,
dW = dZ^T X (all leading dims folded into the matmul's K), db = sum_rows dZ summed by the dW
launch beside its product. Each is a ``tgrad.autograd.Function`` named as PyTorch names its node.
"""
from __future__ import annotations

import functools
import math

import tgrad
from tgrad import _dtype
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import fused_backward
from tgrad.kernels.linalg import matmul as KM
from tgrad.kernels.elementwise.pointwise import pointwise
from tgrad.kernels.reductions.reduce import reduce as _reduce
from tgrad.ops.call_plans import PLANS, call_key
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.matmul_plans import plan_launch
from tgrad.tensor import Tensor
from tgrad.ops.formula import traced_backward
from tgrad.ops.table import BY_NAME as OP_ROWS

__all__ = ["linear", "linear_act", "bilinear"]


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
        ctx.save_for_backward(*cls._saved((x, weight, bias), y, None if z is None else wrap(z)))
        return y

    @classmethod
    def _saved(cls, args, y, z=None):
        """What backward reads of a call on ``args`` (forward's, a planned call's): the operands and,
        with an activation, its output y or its input z."""
        kind = _ACTS[cls.act][1] if cls.act else None
        return (*args, y if kind == "y" else z if kind == "z" else None)

    @classmethod
    def backward(cls, ctx, g):
        x, w, b, s = ctx.saved_tensors
        need = ctx.needs_input_grad[:3]
        return fused_backward(ctx, functools.partial(_linear_grads, cls.act, need),
                              functools.partial(_linear_grads_ops, cls.act, need), g, x, w, b, s,
                              depends=None if cls.act else ((0, 2), (0, 1), (0,)))


def _linear_grads(act, need, g, x, w, b, s):
    """(dx, dw, db) of y = act(x W^T + b), fused: dZ = dY act'(.) (the activation row's derivative
    formula, one launch), dX = dZ W, and dW = dZ^T X with db = dZ^T 1 beside it in one launch."""
    nx, nw, nb = need
    N, K = w.shape
    rows = math.prod(x.shape[:-1])
    g2 = g._data.reshape(rows, N)
    if act:
        g2, = pointwise(_ACTS[act][0].derivative, [s._data.reshape(rows, N), g2], g2.shape, [g2.dtype])
    tf32 = _allow_tf32(g)
    dx = wrap(KM.matmul(g2, w._data, allow_tf32=tf32).view(x.shape)) if nx else None
    if nw and nb:
        dw, db = (wrap(t) for t in KM.matmul(g2.t(), x._data.reshape(rows, K), allow_tf32=tf32, rowsum=True))
        return dx, dw, db
    dw = wrap(KM.matmul(g2.t(), x._data.reshape(rows, K), allow_tf32=tf32)) if nw else None
    db = wrap(_reduce(g2, (0,), "sum")) if nb else None
    return dx, dw, db


def _linear_grads_ops(act, need, g, x, w, b, s):
    """The same gradients from differentiable ops: act' is the same derivative formula, traced."""
    nx, nw, nb = need
    N, K = w.shape
    gz = g
    if act:
        row, kind = _ACTS[act]
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
        ctx.save_for_backward(*cls._saved((bias, x, weight_t), y))
        return y

    @classmethod
    def _saved(cls, args, y, z=None):
        return args[1:]  # x and W^T

    @staticmethod
    def backward(ctx, g):
        x, wt = ctx.saved_tensors
        return fused_backward(ctx, functools.partial(_plain_grads, ctx.needs_input_grad[:3]),
                              functools.partial(_plain_grads_ops, ctx.needs_input_grad[:3]), g, x, wt,
                              depends=((0,), (0, 2), (0, 1)))


def _plain_grads(need, g, x, wt):
    """(db, dx, dW^T) of bias + x W^T for 2-D x: dW = g^T x with db = g^T 1 in one launch."""
    nb, nx, nw = need
    tf32 = _allow_tf32(g)
    dx = wrap(KM.matmul(g._data, wt._data.t(), allow_tf32=tf32)) if nx else None
    if nw and nb:
        dw, db = (wrap(t) for t in KM.matmul(g._data.t(), x._data, allow_tf32=tf32, rowsum=True))
    else:
        dw = wrap(KM.matmul(g._data.t(), x._data, allow_tf32=tf32)) if nw else None
        db = wrap(_reduce(g._data, (0,), "sum")) if nb else None
    return db, dx, None if dw is None else wrap(dw._data.t())


def _plain_grads_ops(need, g, x, wt):
    nb, nx, nw = need
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
    # a call of tensors replays what its signature decided (tgrad/ops/matmul_plans.py)
    key = call_key(("linear", activation), (input, weight) if bias is None else (input, weight, bias)) \
        if type(input) is Tensor and type(weight) is Tensor and (bias is None or type(bias) is Tensor) and \
        (activation is None or activation in _ACTS) else None
    if key is None:
        return _linear_act(input, weight, bias, activation)
    plan = PLANS.get(key)
    if plan is not None:
        return plan((input, weight, bias))
    y = _linear_act(input, weight, bias, activation)
    _plan_linear(key, input, weight, bias, activation)
    return y


def _plan_linear(key, x, weight, bias, activation):
    """Keep the plan of a linear call ``key`` (its general path ran): a float call whose activation
    saves nothing but its output. (The input's rows are ``reshape``'s, as forward's: a view or a
    contiguous copy, decided by the shape and strides the key holds.)"""
    if not x.dtype.is_floating_point or x.dtype is not weight.dtype or \
            (activation is not None and _ACTS[activation][1] != "y"):
        return
    N, K = weight.shape
    shape = tuple(x.shape[:-1]) + (N,)
    run = KM.planned(*_operands((x, weight, bias)), activation)
    if activation is None and x.ndim == 2:  # (bias, x, W^T), as _PlainLinear / _PlainMm record it
        cls = _PlainLinear if bias is not None else _PlainMm
        plan_launch(cls, key, (x, weight, bias), run, _operands, lambda out, args: wrap(out),
                    lambda ctx, nodes, y: ctx.save_for_backward(*cls._saved(nodes, y)), _plain_args)
        return
    cls = _linear_class(activation, bias is not None)
    plan_launch(cls, key, (x, weight, bias), run, _operands, lambda out, args: wrap(out.view(shape)),
                lambda ctx, nodes, y: ctx.save_for_backward(*cls._saved(nodes, y)), lambda args: args)


def _plain_args(args):
    x, weight, bias = args
    return bias, x, weight.t()


def _operands(args):
    x, weight, bias = args
    rows = math.prod(x.shape[:-1])  # (not -1: ambiguous when K is 0)
    return x._data.reshape(rows, weight.shape[1]), weight._data.t(), None if bias is None else bias._data


def _linear_act(input, weight, bias, activation):
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


@autocast_policy(cpu='lower', cuda='lower')
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` for input (*, in_features), weight (out_features, in_features)."""
    return linear_act(input, weight, bias, None)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]: x1 (B, I) times W laid out (I, O J) in
    one matmul, then the (B, O, J) product with x2 summed over J (differentiable ops throughout)."""
    check_runnable(input1, input2, weight, bias)
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for d in range(input1.ndim - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: got "
                               f"{input1.shape[d]} and {input2.shape[d]}")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {weight.ndim}-D")
    O, I, J = weight.shape
    if input1.shape[-1] != I:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {I}")
    if input2.shape[-1] != J:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {J}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != O):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[0] if bias.ndim else 1} but expected {O}")
    lead = tuple(input1.shape[:-1])
    rows = math.prod(lead)
    t = input1.reshape(rows, I) @ weight.permute(1, 0, 2).reshape(I, O * J)
    y = (t.reshape(rows, O, J) * input2.reshape(rows, 1, J)).sum(-1).reshape(lead + (O,))
    return y + bias if bias is not None else y
