"""``tril`` / ``triu`` (functions, methods, in place ``tril_`` / ``triu_``) over the last two dims,
with ``diagonal=``: one launch of ``kernels/triangular.py`` forward and backward (the mask is its
own adjoint, so the backward is the same Function and higher orders follow)."""
from __future__ import annotations

from ..autograd.function import BuiltinFunction
from ..tensor import Tensor
from tgrad.kernels.indexing import triangular as KT
from .common import check_runnable, wrap
from .inplace import write_inplace
from .registry import op

class _Triangle(BuiltinFunction):
    edge_args = (0,)

    @classmethod
    def forward(cls, ctx, x, k):
        check_runnable(x)
        ctx.k = k
        return wrap(KT.triangle(x._data, k, cls.upper))

    @classmethod
    def backward(cls, ctx, g):
        return cls.apply(g, ctx.k), None


class _Tril(_Triangle):
    node_name = "TrilBackward0"
    upper = False


class _Triu(_Triangle):
    node_name = "TriuBackward0"
    upper = True


def _check(x, name, diagonal):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if x.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"{name}(): argument 'diagonal' must be int, not {type(diagonal).__name__}")


@op("tril")
def tril(input, diagonal=0):
    _check(input, "tril", diagonal)
    return _Tril.apply(input, diagonal)


@op("triu")
def triu(input, diagonal=0):
    _check(input, "triu", diagonal)
    return _Triu.apply(input, diagonal)


@op("tril_", function=False)
def _tril_(self, diagonal=0):
    _check(self, "tril_", diagonal)
    return write_inplace(self, lambda a: _Tril.apply(a, diagonal))


@op("triu_", function=False)
def _triu_(self, diagonal=0):
    _check(self, "triu_", diagonal)
    return write_inplace(self, lambda a: _Triu.apply(a, diagonal))


