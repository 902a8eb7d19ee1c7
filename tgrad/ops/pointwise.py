"""Elementwise ops as autograd Functions over ``kernels.pointwise``.

Unary ops pair a forward formula with a fused backward formula from ``kernels/math_ops.py``
(``g * f'(x)`` in one launch). Binary ops broadcast by strides (no copies) and return full-shape
gradients that ``sum_to_shape`` reduces back to each input's shape.
"""
from __future__ import annotations

import math

import torch

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor, check_inplace
from tgrad.kernels import math_ops as M
from tgrad.kernels.pointwise import compute_dtype, pointwise
from ._common import as_operand, broadcast_shapes, check_runnable, result_type, sum_to_shape, wrap


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

    class Unary(BuiltinFunction):
        node_name = f"{name}Backward0"

        @staticmethod
        def forward(ctx, x, params=()):
            check_runnable(x)
            # the kernel keeps bool operands bool (for masks): a float formula needs them cast first
            src = x.to(_float_dtype(x)) if float_only and x.dtype is _dtype.bool else x
            y = map_(forward, [src], _float_dtype(x) if float_only else x.dtype, params)
            ctx.params = params
            if backward is not None:
                ctx.save_for_backward(x if saves == "x" else y)
            return y

        @staticmethod
        def backward(ctx, g):
            if backward is None:  # sign/floor/ceil/round: the derivative is zero almost everywhere
                return wrap(torch.zeros(g._data.shape, dtype=g._data.dtype, device=g.device)), None
            s, = ctx.saved_tensors
            if is_grad_enabled() and Unary.derivative is not None and (s._requires_grad or g._requires_grad):
                # create_graph: g * f'(.) from differentiable ops, so the gradient has a history
                return g * Unary.derivative(s, *ctx.params), None
            return map_(backward, [s, g], g.dtype, ctx.params), None

        derivative = None  # f' from the saved tensor (x or y) and params, set below for create_graph

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


class ClampTensor(BuiltinFunction):
    """y = min(max(x, lo), hi) with tensor (or number) bounds, either one absent (None): PyTorch's
    ClampBackward0, an edge for each of x, min, max. g goes to whichever value was selected: x
    between the bounds, min where x < min < max, max where x > max or max < min (as PyTorch)."""
    node_name = "ClampBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, lo, hi):
        dtype = result_type(*(t for t in (x, lo, hi) if t is not None))
        info = torch.finfo(dtype.torch) if dtype.is_floating_point else torch.iinfo(dtype.torch)
        lo = as_operand(-math.inf if dtype.is_floating_point else info.min, x, dtype) if lo is None else \
            as_operand(lo, x, dtype)
        hi = as_operand(math.inf if dtype.is_floating_point else info.max, x, dtype) if hi is None else \
            as_operand(hi, x, dtype)
        check_runnable(x, lo, hi)
        ctx.dtype, ctx.shapes = dtype, (x.shape, lo.shape, hi.shape)
        ctx.save_for_backward(x, lo, hi)
        return map_(M.clamp_t, [x, lo, hi], dtype)

    @staticmethod
    def backward(ctx, g):
        saved = ctx.saved_tensors
        return tuple(sum_to_shape(Where.apply(map_(mask, list(saved), _dtype.bool, compute=ctx.dtype), g, 0.0),
                                  shape) if needed else None
                     for mask, shape, needed in zip((M.clamp_t_x, M.clamp_t_lo, M.clamp_t_hi), ctx.shapes,
                                                    ctx.needs_input_grad))


def _gelu_tanh_derivative(x):
    k = math.sqrt(2 / math.pi)
    t = ((x + x * x * x * 0.044715) * k).tanh()
    return (1 + t) * 0.5 + x * (1 - t * t) * (1 + x * x * (3 * 0.044715)) * (0.5 * k)


def _derivatives():
    """f'(x) (or f' in terms of y = f(x) for ops that save y), used by backward under create_graph."""
    def step(mask, like):
        return mask.to(like.dtype)

    # relu' and leaky_relu' keep an edge to their input (with zero derivative), as PyTorch's
    # threshold_backward does, so that differentiating the gradient again gives zeros
    table = {
        Exp: lambda y: y,
        Log: lambda x: x.reciprocal(),
        Sqrt: lambda y: y.reciprocal() * 0.5,
        Rsqrt: lambda y: y * y * y * -0.5,
        Reciprocal: lambda y: -(y * y),
        Sin: lambda x: x.cos(),
        Cos: lambda x: -x.sin(),
        Tanh: lambda y: 1 - y * y,
        Sigmoid: lambda y: y * (1 - y),
        Relu: lambda y: y.sign(),  # y >= 0: sign(y) is the step, and Sign's gradient is zero
        Abs: lambda x: x.sign(),
        PowScalar: lambda x, e: (x ** (e - 1)) * e if e != 0 else x * 0,
        Silu: lambda x: x.sigmoid() * (1 + x * (1 - x.sigmoid())),
        LeakyRelu: lambda x, slope: ZeroSlope.apply(Where.apply(x > 0, 1.0, slope), x),
        Clamp: lambda x, lo, hi: step((x >= lo).logical_and(x <= hi), x),
        Softplus: lambda x, beta, threshold: Where.apply(x * beta > threshold, 1.0, (x * beta).sigmoid()),
        Elu: lambda x, alpha: Where.apply(x > 0, 1.0, x.exp() * alpha),
        # gelu' = Phi(x) + x phi(x), with Phi(x) = gelu(x) / x (no erf op needed); at 0, Phi is
        # written 1/2 + x phi(0) so that its derivative there is still phi(0)
        Gelu: lambda x: (Where.apply(x == 0, x * (2 * math.pi) ** -0.5 + 0.5,
                                     Gelu.apply(x) / Where.apply(x == 0, 1.0, x))
                         + x * (x * x * -0.5).exp() * (2 * math.pi) ** -0.5),
        GeluTanh: lambda x: _gelu_tanh_derivative(x),
    }
    for cls, d in table.items():
        cls.derivative = staticmethod(d)


_derivatives()


# ----------------------------------------------------------------------------- binary

class _Binary(BuiltinFunction):
    """a (op) b with broadcasting; a Python number operand is a 0-d constant (next_functions (None, 0))."""

    formula = backward_formula = None
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
        if alpha == 1:  # a + 1*b is a + b exactly; a formula without a parameter runs fewer ops
            return map_(M.add_plain, [ta, tb], dtype)
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
        if alpha == 1:
            return map_(M.sub_plain, [ta, tb], dtype)
        return map_(M.sub, [ta, tb], dtype, (alpha,))

    @staticmethod
    def backward(ctx, g):
        ga = sum_to_shape(g, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        gb = sum_to_shape(g * (-ctx.alpha), ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return ga, gb, None


class Rsub(BuiltinFunction):
    """c - x for a Python number c (PyTorch's RsubBackward1: one edge)."""
    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, x, c):
        dtype = result_type(x, c)
        return map_(M.sub_plain, [as_operand(c, x, dtype), x], dtype)

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

    @classmethod
    def forward(cls, ctx, a, b, alpha=1.0):
        ctx.square = a is b  # x * x (an L2 penalty's p * p): both gradients are one product
        return super().forward(ctx, a, b, alpha)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        if ctx.square and na and nb and not is_grad_enabled():
            # both edges lead to the same place, where the engine would add g a + g a: one launch
            # of 2 g a on the first edge gives the same sum (doubling is exact)
            return map_(M.square_bwd, [a, g], g.dtype), None, None
        if na and nb and not is_grad_enabled():  # one fused launch, unless create_graph needs history
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
        na, nb = ctx.needs_input_grad[:2]
        a, b = ctx.saved_tensors  # a is saved only when b needs a gradient
        if nb and not is_grad_enabled():
            return _binary_backward(M.div_bwd).__func__(ctx, g)
        da = sum_to_shape(g / b, ctx.shapes[0]) if na else None
        db = sum_to_shape(-g * a / (b * b), ctx.shapes[1]) if nb else None
        return da, db, None


def int_pow(a: Tensor, b: Tensor, dtype):
    """Powers with an integer result (never differentiable): fp64 exp/log, rounded back (3**5 is 243)."""
    a, b = (t.to(dtype) if t.dtype is _dtype.bool else t for t in (a, b))
    return map_(M.pow_, [a, b], dtype, (1.0, 1.0), compute=_dtype.float64)


class Pow(_Binary):
    node_name, formula = "PowBackward1", M.pow_

    @classmethod
    def forward(cls, ctx, a, b, alpha=1.0):
        if result_type(a, b).is_floating_point:
            return super().forward(ctx, a, b)
        ta, tb, dtype = cls.prepare(a, b)
        return int_pow(ta, tb, dtype)

    @staticmethod
    def backward(ctx, g):
        if not is_grad_enabled():
            return _binary_backward(M.pow_bwd).__func__(ctx, g)
        a, b = ctx.saved_tensors  # create_graph: d a^b = b a^(b-1) da + a^b log(a) db
        na, nb = ctx.needs_input_grad[:2]
        da = sum_to_shape(Where.apply(b == 0, 0.0, g * b * a ** (b - 1)), ctx.shapes[0]) if na else None
        db = sum_to_shape(Where.apply((a == 0).logical_and(b >= 0), 0.0, g * a ** b * a.log()),
                          ctx.shapes[1]) if nb else None
        return da, db, None


class PowScalarBase(BuiltinFunction):
    """y = c^x for a Python number c (PyTorch's PowBackward2: one edge). dy/dx = c^x ln c, taken as
    0 where c = 0 and x >= 0 (as PyTorch)."""
    node_name = "PowBackward2"

    @staticmethod
    def forward(ctx, x, c):
        dtype = result_type(c, x)
        tc = as_operand(c, x, dtype)
        check_runnable(tc, x)
        if not dtype.is_floating_point:
            return int_pow(tc, x, dtype)
        ctx.save_for_backward(tc, x)
        return map_(M.pow_, [tc, x], dtype)

    @staticmethod
    def backward(ctx, g):
        tc, x = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the same formula from differentiable ops
            return Where.apply((tc == 0).logical_and(x >= 0), 0.0, g * tc ** x * tc.log()), None
        _, dx = map2(M.pow_bwd, [tc, x, g], g.dtype)
        return dx, None

def _extreme_backward(formula, wins):
    def backward(ctx, g):
        if not is_grad_enabled():
            return _binary_backward(formula).__func__(ctx, g)
        # create_graph: the fused formula's masks (ties split evenly), applied with differentiable ops
        a, b = ctx.saved_tensors
        na, nb = ctx.needs_input_grad[:2]
        tie = (a == b).to(g.dtype) * 0.5
        da = sum_to_shape(g * (wins(a, b).to(g.dtype) + tie), ctx.shapes[0]) if na else None
        db = sum_to_shape(g * (wins(b, a).to(g.dtype) + tie), ctx.shapes[1]) if nb else None
        return da, db, None
    return staticmethod(backward)


class Maximum(_Binary):
    node_name, formula = "MaximumBackward0", M.maximum
    backward = _extreme_backward(M.maximum_bwd, lambda a, b: a > b)


class Minimum(_Binary):
    node_name, formula = "MinimumBackward0", M.minimum
    backward = _extreme_backward(M.minimum_bwd, lambda a, b: a < b)


class Where(BuiltinFunction):
    """y = cond ? a : b; the node's edges are a's and b's only (the condition is not differentiable)."""
    node_name = "WhereBackward0"
    edge_args = (1, 2)

    @staticmethod
    def forward(ctx, cond, a, b):
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
        if is_grad_enabled() and g._requires_grad:  # create_graph: keep g's history
            da, db = Where.apply(cond, g, 0.0), Where.apply(cond, 0.0, g)
        else:
            da, db = map2(M.where_bwd, [cond, g], g.dtype)
        return (None, sum_to_shape(da, ctx.shapes[0]) if ctx.needs_input_grad[1] else None,
                sum_to_shape(db, ctx.shapes[1]) if ctx.needs_input_grad[2] else None)


class ZeroSlope(BuiltinFunction):
    """``value`` passed through, recorded as also depending on ``x`` with derivative zero.

    Where PyTorch's backward formula reads a saved input only through a step (relu's mask, the
    class nll_loss picks, a pooling window), its gradient node still has an edge to that input, so
    differentiating the gradient again gives zeros for it (``undefined=True``: nothing, as for
    conv's input) instead of the error for a tensor that was not used. tgrad's composite gradients
    get the same edge from this node; it launches nothing."""
    node_name = "ZeroSlopeBackward0"
    edge_args = (0, 1)

    @staticmethod
    def forward(ctx, value, x, undefined=False):
        ctx.x_meta, ctx.undefined = (x.shape, x.dtype, x.device), undefined
        return value

    @staticmethod
    def backward(ctx, g):
        if ctx.undefined or not ctx.needs_input_grad[1]:
            return g, None, None
        shape, dtype, device = ctx.x_meta
        return g, wrap(torch.zeros(tuple(shape), dtype=dtype.torch, device=device)), None


def compare(formula, a, b):
    """Comparisons and logical ops: bool results, never differentiable."""
    dtype = result_type(a, b)
    ref = a if isinstance(a, Tensor) else b
    ta, tb = as_operand(a, ref, dtype), as_operand(b, ref, dtype)
    check_runnable(ta, tb)
    return map_(formula, [ta, tb], _dtype.bool, compute=dtype)


# ----------------------------------------------------------------------------- casts and copies

class ToCopy(BuiltinFunction):
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


class Clone(BuiltinFunction):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        check_runnable(x)
        if x._data.is_contiguous():  # a storage copy needs no kernel launch
            return wrap(x._data.clone(memory_format=torch.contiguous_format))
        return map_(M.identity, [x], x.dtype, compute=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


class Copy(BuiltinFunction):
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


class Fill(BuiltinFunction):
    """``t.fill_(number)`` recorded: the old value gets a zero gradient."""
    node_name = "FillBackward2"

    @staticmethod
    def forward(ctx, dst, value):
        return map_(M.fill, [dst], dst.dtype, (value,))

    @staticmethod
    def backward(ctx, g):
        return map_(M.fill, [g], g.dtype, (0.0,)), None


class Zero(Fill):
    node_name = "ZeroBackward0"


class FillTensor(BuiltinFunction):
    """``t.fill_(v)`` with a 0-d tensor ``v`` recorded: v gets the sum of the gradient."""
    node_name = "FillBackward3"

    @staticmethod
    def forward(ctx, dst, value):
        check_runnable(dst, value)
        ctx.value_dtype = value.dtype
        return map_(M.second, [dst, value], dst.dtype, shape=dst.shape, compute=dst.dtype)

    @staticmethod
    def backward(ctx, g):
        gv = sum_to_shape(g, ()) if ctx.needs_input_grad[1] else None
        return (map_(M.fill, [g], g.dtype, (0.0,)) if ctx.needs_input_grad[0] else None,
                gv.to(ctx.value_dtype) if gv is not None else None)


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
