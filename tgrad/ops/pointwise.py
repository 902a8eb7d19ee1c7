"""Elementwise ops as autograd Functions over ``kernels.pointwise``.

Unary ops pair a forward formula with a fused backward formula from ``kernels/math_ops.py``
(``g * f'(x)`` in one launch). Binary ops broadcast by strides (no copies) and return full-shape
gradients that ``sum_to_shape`` reduces back to each input's shape.
"""
from __future__ import annotations

import math

import torch

from .. import _dtype
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, check_inplace
from tgrad.kernels import math_ops as M
from tgrad.kernels.pointwise import compute_dtype, pointwise
from ._common import Builtin, as_operand, broadcast_shapes, check_runnable, result_type, sum_to_shape, wrap


def map_(op, inputs, dtype=None, params=(), out=None, compute=None, shape=None):
    """Run formula ``op`` over tensors ``inputs`` (broadcast); returns a new Tensor, or writes ``out``."""
    shape = shape if shape is not None else broadcast_shapes(*(t.shape for t in inputs))
    dtype = dtype or inputs[0].dtype
    outs = [out._data] if out is not None else None
    data, = pointwise(op, [t._data for t in inputs], shape, [dtype.torch], params, outs=outs,
                      compute=compute_dtype(compute.torch) if compute is not None else None)
    return out if out is not None else wrap(data)


def map2(op, inputs, dtype, params=()):
    """A two-output formula (a fused backward): returns both outputs."""
    shape = broadcast_shapes(*(t.shape for t in inputs))
    a, b = pointwise(op, [t._data for t in inputs], shape, [dtype.torch, dtype.torch], params)
    return wrap(a), wrap(b)


def _float_dtype(x: Tensor):
    return x.dtype if x.dtype.is_floating_point else _dtype.get_default_dtype()


# ----------------------------------------------------------------------------- unary

def unary(name, forward, backward=None, saves="x", float_only=True):
    """A differentiable unary Function: y = forward(x, params), dx = backward(saved, g, params)."""

    class Unary(Builtin):
        node_name, n_edges = f"{name}Backward0", 1

        @staticmethod
        def forward(ctx, x, params=()):
            check_runnable(x)
            y = map_(forward, [x], _float_dtype(x) if float_only else x.dtype, params)
            ctx.params = params
            if backward is not None:
                ctx.save_for_backward(x if saves == "x" else y)
            return y

        @staticmethod
        def backward(ctx, g):
            if backward is None:  # sign/floor/ceil/round: the derivative is zero almost everywhere
                return wrap(torch.zeros(g._data.shape, dtype=g._data.dtype, device=g.device)), None
            s, = ctx.saved_tensors
            return map_(backward, [s, g], g.dtype, ctx.params), None

    Unary.__name__ = Unary.__qualname__ = name
    return Unary


Neg = unary("Neg", M.neg, None, float_only=False)
Neg.backward = staticmethod(lambda ctx, g: (neg(g), None))
Abs = unary("Abs", M.abs_, M.abs_bwd, float_only=False)
Exp = unary("Exp", M.exp, M.mul_bwd_y, saves="y")
Log = unary("Log", M.log, M.log_bwd)
Sqrt = unary("Sqrt", M.sqrt, M.sqrt_bwd, saves="y")
Rsqrt = unary("Rsqrt", M.rsqrt, M.rsqrt_bwd, saves="y")
Reciprocal = unary("Reciprocal", M.reciprocal, M.reciprocal_bwd, saves="y")
Sin = unary("Sin", M.sin, M.sin_bwd)
Cos = unary("Cos", M.cos, M.cos_bwd)
Tanh = unary("Tanh", M.tanh_, M.tanh_bwd, saves="y")
Sigmoid = unary("Sigmoid", M.sigmoid, M.sigmoid_bwd, saves="y")
Relu = unary("Relu", M.relu, M.relu_bwd, saves="y", float_only=False)
Gelu = unary("Gelu", M.gelu, M.gelu_bwd)
GeluTanh = unary("Gelu", M.gelu_tanh, M.gelu_tanh_bwd)
Silu = unary("Silu", M.silu, M.silu_bwd)
Softplus = unary("Softplus", M.softplus, M.softplus_bwd)
LeakyRelu = unary("LeakyRelu", M.leaky_relu, M.leaky_relu_bwd)
Elu = unary("Elu", M.elu, M.elu_bwd)
Clamp = unary("Clamp", M.clamp, M.clamp_bwd, float_only=False)
Clamp._backward_cls.__name__ = "ClampBackward1"
PowScalar = unary("Pow", M.pow_scalar, M.pow_scalar_bwd)
Sign = unary("Sign", M.sign, float_only=False)
Floor = unary("Floor", M.floor, float_only=False)
Ceil = unary("Ceil", M.ceil, float_only=False)
Round = unary("Round", M.round_, float_only=False)


def neg(x):
    return Neg.apply(x)


# ----------------------------------------------------------------------------- binary

class _Binary(Builtin):
    """a (op) b with broadcasting; a Python number operand is a 0-d constant (next_functions (None, 0))."""

    formula = backward_formula = None
    n_edges = 2
    scale_b = 1.0
    edge_args = (0, 1)  # a number operand is an edge to nothing: (None, 0), as in PyTorch
    # Save only what backward reads (PyTorch's MulBackward0 keeps `other` alone for `y * 3`): an
    # in-place change to a tensor nothing needs must not break backward (spec F.26).
    a_only_for_b = b_only_for_a = False

    @classmethod
    def prepare(cls, a, b):
        dtype = result_type(a, b)
        if cls.true_division and not dtype.is_floating_point:
            dtype = _dtype.get_default_dtype()
        ref = a if isinstance(a, Tensor) else b
        a, b = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
        check_runnable(a, b)
        return a, b, dtype

    true_division = False

    @classmethod
    def forward(cls, ctx, a, b, alpha=1.0):
        ta, tb, dtype = cls.prepare(a, b)
        ctx.shapes, ctx.alpha = (ta.shape, tb.shape), alpha
        na, nb = ctx.needs_input_grad[:2]
        ctx.save_for_backward(None if cls.a_only_for_b and not nb else ta,  # a number is saved as a 0-d constant
                              None if cls.b_only_for_a and not na else tb)
        return map_(cls.formula, [ta, tb], dtype, (alpha,))


class Add(_Binary):
    node_name, formula = "AddBackward0", M.add

    @staticmethod
    def forward(ctx, a, b, alpha=1.0):
        ta, tb, dtype = Add.prepare(a, b)
        ctx.shapes, ctx.alpha = (ta.shape, tb.shape), alpha
        return map_(M.add, [ta, tb], dtype, (alpha,))

    @staticmethod
    def backward(ctx, g):
        ga = sum_to_shape(g, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = None
        if ctx.needs_input_grad[1]:
            gb = sum_to_shape(g if ctx.alpha == 1 else g * ctx.alpha, ctx.shapes[1])
        return ga, gb, None


class Sub(_Binary):
    node_name, formula = "SubBackward0", M.sub

    @staticmethod
    def forward(ctx, a, b, alpha=1.0):
        ta, tb, dtype = Sub.prepare(a, b)
        ctx.shapes, ctx.alpha = (ta.shape, tb.shape), alpha
        return map_(M.sub, [ta, tb], dtype, (alpha,))

    @staticmethod
    def backward(ctx, g):
        ga = sum_to_shape(g, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = sum_to_shape(g * (-ctx.alpha), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb, None


class Rsub(Builtin):
    """c - x for a Python number c (PyTorch's RsubBackward1: one edge)."""
    node_name, n_edges = "RsubBackward1", 1

    @staticmethod
    def forward(ctx, x, c):
        dtype = result_type(x, c)
        return map_(M.sub, [as_operand(c, x, dtype), x], dtype, (1.0,))

    @staticmethod
    def backward(ctx, g):
        return neg(g), None


def _binary_backward(formula):
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        da, db = map2(formula, [a, b, g], g.dtype)
        return (sum_to_shape(da, ctx.shapes[0]) if na else None,
                sum_to_shape(db, ctx.shapes[1]) if nb else None, None)
    return staticmethod(backward)


class Mul(_Binary):
    node_name, formula = "MulBackward0", M.mul
    a_only_for_b = b_only_for_a = True

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        if na and nb:
            da, db = map2(M.mul_bwd, [a, b, g], g.dtype)
        else:  # one product only: the other operand may be a constant
            da = g * b if na else None
            db = g * a if nb else None
        return (sum_to_shape(da, ctx.shapes[0]) if na else None,
                sum_to_shape(db, ctx.shapes[1]) if nb else None, None)


class Div(_Binary):
    node_name, formula, true_division = "DivBackward0", M.div, True
    a_only_for_b = True

    @staticmethod
    def backward(ctx, g):
        if ctx.needs_input_grad[1]:
            return _binary_backward(M.div_bwd).__func__(ctx, g)
        _, b = ctx.saved_tensors  # d(a/b)/da = 1/b: a was not saved
        return sum_to_shape(g / b, ctx.shapes[0]), None, None


class Pow(_Binary):
    node_name, formula = "PowBackward1", M.pow_
    backward = _binary_backward(M.pow_bwd)


class Maximum(_Binary):
    node_name, formula = "MaximumBackward0", M.maximum
    backward = _binary_backward(M.maximum_bwd)


class Minimum(_Binary):
    node_name, formula = "MinimumBackward0", M.minimum
    backward = _binary_backward(M.minimum_bwd)


class Where(Builtin):
    """y = cond ? a : b, called as ``apply(cond, a, b)`` like torch.where; the node's edges are a's
    and b's only, since the condition is not differentiable."""
    node_name, n_edges = "WhereBackward0", 2

    @classmethod
    def apply(cls, cond, a, b):
        return super().apply(a, b, cond)

    @staticmethod
    def forward(ctx, a, b, cond):
        dtype = result_type(a, b)
        ref = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
        ta, tb = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
        check_runnable(cond, ta, tb)
        if cond.dtype is not _dtype.bool:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{cond.dtype.name.capitalize()}")
        ctx.shapes = (ta.shape, tb.shape)
        ctx.save_for_backward(cond)
        return map_(M.where, [cond, ta, tb], dtype)

    @staticmethod
    def backward(ctx, g):
        cond, = ctx.saved_tensors
        da, db = map2(M.where_bwd, [cond, g], g.dtype)
        return (sum_to_shape(da, ctx.shapes[0]) if ctx.needs_input_grad[0] else None,
                sum_to_shape(db, ctx.shapes[1]) if ctx.needs_input_grad[1] else None, None)


def compare(formula, a, b):
    """Comparisons and logical ops: bool results, never differentiable."""
    dtype = result_type(a, b)
    ref = a if isinstance(a, Tensor) else b
    ta, tb = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
    check_runnable(ta, tb)
    return map_(formula, [ta, tb], _dtype.bool, compute=dtype)


# ----------------------------------------------------------------------------- casts and copies

class ToCopy(Function):
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype, device):
        ctx.src = (x.dtype, x.device)
        if device != x.device:  # a transfer is a storage copy, which torch does
            data = x._data.to(device)
            src = wrap(data)
            return src if dtype is x.dtype else map_(M.identity, [src], dtype, compute=dtype)
        check_runnable(x)
        return map_(M.identity, [x], dtype, compute=dtype if dtype.is_floating_point or x.dtype is _dtype.bool
                    else dtype)

    @staticmethod
    def backward(ctx, g):
        dtype, device = ctx.src
        return ToCopy.apply(g, dtype, device), None, None


class Clone(Function):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        check_runnable(x)
        return map_(M.identity, [x], x.dtype, compute=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


class Copy(Function):
    """``dst.copy_(src)`` recorded: the old value of dst gets no gradient, src gets it summed back
    over the dims it was broadcast along."""
    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, dst, src):
        check_runnable(dst, src)
        ctx.src_meta = (src.shape, src.dtype)
        return map_(M.second, [dst, src], dst.dtype, compute=dst.dtype)

    @staticmethod
    def backward(ctx, g):
        shape, dtype = ctx.src_meta
        gs = sum_to_shape(g, shape) if ctx.needs_input_grad[1] else None
        g0 = map_(M.fill, [g], g.dtype, (0.0,)) if ctx.needs_input_grad[0] else None
        return g0, (gs.to(dtype) if gs is not None and gs.dtype is not dtype else gs)


class Fill(Function):
    node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, dst, value):
        return map_(M.fill, [dst], dst.dtype, (value,))

    @staticmethod
    def backward(ctx, g):
        return map_(M.fill, [g], g.dtype, (0.0,)), None


# ----------------------------------------------------------------------------- in place

def inplace(t: Tensor, fn, *others, formula=None, params=()):
    """``t <- fn(t, *others)`` in place. Without a graph to record, the kernel writes straight into
    ``t`` (one launch); with one, the out-of-place result is computed, copied in, and ``t`` takes
    its history (PyTorch's rebase), after the tensors the new node saved are protected."""
    check_inplace(t)
    record = is_grad_enabled() and (t._requires_grad or any(isinstance(o, Tensor) and o._requires_grad
                                                          for o in others))
    if not record and formula is not None:
        ops = [t] + [as_operand(o, t, t.dtype) for o in others]
        check_runnable(*ops)
        if tuple(broadcast_shapes(*(o.shape for o in ops))) != tuple(t.shape):
            raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                               f"{list(broadcast_shapes(*(o.shape for o in ops)))}")
        map_(formula, ops, t.dtype, params, out=t, compute=result_type(t, *others), shape=t.shape)
        t._version.value += 1
        return t
    result = fn(t, *others)
    if tuple(result.shape) != tuple(t.shape):
        raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    from .views import rebase_history
    rebase_history(t, result)
    return t
