"""Ops composed from other ops (tinygrad's way): each is a few lines of differentiable tgrad ops, so
its derivative is theirs and nothing new is written for backward. Kernels only where composing
would be wrong or wasteful: the prefix scans (``kernels/scan.py``)."""
from __future__ import annotations

import builtins
import math
import numbers

import torch

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels import math_ops as M
from tgrad.kernels import scan as KS
from .. import return_types
from . import advanced, factories, matmul, random, shape, views
from ._common import check_runnable, result_type, wrap
from .elementwise import where
from .formula import fused
from .registry import register

__all__ = []


def _op(*names, method=True):
    def deco(fn):
        register(fn, *names, method=method)
        return fn
    return deco


def _dim(x: Tensor, dim: int) -> int:
    return x._dim(dim) if x.ndim else 0


def _grid(n: int, device, relation):
    """An (n, n) bool mask ``relation(i, j)`` of row and column numbers (comparison kernels)."""
    i = random.arange(n, device=device).reshape(n, 1)
    j = random.arange(n, device=device).reshape(1, n)
    return relation(i, j)


def _triangle(x: Tensor, diagonal: int, lower: bool):
    if x.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    rows, cols = x.shape[-2:]
    i = random.arange(rows, device=x.device).reshape(rows, 1)
    j = random.arange(cols, device=x.device).reshape(1, cols)
    return (j - i <= diagonal) if lower else (j - i >= diagonal)


def flip_dims(x: Tensor, dims):
    """x reversed along ``dims`` (a gather per dim: torch views cannot have negative strides)."""
    for d in dims if x.ndim else ():
        d = _dim(x, d)
        n = x.shape[d]
        if n > 1:
            x = advanced.index_select(x, d, random.arange(n - 1, -1, -1, device=x.device))
    return x


class Diagonal(BuiltinFunction):
    """The diagonal of dims (d1, d2) at ``offset``: a view; its gradient is zeros with g written on
    that diagonal (DiagonalScatter, itself differentiable)."""
    node_name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.meta = (tuple(x.shape), offset, d1, d2)
        return views.make_view(x, x._data.diagonal(offset, d1, d2))

    @staticmethod
    def backward(ctx, g):
        return DiagonalScatter.apply(g, *ctx.meta), None, None, None


class DiagonalScatter(BuiltinFunction):
    node_name = "DiagonalBackwardBackward0"

    @staticmethod
    def forward(ctx, g, in_shape, offset, d1, d2):
        ctx.meta = (offset, d1, d2)
        z = torch.zeros(in_shape, dtype=g._data.dtype, device=g.device)
        fused(M.identity, [g], g.dtype, out=wrap(z.diagonal(offset, d1, d2)), compute=g.dtype)
        return wrap(z)

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, *ctx.meta), None, None, None, None


def diagonal_view(x: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    d1, d2 = _dim(x, d1), _dim(x, d2)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {d1}, {d2}")
    return Diagonal.apply(x, offset, d1, d2)


def diagonal_scatter(out: Tensor, src: Tensor, offset=0, d1=-2, d2=-1) -> Tensor:
    """``out`` with ``src`` written on its (d1, d2) diagonal, recorded (an index put)."""
    n = src.shape[-1]
    rows = random.arange(n, device=out.device) + builtins.max(-offset, 0)
    cols = random.arange(n, device=out.device) + builtins.max(offset, 0)
    result = out.clone()
    result[..., rows, cols] = src
    return result


# ----------------------------------------------------------------------------- scans

class Cumsum(BuiltinFunction):
    """y_j = sum_{k<=j} x_k along ``dim``; dx = the reversed cumulative sum of g (a cumsum again)."""
    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        check_runnable(x)
        ctx.dim, ctx.x_dtype = dim, x.dtype
        out_dtype = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
        moved = x._data.movedim(dim, -1).contiguous() if x.ndim else x._data.reshape(1)
        y = KS.cumulative(moved, "sum", out_dtype.torch)
        return wrap(y.movedim(-1, dim) if x.ndim else y.reshape(()))

    @staticmethod
    def backward(ctx, g):
        return flip_dims(cumsum(flip_dims(g, (ctx.dim,)), ctx.dim), (ctx.dim,)), None, None


@_op("cumsum")
def cumsum(input, dim, *, dtype=None):  # noqa: A002
    return Cumsum.apply(input, _dim(input, dim), _dtype.as_dtype(dtype) if dtype is not None else None)


class Cumprod(BuiltinFunction):
    """y_j = prod_{k<=j} x_k along ``dim``. Without zeros dx_i = sum_{j>=i} g_j y_j / x_i (a reversed
    cumsum); with zeros, each x_i's derivative is the cumulative product with x_i taken as 1, built
    from differentiable ops (as PyTorch's, exact there)."""
    node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        check_runnable(x)
        ctx.dim = dim
        out_dtype = dtype or (x.dtype if x.dtype.is_floating_point else _dtype.int64)
        moved = x._data.movedim(dim, -1).contiguous() if x.ndim else x._data.reshape(1)
        y = wrap(KS.cumulative(moved, "prod", out_dtype.torch))
        y = wrap(y._data.movedim(-1, dim)) if x.ndim else wrap(y._data.reshape(()))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        d = ctx.dim
        if x.ndim == 0:
            return g, None, None
        if not bool((x == 0).any()):
            gy = g * y
            return flip_dims(cumsum(flip_dims(gy, (d,)), d), (d,)) / x, None, None
        n = x.shape[d]
        xm = x.movedim(d, -1)                                     # (..., n)
        eye = _grid(n, x.device, lambda i, j: i == j)                      # (n, n): row i marks x_i
        ones_at = where(eye, 1.0, xm.unsqueeze(-2))               # (..., i, k): x with x_i -> 1
        partial = cumprod(ones_at, -1)                            # (..., i, j)
        upper = _grid(n, x.device, lambda i, j: j >= i)                 # j >= i
        gm = g.movedim(d, -1).unsqueeze(-2)                       # (..., 1, j)
        dx = where(upper, gm * partial, 0.0).sum(-1)              # (..., i)
        return dx.movedim(-1, d), None, None


@_op("cumprod")
def cumprod(input, dim, *, dtype=None):  # noqa: A002
    return Cumprod.apply(input, _dim(input, dim), _dtype.as_dtype(dtype) if dtype is not None else None)


# ----------------------------------------------------------------------------- comparisons

@_op("isclose")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    if isinstance(other, Tensor) and input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    close = input == other
    if input.dtype.is_floating_point or (isinstance(other, Tensor) and other.dtype.is_floating_point):
        diff = (input - other).abs()
        finite = diff.isfinite()
        close = close | (finite & (diff <= atol + rtol * (other.abs() if isinstance(other, Tensor) else abs(other))))
        if equal_nan:
            close = close | (input.isnan() & (other.isnan() if isinstance(other, Tensor) else math.isnan(other)))
    return close


@_op("allclose")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


# ----------------------------------------------------------------------------- repeats and rearrangements

def _sizes(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else tuple(args)


@_op("repeat", method=True)
def repeat(input, *sizes):  # noqa: A002
    sizes = _sizes(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    x = input.reshape((1,) * (len(sizes) - input.ndim) + tuple(input.shape))
    inter = []
    for r, s in zip(sizes, x.shape):
        inter += [1, s]
    big = x.reshape(inter).expand(*[v for r, s in zip(sizes, x.shape) for v in (r, s)])
    return big.reshape(tuple(r * s for r, s in zip(sizes, x.shape)))


@_op("tile")
def tile(input, dims):  # noqa: A002
    dims = tuple(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


@_op("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(x, dim)
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        counts = repeats.tolist()  # the index is host data, as PyTorch's own output size is
        if len(counts) != x.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim")
        index = factories.tensor([i for i, c in enumerate(counts) for _ in range(c)], dtype=_dtype.int64,
                                 device=x.device)
        return advanced.index_select(x, d, index)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    shape_in = tuple(x.shape)
    y = x.unsqueeze(d + 1).expand(*shape_in[:d + 1], r, *shape_in[d + 1:])
    return y.reshape(shape_in[:d] + (shape_in[d] * r,) + shape_in[d + 1:])


@_op("flip")
def flip(input, *dims):  # noqa: A002
    return flip_dims(input, _sizes(dims))


@_op("fliplr")
def fliplr(input):  # noqa: A002
    return flip_dims(input, (1,))


@_op("flipud")
def flipud(input):  # noqa: A002
    return flip_dims(input, (0,))


@_op("roll")
def roll(input, shifts, dims=None):  # noqa: A002
    if dims is None:
        return roll(input.flatten(), shifts, 0).view(*input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = _dim(out, d)
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = shape.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out


@_op("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    d = _dim(input, dim)
    x = shape.cat([t for t in (prepend, input, append) if t is not None], d) if prepend is not None or \
        append is not None else input
    for _ in range(n):
        m = x.shape[d]
        x = x.narrow(d, 1, max(m - 1, 0)) - x.narrow(d, 0, max(m - 1, 0)) if x.dtype is not _dtype.bool else \
            x.narrow(d, 1, max(m - 1, 0)).logical_xor(x.narrow(d, 0, max(m - 1, 0)))
    return x


# ----------------------------------------------------------------------------- diagonals

@_op("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    return diagonal_view(input, offset, _dim(input, dim1), _dim(input, dim2))


@_op("diag")
def diag(input, diagonal=0):  # noqa: A002
    if input.ndim == 1:
        n = input.shape[0] + builtins.abs(diagonal)
        out = factories.zeros(n, n, dtype=input.dtype, device=input.device)
        return diagonal_scatter(out, input, diagonal)
    if input.ndim == 2:
        return diagonal_view(input, diagonal, 0, 1).contiguous()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")


@_op("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    n = input.shape[-1] + builtins.abs(offset)
    out = factories.zeros(*input.shape[:-1], n, n, dtype=input.dtype, device=input.device)
    return diagonal_scatter(out, input, offset, -2, -1).movedim((-2, -1), (dim1, dim2))


@_op("trace")
def trace(input):  # noqa: A002
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal(input).sum()


@_op("tril")
def tril(input, diagonal=0):  # noqa: A002
    return where(_triangle(input, diagonal, lower=True), input, factories.zeros((), dtype=input.dtype,
                                                                                 device=input.device))


@_op("triu")
def triu(input, diagonal=0):  # noqa: A002
    return where(_triangle(input, diagonal, lower=False), input, factories.zeros((), dtype=input.dtype,
                                                                                  device=input.device))


# ----------------------------------------------------------------------------- products

@_op("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.mm(mat1, mat2), alpha)


@_op("addmv")
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.mv(mat, vec), alpha)


@_op("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.bmm(batch1, batch2).sum(0), alpha)


@_op("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _scaled(input, beta) + _scaled(matmul.bmm(batch1, batch2), alpha)


def _scaled(t, k):
    if k == 1:
        return t
    if k == 0:  # PyTorch ignores the term (NaN and inf in it do not propagate)
        return factories.zeros_like(t)
    return t * k


@_op("kron")
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


@_op("tensordot", method=False)
def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [_dim(a, d) for d in da], [_dim(b, d) for d in db]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = a.permute(*free_a, *da).reshape(math.prod(a.shape[d] for d in free_a), k)
    right = b.permute(*db, *free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    return matmul.mm(left, right).reshape(tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))


@_op("einsum", method=False)
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
    terms = [_expand_ellipsis(t, op.ndim) for t, op in zip(terms, operands)]
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
    for t, op in zip(lhs.split(","), operands):
        if "..." in t:
            n = builtins.max(n, op.ndim - (len(t) - 3))
    return _ELLIPSIS[:n]


def _expand_ellipsis(term, ndim):
    if "..." not in term:
        if len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) does not match "
                               f"the number of dimensions ({ndim}) for operand")
        return term
    n = ndim - (len(term) - 3)
    return term.replace("...", _ELLIPSIS[:n][::-1][::-1].rjust(n, "Z")[-n:] if n else "")


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


# ----------------------------------------------------------------------------- distances and grids

@_op("cdist", method=False)
def cdist(x1, x2, p=2.0, compute_mode=None):
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == math.inf:
        return d.amax(-1)
    s = (d ** p).sum(-1)
    positive = s > 0  # the gradient at a zero distance is 0, as PyTorch's (not 0 * inf)
    return where(positive, where(positive, s, 1.0) ** (1.0 / p), 0.0)


@_op("meshgrid", method=False)
def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.numel() for t in ts]
    out = [t.reshape([-1 if k == i else 1 for k in range(len(ts))]).expand(*sizes) for i, t in enumerate(ts)]
    if swap:  # "xy": the first two inputs vary along columns and rows, in the swapped grid's shape
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ----------------------------------------------------------------------------- selection

@_op("topk")
def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    d = _dim(input, dim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    values, indices = advanced.sort(input, d, descending=largest, stable=True)
    return return_types.topk(values.narrow(d, 0, k), indices.narrow(d, 0, k))


@_op("median")
def median(input, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return factories.full((), math.nan, dtype=input.dtype, device=input.device)
        values, _ = advanced.sort(flat, 0)
        return values[(flat.numel() - 1) // 2]
    d = _dim(input, dim)
    values, indices = advanced.sort(input, d, stable=True)
    k = (input.shape[d] - 1) // 2
    v, i = values.narrow(d, k, 1), indices.narrow(d, k, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return return_types.median(v, i)


@_op("quantile")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _dim(x, dim)
    scalar_q = not isinstance(q, Tensor)
    qs = factories.tensor([q] if scalar_q else q.tolist() if q.ndim else [q.item()], dtype=_dtype.float64)
    values, _ = advanced.sort(x, d)
    n = x.shape[d]
    outs = []
    for qv in qs.tolist():
        if not 0 <= qv <= 1:
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
        pos = qv * (n - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        a, b = values.narrow(d, lo, 1), values.narrow(d, hi, 1)
        frac = pos - lo
        if interpolation == "linear":
            v = a + (b - a) * frac
        elif interpolation == "lower":
            v = a
        elif interpolation == "higher":
            v = b
        elif interpolation == "midpoint":
            v = a + (b - a) * 0.5
        elif interpolation == "nearest":
            v = values.narrow(d, builtins.round(pos) if pos - lo != 0.5 else (lo if lo % 2 == 0 else hi), 1)
        else:
            raise ValueError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                             f"Got {interpolation}")
        if dim is None:
            v = v.reshape(())
        elif not keepdim:
            v = v.squeeze(d)
        outs.append(v)
    return outs[0] if scalar_q or (isinstance(q, Tensor) and q.ndim == 0) else shape.stack(outs, 0)


@_op("searchsorted", method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    right = right or side == "right"
    values = input if isinstance(input, Tensor) else factories.tensor(input, dtype=sorted_sequence.dtype)
    if sorter is not None:
        sorted_sequence = advanced.gather(sorted_sequence, -1, sorter)
    seq = sorted_sequence.unsqueeze(-2)                    # (..., 1, n)
    v = values.unsqueeze(-1)                               # (..., m, 1)
    below = (seq <= v) if right else (seq < v)
    count = below.sum(-1)
    return count.to(_dtype.int32) if out_int32 else count


@_op("bucketize", method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@_op("count_nonzero")
def count_nonzero(input, dim=None):  # noqa: A002
    return (input != 0).sum(dim) if dim is not None else (input != 0).sum()


@_op("argwhere")
def argwhere(input):  # noqa: A002
    return advanced.nonzero(input)


@_op("take_along_dim")
def take_along_dim(input, indices, dim=None):  # noqa: A002
    if dim is None:
        return advanced.gather(input.reshape(-1), 0, indices.reshape(-1))
    d = _dim(input, dim)
    shape_b = [builtins.max(a, b) if k != d else b for k, (a, b) in enumerate(zip(input.shape, indices.shape))]
    shape_x = [s if k == d else shape_b[k] for k, s in enumerate(input.shape)]
    return advanced.gather(input.expand(*shape_x), d, indices.expand(*shape_b))


# ----------------------------------------------------------------------------- index updates

def _along(x: Tensor, dim: int, index: Tensor, like_shape):
    """An index tensor of ``like_shape`` that holds ``index`` along ``dim`` (index_add's 1-d index
    made scatter's full one)."""
    view = [1] * len(like_shape)
    view[dim] = index.numel()
    return index.reshape(view).expand(*like_shape)


@_op("index_add")
def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    d = _dim(input, dim)
    src = source if input.ndim else source.reshape(1)
    x = input if input.ndim else input.reshape(1)
    out = advanced.scatter_add(x, d, _along(x, d, index, src.shape), src * alpha if alpha != 1 else src)
    return out if input.ndim else out.reshape(())


def _positions(x: Tensor, dim: int, index: Tensor):
    """The advanced index tuple that puts ``index`` (1-d) along ``dim``."""
    return (slice(None),) * dim + (index,)


@_op("index_copy")
def index_copy(input, dim, index, source):  # noqa: A002
    out = input.clone()
    out[_positions(out, _dim(input, dim), index)] = source
    return out


@_op("index_fill")
def index_fill(input, dim, index, value):  # noqa: A002
    out = input.clone()
    out[_positions(out, _dim(input, dim), index)] = value
    return out


def _scatter_index(index: Tensor, dim: int):
    """scatter's index as an advanced-indexing tuple: ``index`` along ``dim``, the position of each
    element elsewhere."""
    grids = []
    for k, n in enumerate(index.shape):
        if k == dim:
            grids.append(index)
        else:
            view = [1] * index.ndim
            view[k] = n
            grids.append(random.arange(n, device=index.device).reshape(view).expand(*index.shape))
    return tuple(grids)


@_op("scatter")
def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    if reduce is not None:
        raise NotImplementedError("tgrad.scatter: the deprecated reduce= argument is not supported; use "
                                  "scatter_reduce or scatter_add")
    d = _dim(input, dim)
    fill = src if src is not None else value
    out = input.clone()
    if isinstance(fill, Tensor):
        fill = fill[tuple(slice(0, n) for n in index.shape)]
    out[_scatter_index(index, d)] = fill
    return out


@_op("masked_scatter")
def masked_scatter(input, mask, source):  # noqa: A002
    out = input.clone()
    m = mask.expand(*input.shape) if tuple(mask.shape) != tuple(input.shape) else mask
    n = int(m.sum().item())
    out[m] = source.reshape(-1)[:n]
    return out


@_op("bincount")
def bincount(input, weights=None, minlength=0):  # noqa: A002
    if input.ndim != 1 or input.dtype.is_floating_point:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.numel() and int(input.amin().item()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = builtins.max(int(input.amax().item()) + 1 if input.numel() else 0, minlength)
    dtype = weights.dtype if weights is not None else _dtype.int64
    if weights is not None and not weights.dtype.is_floating_point:
        dtype = _dtype.float64
    zeros = factories.zeros(n, dtype=dtype, device=input.device)
    ones = weights.to(dtype) if weights is not None else factories.ones(input.shape[0], dtype=dtype,
                                                                          device=input.device)
    return advanced.scatter_add(zeros, 0, input, ones)


@_op("histc")
def histc(input, bins=100, min=0, max=0):  # noqa: A002
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.amin().item()), float(input.amax().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = input.reshape(-1).detach()
    inside = (x >= lo) & (x <= hi)
    which = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).to(_dtype.int64)
    counts = factories.zeros(bins, dtype=input.dtype, device=input.device)
    return advanced.scatter_add(counts, 0, which, inside.to(input.dtype))


@_op("unique")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    if dim is not None:
        raise NotImplementedError("tgrad.unique: dim= is not supported (unique rows); flatten or compare rows")
    flat = input.reshape(-1)
    values, order = advanced.sort(flat, 0, stable=True)
    if flat.numel() == 0:
        first = factories.zeros(0, dtype=_dtype.bool, device=input.device)
    else:
        first = shape.cat([factories.ones(1, dtype=_dtype.bool, device=input.device),
                           values.narrow(0, 1, flat.numel() - 1) != values.narrow(0, 0, flat.numel() - 1)], 0)
    out = advanced.masked_select(values, first)
    results = [out]
    if return_inverse:
        group = cumsum(first.to(_dtype.int64), 0) - 1
        inverse = factories.zeros(flat.numel(), dtype=_dtype.int64, device=input.device)
        inverse = advanced.scatter_add(inverse, 0, order, group)
        results.append(inverse.reshape(tuple(input.shape)))
    if return_counts:
        starts = advanced.nonzero(first).reshape(-1)
        ends = shape.cat([starts.narrow(0, 1, builtins.max(starts.numel() - 1, 0)),
                          factories.tensor([flat.numel()], dtype=_dtype.int64, device=input.device)], 0)
        results.append(ends - starts)
    return results[0] if len(results) == 1 else tuple(results)


@_op("mode")
def mode(input, dim=-1, keepdim=False):  # noqa: A002
    d = _dim(input, dim)
    x = input.movedim(d, -1)
    counts = (x.unsqueeze(-1) == x.unsqueeze(-2)).sum(-1)      # how often each element occurs
    top = counts.amax(-1, keepdim=True)
    candidates = where(counts == top, x, math.inf if x.dtype.is_floating_point else
                       torch.iinfo(x.dtype.torch).max)
    value = candidates.amin(-1, keepdim=True)                   # the smallest most frequent value
    hits = (x == value).to(_dtype.int64) * random.arange(1, x.shape[-1] + 1, device=x.device)
    index = hits.amax(-1, keepdim=True) - 1                     # its last position, as PyTorch
    value, index = value.movedim(-1, d), index.movedim(-1, d)
    if not keepdim:
        value, index = value.squeeze(d), index.squeeze(d)
    return return_types.mode(value.detach() if not input.requires_grad else
                                      advanced.gather(input, d, index.unsqueeze(d) if not keepdim else index)
                                      .squeeze(d) if not keepdim else advanced.gather(input, d, index), index)


# ----------------------------------------------------------------------------- random draws

@_op("bernoulli")
def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    probs = input if p is None else factories.full(tuple(input.shape), float(p), dtype=input.dtype,
                                                   device=input.device)
    u = random.rand(*input.shape, generator=generator, dtype=_dtype.float64 if input.dtype is _dtype.float64
                    else _dtype.float32, device=input.device)
    return (u < probs.detach()).to(input.dtype)


@_op("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    probs = input.detach().to(_dtype.float64)
    rows = probs.reshape(-1, probs.shape[-1])
    n = rows.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if bool((rows < 0).any()) or not bool(rows.isfinite().all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((rows.sum(-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:  # inverse CDF: the first bucket whose cumulative probability exceeds u
        cdf = cumsum(rows / rows.sum(-1, keepdim=True), -1)
        u = random.rand(rows.shape[0], num_samples, generator=generator, dtype=_dtype.float64, device=input.device)
        picks = searchsorted(cdf, u, right=True).clamp(max=n - 1)
    else:  # Gumbel top-k: keys log p - log(-log u) ordered give draws without replacement
        u = random.rand(rows.shape[0], n, generator=generator, dtype=_dtype.float64, device=input.device)
        keys = where(rows > 0, rows.log() - (-(u.clamp(min=1e-300)).log()).log(), -math.inf)
        picks = topk(keys, num_samples, -1).indices
    return picks.reshape(tuple(input.shape[:-1]) + (num_samples,))
