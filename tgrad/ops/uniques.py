"""The distinct values of a tensor: ``unique`` (sorted first, so equal values meet) and
``unique_consecutive`` (runs of equal neighbours, in place order; with ``dim``, runs of equal
slices). Both find where a run starts with one comparison of neighbours, then select, count
(positions of the starts) and number (a cumulative sum of the starts) the runs."""
from __future__ import annotations

import math

from .. import _dtype
from ..autograd.function import BuiltinFunction
from . import factories, gather_scatter, joins, sorting
from .arrange import cumsum
from .common import normalize_dim
from .registry import op


def _run_starts(x, differ):
    """Along dim 0 of ``x``: True where a run starts (the first entry, and each that ``differ``s
    from the one before)."""
    n = x.shape[0]
    if n == 0:
        return factories.zeros(0, dtype=_dtype.bool, device=x.device)
    return joins.cat([factories.ones(1, dtype=_dtype.bool, device=x.device),
                      differ(x.narrow(0, 1, n - 1), x.narrow(0, 0, n - 1))], 0)


def _run_counts(first):
    starts = gather_scatter.nonzero(first).reshape(-1)
    if starts.numel() == 0:
        return starts
    ends = joins.cat([starts.narrow(0, 1, starts.numel() - 1),
                      factories.tensor([first.numel()], dtype=_dtype.int64, device=first.device)], 0)
    return ends - starts


@op("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    if dim is not None:
        raise NotImplementedError("tgrad.unique: dim= is not supported (unique rows); flatten or compare rows")
    flat = input.reshape(-1)
    values, order = sorting.sort(flat, 0, stable=True)
    first = _run_starts(values, lambda a, b: a != b)
    results = [gather_scatter.masked_select(values, first)]
    if return_inverse:
        group = cumsum(first.to(_dtype.int64), 0) - 1
        inverse = factories.zeros(flat.numel(), dtype=_dtype.int64, device=input.device)
        inverse = gather_scatter.scatter_add(inverse, 0, order, group)
        results.append(inverse.reshape(tuple(input.shape)))
    if return_counts:
        results.append(_run_counts(first))
    return results[0] if len(results) == 1 else tuple(results)


class _UniqueConsecutive(BuiltinFunction):
    """The values of the runs: PyTorch records UniqueConsecutiveBackward0, whose backward raises."""
    node_name = "UniqueConsecutiveBackward0"

    @staticmethod
    def forward(ctx, x, values):
        return values

    @staticmethod
    def backward(ctx, g):
        raise NotImplementedError("the derivative for 'unique_consecutive' is not implemented.")


@op("unique_consecutive")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    if dim is None:
        x = input.detach().reshape(-1)
        first = _run_starts(x, lambda a, b: a != b)
        values = gather_scatter.masked_select(x, first)
        inverse_shape = tuple(input.shape)
    else:
        if input.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = normalize_dim(input, dim)
        if any(s == 0 for k, s in enumerate(input.shape) if k != d):
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        x = input.detach().movedim(d, 0)
        rows = x.reshape(x.shape[0], math.prod(x.shape[1:]))
        first = _run_starts(rows, lambda a, b: (a != b).any(1))
        values = gather_scatter.index_select(x, 0, gather_scatter.nonzero(first).reshape(-1)).movedim(0, d)
        inverse_shape = (x.shape[0],)
    results = [_UniqueConsecutive.apply(input, values) if input.requires_grad else values]
    if return_inverse:
        results.append((cumsum(first.to(_dtype.int64), 0) - 1).reshape(inverse_shape))
    if return_counts:
        results.append(_run_counts(first))
    return results[0] if len(results) == 1 else tuple(results)
