"""Running a pointwise formula (a ``@triton.jit`` function of ``kernels/math_*.py``) two ways.

- ``fused``: one launch of the strided pointwise kernel, the formula inlined; no graph.
- ``traced``: the formula's Python body evaluated on Tensors, with ``tl`` (and the helper formulas
  it calls) bound to differentiable tgrad ops, so that the result is recorded. This is how a
  derivative written once as a kernel formula also serves ``create_graph``.

A derivative formula often reads an input only through a comparison (relu's ``y > 0``); PyTorch's
node still has an edge to it with zero derivative, so a gradient of the gradient is zeros there
rather than an "unused input" error. ``traced_backward`` keeps those edges (``ZeroSlope``).

``derivative`` picks between the two for a backward: fused, or traced when the gradient itself is
recorded (``create_graph``).
"""
from __future__ import annotations

import types

import torch
from triton.runtime.jit import JITFunction

from .. import _dtype
from ..autograd.function import BuiltinFunction, edge_of, recording_backward
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from tgrad.kernels.helpers.dtypes import compute_dtype
from tgrad.kernels.elementwise.pointwise import pointwise
from . import registry
from .common import broadcast_shapes, wrap


def fused(formula, inputs, dtype, params=(), n_out=1, out=None, compute=None, shape=None):
    """``formula`` over Tensors ``inputs`` (broadcast) in one launch: a new Tensor of ``dtype`` (a
    tuple of ``n_out``), or written into ``out``."""
    data = [t._data for t in inputs]
    if shape is None:
        shape = broadcast_shape(data)
    outs = [out._data] if out is not None else None
    results = pointwise(formula, data, shape, [dtype.torch] * n_out, params, outs=outs,
                        compute=compute_dtype(compute.torch) if compute is not None else None)
    if out is not None:
        return out
    return wrap(results[0]) if n_out == 1 else tuple(wrap(r) for r in results)


def broadcast_shape(data):
    """The shape torch tensors ``data`` broadcast to."""
    shape = data[0].shape
    for d in data:
        if d.shape != shape:  # equal shapes (the common case) broadcast to themselves
            return broadcast_shapes(*(d.shape for d in data))
    return shape


def _fn(name):
    return lambda *args: registry.FUNCTIONS[name](*args)


def _of_tensors(name):
    """``tl.maximum(x, 0.0)``: tgrad.maximum takes tensors only (as PyTorch), a formula numbers too."""
    def op(a, b):
        like = a if isinstance(a, Tensor) else b
        return registry.FUNCTIONS[name](_as_tensor(a, like), _as_tensor(b, like))
    return op


# what the formulas use of ``triton.language``, on Tensors (looked up when called: the ops
# register after this module loads)
_LANGUAGE = types.SimpleNamespace(
    **{name: _fn(name) for name in ("where", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs",
                                    "floor", "ceil", "zeros_like")},
    **{name: _of_tensors(name) for name in ("maximum", "minimum")},
    math=types.SimpleNamespace(erf=_fn("erf")),
    float16=_dtype.float16, float32=_dtype.float32, float64=_dtype.float64)
# helper formulas that are public ops themselves: traced as the op (exact derivative, one node)
_AS_OPS = {M.expm1: _fn("expm1"), M.log1p: _fn("log1p"), M.tanh: _fn("tanh"), M.real_pow: _fn("pow"),
           M.scalar_pow: _fn("pow"), M.lgamma_of: _fn("lgamma"), M.digamma_of: _fn("digamma"),
           M.trigamma_of: lambda x: registry.FUNCTIONS["polygamma"](1, x), M.i0_of: _fn("i0"),
           M.polygamma_of: lambda x, n: registry.FUNCTIONS["polygamma"](int(n), x),
           M.erfinv: lambda x, p: registry.FUNCTIONS["erfinv"](x)}
_traced = {}


def traced(formula):
    """``formula``'s Python body as a function of Tensors (cached)."""
    fn = _traced.get(formula)
    if fn is None:
        src = formula.fn
        env = dict(src.__globals__, tl=_LANGUAGE)
        for name, value in src.__globals__.items():
            if isinstance(value, JITFunction):
                env[name] = _AS_OPS.get(value) or (lambda *a, _f=value: traced(_f)(*a))
        fn = _traced[formula] = types.FunctionType(src.__code__, env, src.__name__, src.__defaults__,
                                                   src.__closure__)
    return fn


def derivative(formula, saved, g, params=(), n_out=1, zero_edges=False):
    """A derivative formula run as (part of) a backward: fused in one launch, or traced on Tensors
    when the backward is itself recorded (``create_graph``), so its own derivative comes from the
    same formula: the derivative of an op is written once. ``saved``: the formula's inputs before
    ``g``; a tuple of ``n_out`` gradients for ``n_out > 1``."""
    if recording_backward():
        return traced_backward(formula, saved, g, params, zero_edges)
    return fused(formula, [*saved, g], g.dtype, params, n_out=n_out)


def _reaches(t: Tensor, target) -> bool:
    """Whether ``t``'s history leads to the graph node ``target``."""
    start = t._grad_fn
    seen, stack = set(), [start] if start is not None else []
    while stack:
        node = stack.pop()
        if node is target:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node._next if n is not None)
    return False


def traced_backward(formula, saved, g, params, zero_edges=False):
    """The derivative formula evaluated on Tensors: a gradient (or a tuple) with a history; with
    ``zero_edges`` still tied to every saved input that requires grad (as PyTorch's
    threshold_backward is, even where the derivative only compares the input)."""
    out = traced(formula)(*saved, g, tuple(params) + (0.0,) * (2 - len(params)))
    grads = out if isinstance(out, tuple) else (out,)
    grads = tuple(_as_tensor(d, g) for d in grads)
    for s in saved if zero_edges else ():
        if isinstance(s, Tensor) and s._requires_grad:
            node = edge_of(s)[0]
            grads = tuple(d if _reaches(d, node) else ZeroSlope.apply(d, s) for d in grads)
    return grads if isinstance(out, tuple) else grads[0]


def _as_tensor(d, like: Tensor) -> Tensor:
    """A formula's result that came out a plain number (``g * 0.5`` of a constant) as a Tensor."""
    if isinstance(d, Tensor):
        return d
    return wrap(torch.full(tuple(like.shape), d, dtype=like.dtype.torch, device=like.device))


class ZeroSlope(BuiltinFunction):
    """``value`` passed through, recorded as also depending on ``x`` with derivative zero.

    Where PyTorch's backward formula reads a saved input only through a step (relu's mask, the
    class nll_loss picks, a pooling window), its gradient node still has an edge to that input, so
    differentiating the gradient again gives zeros for it (``undefined=True``: nothing, as for
    conv's input) instead of the error for a tensor that was not used. It launches nothing."""
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
