"""Sorting and the order statistics composed from it: ``sort``/``argsort`` over ``kernels.sort``
(the gradient put back through the permutation), ``msort``, and ``kthvalue`` (a stable sort, the
k-th index, values ``gather``ed there)."""
from __future__ import annotations

from .. import return_types
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.reductions import sort as KS
from . import shape
from .advanced import IndexAdd, _AlongDim
from .common import check_runnable, wrap
from .gather_scatter import gather
from .registry import op


sort_result = return_types._structseq("sort")


class Sort(BuiltinFunction):
    node_name = "SortBackward0"

    @staticmethod
    def forward(ctx, x, dim, descending):
        check_runnable(x)
        values, indices = KS.sort(x._data, dim, descending)
        ctx.plan, ctx.x_shape = _AlongDim(dim, indices, unique=True), x.shape
        indices = wrap(indices)
        ctx.mark_non_differentiable(indices)
        return wrap(values), indices

    @staticmethod
    def backward(ctx, g, g_indices):
        return IndexAdd.apply(g, ctx.plan, ctx.x_shape), None, None


@op("sort")
def sort(x: Tensor, dim=-1, descending=False, stable=False):
    """(values, indices) along ``dim``; always stable (equal keys keep their order), NaN above +inf."""
    return sort_result(*Sort.apply(x, x._dim(dim), bool(descending)))


@op("argsort")
def argsort(x: Tensor, dim=-1, descending=False, stable=False) -> Tensor:
    check_runnable(x)
    return wrap(KS.sort(x._data, x._dim(dim), bool(descending))[1])


@op("msort")
def msort(input):  # noqa: A002
    return sort(input, 0)[0]


@op("kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    d = input._dim(dim)
    n = input.shape[d] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    x = input if input.ndim else shape.reshape(input, (1,))
    idx = shape.narrow(argsort(x.detach(), d, stable=True), d, k - 1, 1)
    values = gather(x, d, idx)
    if not keepdim or input.ndim == 0:
        values, idx = shape.squeeze(values, d), shape.squeeze(idx, d)
    if input.ndim == 0:
        values, idx = shape.reshape(values, ()), shape.reshape(idx, ())
    return return_types.kthvalue(values, idx)
