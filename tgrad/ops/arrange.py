"""Rearranging ops composed from other ops (tinygrad's way), and the scans: repeats, flips, rolls,
diagonals, triangles, grids, cumulative sums and products. Each composed op's derivative is its
parts'; the scans run on ``kernels/scan.py`` and differentiate through reversed scans."""
from __future__ import annotations

import builtins

import torch

from .. import _dtype
from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from tgrad.kernels.reductions import scan as KS
from . import factories, gather_scatter, joins, random, shape, views
from .common import check_runnable, normalize_dim, require_argument, wrap
from .elementwise import where
from .formula import fused
from .inplace import write_inplace
from .registry import op


def _grid(n: int, device, relation):
    """An (n, n) bool mask ``relation(i, j)`` of row and column numbers (comparison kernels)."""
    i = random.arange(n, device=device).reshape(n, 1)
    j = random.arange(n, device=device).reshape(1, n)
    return relation(i, j)


def flip_dims(x: Tensor, dims):
    """x reversed along ``dims`` (a gather per dim: torch views cannot have negative strides)."""
    for d in dims if x.ndim else ():
        d = normalize_dim(x, d)
        n = x.shape[d]
        if n > 1:
            x = gather_scatter.index_select(x, d, random.arange(n - 1, -1, -1, device=x.device))
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
    d1, d2 = normalize_dim(x, d1), normalize_dim(x, d2)
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


@op("cumsum")
def cumsum(input, dim, *, dtype=None):  # noqa: A002
    return Cumsum.apply(input, normalize_dim(input, dim), _dtype.as_dtype(dtype) if dtype is not None else None)


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


@op("cumprod")
def cumprod(input, dim, *, dtype=None):  # noqa: A002
    return Cumprod.apply(input, normalize_dim(input, dim), _dtype.as_dtype(dtype) if dtype is not None else None)


# ----------------------------------------------------------------------------- repeats and rearrangements

def _sizes(args):
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else tuple(args)


@op("repeat", method=True)
def repeat(input, *sizes):  # noqa: A002
    require_argument(sizes, "repeat", "repeats")
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


@op("tile", method=False)
def tile(input, dims):  # noqa: A002
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    dims = tuple(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


@op("tile", function=False)
def tile_method(input, *dims):  # noqa: A002
    """``t.tile(2, 3)`` or ``t.tile((2, 3))``."""
    require_argument(dims, "tile", "dims")
    return tile(input, _sizes(dims))


@op("repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    if isinstance(repeats, Tensor):
        if repeats.dtype.is_floating_point or repeats.dtype is _dtype.bool:
            raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{repeats.dtype.scalar_type}\'')
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.numel() and int(repeats.amin().item()) < 0:
            raise RuntimeError("repeats can not be negative")
    elif not isinstance(repeats, int) or isinstance(repeats, bool):
        raise TypeError(f"repeat_interleave() received an invalid combination of arguments - got "
                        f"({type(repeats).__name__}), but expected one of: (Tensor repeats, int dim = None, *, "
                        f"int output_size = None) or (int repeats, int dim = None, *, int output_size = None)")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else normalize_dim(x, dim)
    if isinstance(repeats, Tensor) and repeats.numel() != 1:
        counts = repeats.tolist()  # the index is host data, as PyTorch's own output size is
        if len(counts) != x.shape[d]:
            raise RuntimeError("repeats must have the same size as input along dim")
        index = factories.tensor([i for i, c in enumerate(counts) for _ in range(c)], dtype=_dtype.int64,
                                 device=x.device)
        return gather_scatter.index_select(x, d, index)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    shape_in = tuple(x.shape)
    y = x.unsqueeze(d + 1).expand(*shape_in[:d + 1], r, *shape_in[d + 1:])
    return y.reshape(shape_in[:d] + (shape_in[d] * r,) + shape_in[d + 1:])


@op("flip")
def flip(input, *dims):  # noqa: A002
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    return flip_dims(input, _sizes(dims))


@op("fliplr")
def fliplr(input):  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_dims(input, (1,))


@op("flipud")
def flipud(input):  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_dims(input, (0,))


@op("roll")
def roll(input, shifts, dims=None):  # noqa: A002
    if dims is None:
        return roll(input.flatten(), shifts, 0).view(*input.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = input
    for s, d in zip(shifts, dims):
        d = normalize_dim(out, d)
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            out = joins.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out


@op("diff")
def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    d = normalize_dim(input, dim)
    x = joins.cat([t for t in (prepend, input, append) if t is not None], d) if prepend is not None or \
        append is not None else input
    for _ in range(n):
        m = x.shape[d]
        later, earlier = x.narrow(d, min(m, 1), max(m - 1, 0)), x.narrow(d, 0, max(m - 1, 0))
        x = later - earlier if x.dtype is not _dtype.bool else later.logical_xor(earlier)
    return x


@op("rot90")
def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = input._dim(dims[0]), input._dim(dims[1])
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return shape.transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return shape.transpose(flip(input, (d0,)), d0, d1)
    return input.clone()


# ----------------------------------------------------------------------------- diagonals

@op("diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    return diagonal_view(input, offset, normalize_dim(input, dim1), normalize_dim(input, dim2))


@op("diag")
def diag(input, diagonal=0):  # noqa: A002
    if input.ndim == 1:
        n = input.shape[0] + builtins.abs(diagonal)
        out = factories.zeros(n, n, dtype=input.dtype, device=input.device)
        return diagonal_scatter(out, input, diagonal)
    if input.ndim == 2:
        return diagonal_view(input, diagonal, 0, 1).contiguous()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")


@op("diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    n = input.shape[-1] + builtins.abs(offset)
    out = factories.zeros(*input.shape[:-1], n, n, dtype=input.dtype, device=input.device)
    return diagonal_scatter(out, input, offset, -2, -1).movedim((-2, -1), (dim1, dim2))


@op("fill_diagonal_", function=False)
def fill_diagonal_(input, fill_value, wrap=False):  # noqa: A002
    """PyTorch's: the elements (i, i, ..., i) set to a number; ``wrap``: a matrix taller than wide
    continues the diagonal in memory every width + 1 elements (contiguous: every width + 1 rows;
    another layout through a view of its storage, as PyTorch's)."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = input.shape[0], input.shape[1]
    if input.ndim > 2 and any(n != height for n in input.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    if isinstance(fill_value, Tensor):  # a number argument: a 0-d tensor gives its value, unless it requires grad
        if fill_value.ndim or fill_value.requires_grad:
            raise TypeError("fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not Tensor")
        fill_value = fill_value.item()
    diag = input
    while diag.ndim > 1:
        diag = diagonal_view(diag, 0, 0, diag.ndim - 1)
    diag.fill_(fill_value)
    if wrap and input.ndim == 2 and height > width + 1:
        count = -(-input.numel() // (width + 1)) - width
        if views.storage_order(input) is not None:  # (contiguous too: a step of width + 1 through memory)
            input.as_strided((count,), (builtins.sum(input.stride()),),
                             input.storage_offset() + input.stride(0) * (width + 1)).fill_(fill_value)
        elif count <= builtins.min(width, height - width - 1):  # memory and x agree on the first block
            diagonal_view(input[width + 1:], 0, 0, 1)[:count].fill_(fill_value)
        else:
            raise RuntimeError("fill_diagonal_(wrap=True): past its first block the wrapped diagonal of a tensor "
                               "whose elements are not one dense block lies outside it in storage (PyTorch writes "
                               "there); call .contiguous() first")
    return input


@op("trace")
def trace(input):  # noqa: A002
    if input.dtype is _dtype.bool:
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal(input).sum()


@op("diagflat")
def diagflat(input, offset=0):  # noqa: A002
    return diag(shape.reshape(input, (-1,)), offset)


# ----------------------------------------------------------------------------- grids

@op("meshgrid", method=False)
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


def _cumulative_(fn):
    def method(self, dim, *, dtype=None):
        return write_inplace(self, lambda t: fn(t, dim, dtype=dtype))
    return method


op("cumsum_", function=False)(_cumulative_(cumsum))
op("cumprod_", function=False)(_cumulative_(cumprod))
