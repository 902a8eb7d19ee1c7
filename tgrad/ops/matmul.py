"""Matrix products over ``kernels.matmul``: one batched, strided kernel behind mm, bmm, matmul, dot,
mv and outer. Transposes and broadcast batches are views, never copies.

Forward ``C = A @ B``; backward ``dA = dC @ B^T`` and ``dB = A^T @ dC``, summed over broadcast batch
dims, written with tgrad ops so they are differentiable in turn.
"""
from __future__ import annotations

import math
import torch

from .. import backends
from ..autograd.function import BuiltinFunction
from .. import _dtype
from ..tensor import Tensor
from ..amp.autocast_mode import autocast_policy
from tgrad.kernels.linalg import matmul as K
from .call_plans import PLANS, call_key
from .common import broadcast_shapes, check_runnable, wrap
from .matmul_plans import plan_product
from .registry import op


def _allow_tf32(t: Tensor) -> bool:
    return t.device.type == "cuda" and backends.cuda.matmul.allow_tf32


def _mismatch(a, b):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape[-2:]))} and "
                        f"{'x'.join(map(str, b.shape[-2:]))})")


def _save_crosswise(ctx, a, b):
    """Each operand's gradient reads only the other: PyTorch saves ``b`` only if ``a`` needs a
    gradient and ``a`` only if ``b`` does, so an in-place change to an operand whose partner needs
    none leaves backward running."""
    need_a, need_b = ctx.needs_input_grad[:2]
    ctx.save_for_backward(a if need_b else None, b if need_a else None)


class Matmul(BuiltinFunction):
    """(*batch_a, M, K) @ (*batch_b, K, N) with broadcast batches."""
    node_name = "MatmulBackward0"

    @classmethod
    def apply(cls, a, b):
        # a call replays what its signature decided (matmul_plans.py)
        key = call_key(cls, (a, b))
        if key is None:
            return super().apply(a, b)
        plan = PLANS.get(key)
        if plan is not None:
            return plan((a, b))
        y = super().apply(a, b)
        plan_product(cls, key, a, b, _save_crosswise)
        return y

    @staticmethod
    def forward(ctx, a, b):
        check_runnable(a, b)
        if a.dtype is not b.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.c_type} != "
                               f"{b.dtype.c_type}")
        sa, sb = a._data.shape, b._data.shape
        if sa[-1] != sb[-2]:
            raise _mismatch(a, b)
        if not a.dtype.is_floating_point:
            return _exact(a, b, "addmm_impl_cpu_" if a.ndim <= 2 and b.ndim <= 2 else "bmm")
        batch = broadcast_shapes(sa[:-2], sb[:-2])
        ad = a._data.expand(batch + tuple(sa[-2:]))
        bd = b._data.expand(batch + tuple(sb[-2:]))
        _save_crosswise(ctx, a, b)
        return wrap(K.matmul(ad, bd, allow_tf32=_allow_tf32(a)))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = g @ b.transpose(-1, -2) if ctx.needs_input_grad[0] else None  # the engine sums broadcast batches
        db = a.transpose(-1, -2) @ g if ctx.needs_input_grad[1] else None
        return da, db


class Mm(Matmul):
    node_name = "MmBackward0"


class Bmm(Matmul):
    node_name = "BmmBackward0"


def _exact(a, b, kernel):
    """A product of integers, exact in their dtype. PyTorch has no bool kernel (``kernel`` names
    its), but answers an empty matrix product (no rows, no columns or an empty sum) with False
    before reaching one (not ``dot``, which always refuses)."""
    if a.dtype is _dtype.bool:
        shape = a.shape[:-1] if b.ndim == 1 else \
            broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        if kernel != "dot" and (a.shape[-1] == 0 or math.prod(shape) == 0):
            return wrap(torch.zeros(shape, dtype=torch.bool, device=a.device))
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    return _integer_matmul(a, b)


@op("mm")
@autocast_policy(cpu='lower', cuda='lower')
def mm(a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"{'self' if a.ndim != 2 else 'mat2'} must be a matrix")
    return Mm.apply(a, b)


@op("bmm")
@autocast_policy(cpu='lower', cuda='lower')
def bmm(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
                           f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.scalar_type} but found {b.dtype.scalar_type}")
    return Bmm.apply(a, b)


@op("dot")
def dot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                           f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    return Dot.apply(a, b)


class Dot(BuiltinFunction):
    node_name = "DotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        check_runnable(a, b)
        if a.dtype is not b.dtype:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {a.dtype.scalar_type} "
                               f"and {b.dtype.scalar_type}")
        if not a.dtype.is_floating_point:
            return _exact(a, b, "dot")
        _save_crosswise(ctx, a, b)
        return wrap(K.matmul(a._data.unsqueeze(0), b._data.unsqueeze(1), allow_tf32=_allow_tf32(a)).view(()))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)


@op("matmul")
@autocast_policy(cpu='lower', cuda='lower')
def matmul(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul(): argument must be Tensor, not {type(b if isinstance(a, Tensor) else a).__name__}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    if a.ndim == 2 and b.ndim == 1:
        return mv(a, b)
    if a.ndim == 1:  # (K) @ (..., K, N): a row vector, squeezed after (a mismatch reads "1xK and ...")
        return matmul(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        if a.shape[-1] != b.shape[0]:  # PyTorch folds a's leading dims into rows before its mv check
            rows = a.numel() // a.shape[-1] if a.shape[-1] else math.prod(a.shape[:-1])
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{a.shape[-1]}), vec ({b.shape[0]})")
        if a.dtype is _dtype.bool and b.dtype is _dtype.bool:  # PyTorch folds this into one mv
            _exact(a, b, "addmv_impl_cpu")
        return matmul(a, b.unsqueeze(1)).squeeze(-1)
    # PyTorch's messages follow its own plan: (..., M, K) @ (K, N) folds a's batch into rows of one
    # mm; otherwise batches broadcast first and the product is one bmm over the flattened batch
    if b.ndim == 2:
        if a.shape[-1] != b.shape[0]:
            rows = math.prod(a.shape[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a.shape[-1]} and "
                               f"{b.shape[0]}x{b.shape[1]})")
        return Matmul.apply(a, b)
    n = math.prod(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    if a.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {a.shape[-1]}] "
                           f"but got: [{n}, {b.shape[-2]}].")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.scalar_type} but found {b.dtype.scalar_type}")
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        return Bmm.apply(a, b)
    return Matmul.apply(a, b)


class Mv(BuiltinFunction):
    """y = A v for A (M, K), v (K,) (PyTorch's MvBackward0): dA = g v^T, dv = A^T g."""
    node_name = "MvBackward0"

    @staticmethod
    def forward(ctx, a, v):
        check_runnable(a, v)
        if not a.dtype.is_floating_point:
            return _exact(a, v, "addmv_impl_cpu")
        _save_crosswise(ctx, a, v)
        return wrap(K.matmul(a._data, v._data.unsqueeze(1), allow_tf32=_allow_tf32(a)).view(a.shape[0]))

    @staticmethod
    def backward(ctx, g):
        a, v = ctx.saved_tensors
        return (outer(g, v) if ctx.needs_input_grad[0] else None), (mv(a.t(), g) if ctx.needs_input_grad[1] else None)


@op("mv")
@autocast_policy(cuda='lower')
def mv(a, v):
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), "
                           f"vec ({v.shape[0]})")
    if a.dtype is not v.dtype:
        v_name = v.dtype.scalar_type
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {v_name}, "
                           f"{a.dtype.scalar_type}, and {v_name}")
    return Mv.apply(a, v)


@op("outer", "ger")
def outer(a, b):
    """a b^T for vectors: a broadcast product, as PyTorch (``a.reshape(-1, 1) * b``)."""
    for name, t in (("self", a), ("vec2", b)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return a.reshape(-1, 1) * b


vdot = op("vdot", method=False)(dot)


@op("inner")
def inner(a, b):
    """Sum over the last dims: (..a, K) . (..b, K) -> (..a, ..b); a 0-d operand multiplies."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    k = a.shape[-1]
    rows_a, rows_b = math.prod(a.shape[:-1]), math.prod(b.shape[:-1])  # not -1: k may be 0
    return matmul(a.reshape(rows_a, k), b.reshape(rows_b, k).t()).reshape(*a.shape[:-1], *b.shape[:-1])


def _integer_matmul(a, b):
    """Integer operands (no integer tensor-core path in the kernels): exact broadcast products summed
    in the integer dtype."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    out = (a2.unsqueeze(-1) * b2.unsqueeze(-3)).sum(-2).to(a.dtype)  # (sum widens to int64)
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    return out


op("vdot", function=False)(vdot)
