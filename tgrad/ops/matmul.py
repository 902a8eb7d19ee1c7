"""Matrix products over ``kernels.matmul``: one batched, strided kernel behind mm, bmm, matmul, dot,
mv and outer. Transposes and broadcast batches are views, never copies.

Forward ``C = A @ B``; backward ``dA = dC @ B^T`` and ``dB = A^T @ dC``, summed over broadcast batch
dims, written with tgrad ops so they are differentiable in turn.
"""
from __future__ import annotations

from .. import backends
from ..autograd.function import Function
from ..tensor import Tensor
from tgrad.kernels import matmul as K
from ._common import broadcast_shapes, check_runnable, result_type, sum_to_shape, wrap

__all__ = ["matmul", "mm", "bmm", "dot", "mv", "outer", "vdot", "inner"]


def _allow_tf32(t: Tensor) -> bool:
    return t.device.type == "cuda" and backends.cuda.matmul.allow_tf32


def _mismatch(a, b):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a.shape[-2:]))} and "
                        f"{'x'.join(map(str, b.shape[-2:]))})")


class Matmul(Function):
    """(*batch_a, M, K) @ (*batch_b, K, N) with broadcast batches."""
    node_name = "MatmulBackward0"

    @staticmethod
    def forward(ctx, a, b):
        check_runnable(a, b)
        if a.dtype is not b.dtype:
            raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_name(a.dtype)} != "
                               f"{_name(b.dtype)}")
        if not a.dtype.is_floating_point:
            raise RuntimeError(f"tgrad matmul supports floating point tensors, got {a.dtype}")
        if a.shape[-1] != b.shape[-2]:
            raise _mismatch(a, b)
        batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
        ad = a._data.expand(batch + tuple(a.shape[-2:]))
        bd = b._data.expand(batch + tuple(b.shape[-2:]))
        ctx.shapes = (a.shape, b.shape)
        ctx.save_for_backward(a, b)
        return wrap(K.matmul(ad, bd, allow_tf32=_allow_tf32(a)))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        da = sum_to_shape(g @ b.transpose(-1, -2), ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        db = sum_to_shape(a.transpose(-1, -2) @ g, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return da, db


class Mm(Matmul):
    node_name = "MmBackward0"


class Bmm(Matmul):
    node_name = "BmmBackward0"


def _name(d):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16"}.get(
        d.name, d.name)


def mm(a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"{'self' if a.ndim != 2 else 'mat2'} must be a matrix")
    return Mm.apply(a, b)


def bmm(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if a.ndim != 3 else "batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
                           f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    return Bmm.apply(a, b)


def dot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have "
                           f"the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively")
    return Dot.apply(a, b)


class Dot(Function):
    node_name = "DotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        check_runnable(a, b)
        ctx.save_for_backward(a, b)
        return wrap(K.matmul(a._data.unsqueeze(0), b._data.unsqueeze(1), allow_tf32=_allow_tf32(a)).view(()))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return (g * b if ctx.needs_input_grad[0] else None), (g * a if ctx.needs_input_grad[1] else None)


def matmul(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul(): argument must be Tensor, not {type(b if isinstance(a, Tensor) else a).__name__}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D")
    if a.ndim == 1 and b.ndim == 1:
        return dot(a, b)
    if a.ndim == 2 and b.ndim == 2:
        return Mm.apply(a, b)
    if a.ndim == 1:  # (K) @ (..., K, N): a row vector, squeezed after
        if a.shape[0] != b.shape[-2]:
            raise RuntimeError(f"size mismatch, got input ({a.shape[0]}), mat ({b.shape[-2]}x{b.shape[-1]})")
        return matmul(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        if a.shape[-1] != b.shape[0]:
            raise RuntimeError(f"size mismatch, got input ({a.shape[-2]}x{a.shape[-1]}), vec ({b.shape[0]})")
        return matmul(a, b.unsqueeze(1)).squeeze(-1)
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        return Bmm.apply(a, b)
    return Matmul.apply(a, b)


def mv(a, v):
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {a.ndim}, {v.ndim}")
    return matmul(a, v)


def outer(a, b):
    return a.reshape(-1, 1) * b.reshape(1, -1)


vdot = inner = dot
