"""Products composed from matmul and elementwise ops: the addmm family, addr, kron, tensordot,
einsum, cdist and the cross product. Their derivatives are matmul's and the elementwise ops'.

- ``cross``: roll(a, -1) roll(b, -2) - roll(a, -2) roll(b, -1) along the dim of size 3.
"""
from __future__ import annotations

import builtins
import math
import warnings

import torch

from .. import _dtype
from ..amp.autocast_mode import autocast_policy
from . import arrange, factories, matmul
from .common import normalize_dim
from .elementwise import where
from .inplace import in_place
from .registry import op
from .arrange import diagonal_view


# ----------------------------------------------------------------------------- products

@op("addmm")
@autocast_policy(cpu='lower', cuda='lower')
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.mm(mat1, mat2), alpha)


@op("addmv")
@autocast_policy(cuda='lower')
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.mv(mat, vec), alpha)


@op("addbmm")
@autocast_policy(cpu='lower', cuda='lower')
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.bmm(batch1, batch2).sum(0), alpha)


@op("baddbmm")
@autocast_policy(cpu='lower', cuda='lower')
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.bmm(batch1, batch2), alpha)


def _scaled(t, k):
    if k == 1:
        return t
    if k == 0:  # PyTorch ignores the term (NaN and inf in it do not propagate)
        return factories.zeros_like(t)
    return t * k


@op("kron")
def kron(input, other):  # noqa: A002
    nd = builtins.max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    a_shape, b_shape = [], []
    for s in a.shape:
        a_shape += [s, 1]
    for s in b.shape:
        b_shape += [1, s]
    prod = a.reshape(a_shape) * b.reshape(b_shape)
    return prod.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


@op("tensordot", method=False)
def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [normalize_dim(a, d) for d in da], [normalize_dim(b, d) for d in db]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(*free_a, *da).reshape(math.prod(a.shape[d] for d in free_a), k)
    right = b.permute(*db, *free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    return matmul.mm(left, right).reshape(tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))


@op("einsum", method=False)
@autocast_policy(cuda='lower')
def einsum(equation, *operands):
    """Sums of products over named indices; two operands contract through one batched matmul,
    more are folded left to right."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): {len(terms)} operands in the equation but {len(operands)} tensors given")
    width = len(_ellipsis_letters(lhs, operands))
    terms = [_expand_ellipsis(t, operand.ndim, width) for t, operand in zip(terms, operands)]
    if not _ and "..." not in lhs:  # implicit output: the indices seen once, sorted
        letters = "".join(terms)
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    elif "..." in rhs:
        ell = _ellipsis_letters(lhs, operands)
        rhs = rhs.replace("...", ell)
    elif not _:
        ell = _ellipsis_letters(lhs, operands)
        letters = "".join(t.replace(ell, "") for t in terms)
        rhs = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ops, subs = list(operands), terms
    while len(ops) > 1:
        keep = set(rhs) | set("".join(subs[2:]))
        a, b, sa, sb = ops[0], ops[1], subs[0], subs[1]
        out = "".join(dict.fromkeys(c for c in sa + sb if c in keep))
        ops, subs = [_contract(a, sa, b, sb, out)] + ops[2:], [out] + subs[2:]
    return _reduce_to(ops[0], subs[0], rhs)


_ELLIPSIS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _ellipsis_letters(lhs, operands):
    n = 0
    for t, operand in zip(lhs.split(","), operands):
        if "..." in t:
            n = builtins.max(n, operand.ndim - (len(t) - 3))
    return _ELLIPSIS[:n]


def _expand_ellipsis(term, ndim, width):
    """``term`` with ``...`` replaced by letters for its operand's broadcast dims: the last of the
    ``width`` letters the widest operand uses, so that dims align from the right."""
    if "..." not in term:
        if len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({ndim}) for operand")
        return term
    n = ndim - (len(term) - 3)
    return term.replace("...", _ELLIPSIS[width - n:width])


def _reduce_to(x, sub, out):
    """x indexed by ``sub`` summed over what ``out`` lacks (a repeated index is a diagonal) and
    permuted to ``out``."""
    while len(set(sub)) != len(sub):  # a repeated letter: take the diagonal
        c = next(ch for ch in sub if sub.count(ch) > 1)
        i, j = sub.index(c), sub.index(c, sub.index(c) + 1)
        x = diagonal_view(x, 0, i, j)
        sub = sub[:i] + sub[i + 1:j] + sub[j + 1:] + c
    drop = tuple(k for k, c in enumerate(sub) if c not in out)
    if drop:
        x = x.sum(drop)
        sub = "".join(c for c in sub if c in out)
    if sub != out:
        x = x.permute(*(sub.index(c) for c in out))
    return x


def _contract(a, sa, b, sb, out):
    """The product of a (indices sa) and b (indices sb) summed over the letters not in ``out``, as
    one batched matmul: batch letters in both and out, contracted ones in both only."""
    a, sa = _reduce_to(a, sa, "".join(dict.fromkeys(c for c in sa if c in out or c in sb))), \
        "".join(dict.fromkeys(c for c in sa if c in out or c in sb))
    b, sb = _reduce_to(b, sb, "".join(dict.fromkeys(c for c in sb if c in out or c in sa))), \
        "".join(dict.fromkeys(c for c in sb if c in out or c in sa))
    batch = [c for c in sa if c in sb and c in out]
    contract = [c for c in sa if c in sb and c not in out]
    left = [c for c in sa if c not in sb]
    right = [c for c in sb if c not in sa]
    size = {c: n for c, n in zip(sa, a.shape)}
    size.update({c: n for c, n in zip(sb, b.shape)})
    for c in batch + contract:  # broadcasting a size-1 index against the other operand's
        if size[c] != 1 and (a.shape[sa.index(c)] == 1 or b.shape[sb.index(c)] == 1):
            pass
    am = a.permute(*(sa.index(c) for c in batch + left + contract))
    bm = b.permute(*(sb.index(c) for c in batch + contract + right))
    bs = [builtins.max(am.shape[k], bm.shape[k]) for k in range(len(batch))]
    nl, nc, nr = (math.prod(size[c] for c in part) for part in (left, contract, right))
    am = am.expand(*bs, *am.shape[len(batch):]).reshape(math.prod(bs), nl, nc)
    bm = bm.expand(*bs, *bm.shape[len(batch):]).reshape(math.prod(bs), nc, nr)
    y = matmul.bmm(am, bm).reshape(*bs, *(size[c] for c in left), *(size[c] for c in right))
    return _reduce_to(y, "".join(batch + left + right), out)


@op("cdist", method=False)
@autocast_policy(cpu='fp32', cuda='fp32')
def cdist(x1, x2, p=2.0, compute_mode=None):
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == math.inf:
        return d.amax(-1)
    s = (d ** p).sum(-1)
    zero = s == 0  # the gradient at a zero distance is 0, as PyTorch's (not 0 * inf); NaN stays NaN
    return where(zero, 0.0, where(zero, 1.0, s) ** (1.0 / p))


@op("addr")
@autocast_policy(cuda='lower')
def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    if input.dtype is _dtype.bool and not (isinstance(beta, bool) or beta in (0, 1)):
        raise RuntimeError("Boolean beta only supported for Boolean results.")
    return _scaled(input, beta) + _scaled(matmul.outer(vec1, vec2), alpha)


in_place("addr_", addr, function=False)


def _broadcast(a, b):
    return torch.broadcast_shapes(tuple(a), tuple(b))


def _cross_dim(a, b, dim, name):
    if a.ndim != b.ndim:
        raise RuntimeError(f"{name}: inputs must have the same number of dimensions.")
    shape_ = _broadcast(a.shape, b.shape)
    if dim is None:
        dim = next((i for i, s in enumerate(shape_) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                      "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                      "agree with that of linalg.cross in a future release.", UserWarning, stacklevel=3)
    nd = len(shape_)
    if not -nd <= dim < builtins.max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim % nd
    sa = a.shape[a.ndim - nd + d] if a.ndim - nd + d >= 0 else 1
    sb = b.shape[b.ndim - nd + d] if b.ndim - nd + d >= 0 else 1
    if sa != 3 or sb != 3:
        raise RuntimeError(f"{name}: inputs dimension {dim} must have length 3. Got {sa} and {sb}")
    return shape_, d


def cross_along(input, other, dim, name):
    shape_, d = _cross_dim(input, other, dim, name)
    a, b = input.expand(*shape_), other.expand(*shape_)
    return arrange.roll(a, -1, d) * arrange.roll(b, -2, d) - arrange.roll(a, -2, d) * arrange.roll(b, -1, d)


@op("cross")
def cross(input, other, dim=None):  # noqa: A002
    return cross_along(input, other, dim, "linalg.cross")
