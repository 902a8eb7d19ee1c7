"""Joining tensors along a dim: ``cat`` (``concat``, ``concatenate``) and ``stack``, one launch each
that reads every input through its own strides; their gradients are views of the upstream one."""
from __future__ import annotations

import builtins

import torch

from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.indexing import concat as KC
from .common import check_runnable, result_type, wrap
from .registry import op


class Cat(BuiltinFunction):
    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        data = [t._data for t in tensors]
        # legacy: 1-d empty tensors take part in the dtype only (PyTorch); their gradient is empty
        skipped = [d.ndim == 1 and d.shape[0] == 0 and not all(u.ndim == 1 for u in data) for d in data]
        kept = [d for d, skip in zip(data, skipped) if not skip]
        out = torch.empty(_cat_shape(kept, dim), dtype=dtype.torch, device=data[0].device)
        ctx.sizes, ctx.dim = [None if skip else d.shape[dim] for d, skip in zip(data, skipped)], dim
        live = [d for d in kept if d.numel()]
        if live:  # one launch reads every input through its own strides, converting its dtype
            KC.cat_into(out, live, dim)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + tuple(g.narrow(ctx.dim, s, n) if n is not None else
                                    wrap(torch.empty((0,), dtype=g._data.dtype, device=g.device))
                                    for s, n in zip(_starts([n or 0 for n in ctx.sizes]), ctx.sizes))


def _starts(sizes):
    out, s = [], 0
    for n in sizes:
        out.append(s)
        s += n
    return out


def _cat_shape(tensors, dim):
    """The output shape of a cat of torch tensors, or PyTorch's error for mismatched inputs."""
    ref = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        shape = t.shape
        if len(shape) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(shape)}")
        if shape[:dim] != ref[:dim] or shape[dim + 1:] != ref[dim + 1:]:
            d = next(d for d in range(len(ref)) if d != dim and shape[d] != ref[d])
            raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. Expected size "
                               f"{ref[d]} but got size {shape[d]} for tensor number {i} in the list.")
    out = list(ref)
    out[dim] = builtins.sum(t.shape[dim] for t in tensors)
    return out


@op("cat", "concat", "concatenate", method=False)
def cat(tensors, dim=0):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("tgrad.cat(): expected a non-empty list of Tensors")
    shapes = [t._data.shape for t in tensors]
    # legacy: 1-d empty tensors are skipped in the shapes (not the dtype), as in PyTorch
    ref = next((t for t, s in zip(tensors, shapes) if s != (0,)), tensors[0])
    for i, s in enumerate(shapes):
        if not s:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    check_runnable(*tensors)
    return Cat.apply(ref._dim(dim), *_joined(tensors))


concat = concatenate = cat


def _tensor_list(tensors, fn):
    """The sequence of tensors ``fn`` (cat, stack) joins, or PyTorch's TypeError."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)) and not hasattr(tensors, "__iter__"):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return tensors


def _joined(tensors):
    """(the promoted dtype, the inputs), inputs of dtypes past the ones a cat launch reads
    converted to it first."""
    first = tensors[0]._data.dtype
    if all(t._data.dtype is first for t in tensors):
        return (tensors[0].dtype, *tensors)
    dtype = result_type(*tensors)
    kinds = {dtype}
    for t in tensors:
        if len(kinds) < KC.MAX_KINDS:
            kinds.add(t.dtype)
    return (dtype, *[t if t.dtype in kinds else t.to(dtype) for t in tensors])


class Stack(BuiltinFunction):
    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx, dim, dtype, *tensors):
        data = [t._data for t in tensors]
        shape = list(data[0].shape)
        shape.insert(dim, len(data))
        out = torch.empty(shape, dtype=dtype.torch, device=data[0].device)
        ctx.sizes, ctx.dim = [1] * len(data), dim
        if out.numel():
            KC.cat_into(out, data, dim, stacked=True)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        return (None, None) + tuple(g.select(ctx.dim, i) for i in range(len(ctx.sizes)))


@op("stack", method=False)
def stack(tensors, dim=0):
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]
    ref_shape = ref._data.shape
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != ref_shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    n = ref.ndim + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    check_runnable(*tensors)
    return Stack.apply(dim % n, *_joined(tensors))
