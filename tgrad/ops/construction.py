"""Tensors constructed from ranges and other tensors, composed from core ops (each a kernel):
``logspace``, ``triu_indices``/``tril_indices``, ``cartesian_prod``, ``combinations`` and
``block_diag``."""
from __future__ import annotations

import builtins

from .. import _dtype
from . import arrange, factories, joins, random, shape
from .gather_scatter import nonzero
from .registry import op


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    exps = random.linspace(start, end, steps, dtype=_dtype.float64, device=device)
    out = (base ** exps).to(dtype or _dtype.get_default_dtype())
    return out.requires_grad_(requires_grad) if requires_grad else out


def _tri_indices(row, col, offset, upper, dtype, device):
    r = shape.unsqueeze(random.arange(row, device=device), 1)
    c = shape.unsqueeze(random.arange(col, device=device), 0)
    keep = (c - r >= offset) if upper else (c - r <= offset)
    return shape.t(nonzero(keep)).to(dtype).contiguous()


def triu_indices(row, col, offset=0, *, dtype=_dtype.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, True, dtype, device)


def tril_indices(row, col, offset=0, *, dtype=_dtype.int64, device=None, layout=None):
    return _tri_indices(row, col, offset, False, dtype, device)


def cartesian_prod(*tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = arrange.meshgrid(*tensors, indexing="ij")
    return joins.stack([shape.reshape(g, (-1,)) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-``r`` combinations of a vector's entries, in lexicographic order of positions:
    the positions (i_1 < ... < i_r, or <= with replacement) are the nonzeros of a comparison of
    r broadcast aranges; the entries are gathered (so gradients flow back to them)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return factories.zeros(0, dtype=input.dtype, device=input.device)
    n = input.shape[0]
    axes = [shape.reshape(random.arange(n, device=input.device), [n if k == j else 1 for k in range(r)])
            for j in range(r)]
    keep = factories.ones([n] * r, dtype=_dtype.bool, device=input.device)
    for a, b in zip(axes, axes[1:]):
        keep = keep & ((a <= b) if with_replacement else (a < b))
    return input[nonzero(keep)]


def block_diag(*tensors):
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return factories.zeros((0, 0))
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _dtype.promote(dtype, b.dtype)
    width = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [factories.zeros((r, left), dtype=dtype, device=b.device), b.to(dtype),
                 factories.zeros((r, width - left - c), dtype=dtype, device=b.device)]
        rows.append(joins.cat(parts, 1))
        left += c
    return joins.cat(rows, 0)


for _f in (logspace, triu_indices, tril_indices, cartesian_prod, combinations, block_diag):
    op(_f.__name__, method=False)(_f)
