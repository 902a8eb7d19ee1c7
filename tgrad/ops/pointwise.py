"""The elementwise ops whose arguments need more than a table row says: ``c - x`` for a number
``c``, integer powers, ``where``, tensor-bounded clamps, and the copies and fills (add, sub, mul,
div, pow, maximum and minimum are rows of the op table). Each derivative is written once: a
derivative formula, run fused or (when the gradient is recorded) traced by
``formula.derivative``, or a composition of differentiable ops.

Binary ops broadcast by strides (no copies) and return gradients in the broadcast shape: the
engine sums them back to each input's shape.
"""
from __future__ import annotations

import math

import torch

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.elementwise import integer as I
from tgrad.kernels import elementwise as M
from .common import as_operand, check_runnable, result_type, wrap
from .formula import derivative, fused


# ----------------------------------------------------------------------------- binary

class Rsub(BuiltinFunction):
    """c - x for a Python number c (PyTorch's RsubBackward1: one edge)."""
    node_name = "RsubBackward1"

    @staticmethod
    def forward(ctx, x, c):
        dtype = result_type(x, c)
        return fused(M.sub_plain, [as_operand(c, x, dtype), x], dtype)

    @staticmethod
    def backward(ctx, g):
        return -g, None


def int_pow(a: Tensor, b: Tensor, dtype):
    """Powers with an integer result (never differentiable): by squaring in the integer dtype (exact)."""
    a, b = (t.to(dtype) if t.dtype is _dtype.bool else t for t in (a, b))
    return fused(I.pow_int, [a, b], dtype, compute=dtype)


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
        ctx.save_for_backward(cond)
        return fused(M.where, [cond, ta, tb], dtype)

    @staticmethod
    def backward(ctx, g):
        da, db = derivative(M.where_bwd, ctx.saved_tensors, g, n_out=2)
        return None, da if ctx.needs_input_grad[1] else None, db if ctx.needs_input_grad[2] else None


class ClampTensor(BuiltinFunction):
    """y = min(max(x, lo), hi) with tensor (or number) bounds, either one absent (None): PyTorch's
    ClampBackward0, an edge for each of x, min, max. g goes to whichever value was selected: x
    between the bounds, min where x < min < max, max where x > max or max < min (as PyTorch)."""
    node_name = "ClampBackward0"
    edge_args = (0, 1, 2)

    @staticmethod
    def forward(ctx, x, lo, hi):
        dtype = result_type(*(t for t in (x, lo, hi) if t is not None))
        lowest, highest = (-math.inf, math.inf) if dtype.is_floating_point else (False, True) if \
            dtype is _dtype.bool else (torch.iinfo(dtype.torch).min, torch.iinfo(dtype.torch).max)
        ctx.dtype, ctx.params = dtype, (1.0 if hi is None else 0.0,)  # no maximum: any minimum is below it
        # one tensor bound is PyTorch's clamp_min/clamp_max kernel, which gives the bound on a tie of
        # signed zeros (its vectorized loop; clamp by two bounds, or by a number, keeps x)
        one_tensor = (lo is None) != (hi is None) and isinstance(hi if lo is None else lo, Tensor)
        lo = as_operand(lowest if lo is None else lo, x, dtype)
        hi = as_operand(highest if hi is None else hi, x, dtype)
        check_runnable(x, lo, hi)
        ctx.save_for_backward(x, lo, hi)
        if one_tensor and dtype.is_floating_point:  # (the absent bound is a 0-d +-inf)
            return fused(M.clamp_min_t, [x, lo], dtype, (0.0,)) if ctx.params[0] else \
                fused(M.clamp_max_t, [x, hi], dtype, (0.0,))
        return fused(M.clamp_t, [x, lo, hi], dtype)

    @staticmethod
    def backward(ctx, g):
        saved = ctx.saved_tensors
        return tuple(Where.apply(fused(mask, list(saved), _dtype.bool, ctx.params, compute=ctx.dtype), g, 0.0) if needed else None
                     for mask, needed in zip((M.clamp_t_x, M.clamp_t_lo, M.clamp_t_hi), ctx.needs_input_grad))


# ----------------------------------------------------------------------------- casts and copies

class ToCopy(BuiltinFunction):
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype, device):
        ctx.src = (x.dtype, x.device)
        if device != x.device:  # a transfer is a storage copy, which torch does
            data = x._data.to(device)
            src = wrap(data)
            return src if dtype is x.dtype else fused(M.identity, [src], dtype, compute=dtype)
        check_runnable(x)
        return fused(M.identity, [x], dtype, compute=dtype if dtype.is_floating_point or x.dtype is _dtype.bool
                    else dtype)

    @staticmethod
    def backward(ctx, g):
        dtype, device = ctx.src
        return ToCopy.apply(g, dtype, device), None, None


class Clone(BuiltinFunction):
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x, contiguous=False):
        """A copy in x's layout (PyTorch's preserve_format), or contiguous (``x.contiguous()``,
        ``reshape``'s copy)."""
        check_runnable(x)
        if x._data.is_contiguous():  # a storage copy needs no kernel launch
            return wrap(x._data.clone(memory_format=torch.contiguous_format))
        out = wrap(torch.empty(tuple(x.shape), dtype=x._data.dtype, device=x.device)) if contiguous else None
        return fused(M.identity, [x], x.dtype, compute=x.dtype, out=out)

    @staticmethod
    def backward(ctx, g):
        return g, None


class Copy(BuiltinFunction):
    """``dst.copy_(src)`` recorded: the old value of dst gets no gradient, src gets it summed back
    over the dims it was broadcast along."""
    node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, dst, src):
        check_runnable(dst, src)
        return fused(M.second, [dst, src], dst.dtype, compute=dst.dtype)

    @staticmethod
    def backward(ctx, g):
        g0 = fused(M.fill, [g], g.dtype, (0.0,)) if ctx.needs_input_grad[0] else None
        return g0, g if ctx.needs_input_grad[1] else None  # the engine sums and casts it to src's


class Fill(BuiltinFunction):
    """``t.fill_(number)`` recorded: the old value gets a zero gradient."""
    node_name = "FillBackward2"

    @staticmethod
    def forward(ctx, dst, value):
        return fused(M.fill, [dst], dst.dtype, (value,))

    @staticmethod
    def backward(ctx, g):
        return fused(M.fill, [g], g.dtype, (0.0,)), None


class Zero(Fill):
    node_name = "ZeroBackward0"


class FillTensor(BuiltinFunction):
    """``t.fill_(v)`` with a 0-d tensor ``v`` recorded: v gets the sum of the gradient."""
    node_name = "FillBackward3"

    @staticmethod
    def forward(ctx, dst, value):
        check_runnable(dst, value)
        return fused(M.second, [dst, value], dst.dtype, shape=dst.shape, compute=dst.dtype)

    @staticmethod
    def backward(ctx, g):
        return (fused(M.fill, [g], g.dtype, (0.0,)) if ctx.needs_input_grad[0] else None,
                g if ctx.needs_input_grad[1] else None)  # the engine sums it to v's shape and dtype
