"""``tgrad.special``: torch.special's common names, each a tgrad op (its kernel and derivative):
the ones tgrad has under another name (``expit`` is sigmoid, ``gammaln`` lgamma, ``psi`` digamma)
and a few composed here from those ops:

- ``entr``: -x ln x for x > 0, 0 at 0, -inf below (its gradient is the composition's: zero at and
  below 0, where PyTorch's formula gives inf and NaN).
- ``ndtr``: the standard normal CDF, (1 + erf(x / sqrt 2)) / 2 (PyTorch's erfc form keeps relative
  precision in the far left tail, below about -5, where this one underflows to 0 sooner).
- ``xlog1py``: x ln(1 + y), 0 where x is 0 (unless y is NaN), as xlogy.
- ``multigammaln``: ln of the multivariate gamma function, sum_i lgamma(a - i/2) + p(p-1)/4 ln pi.
"""
from __future__ import annotations

import math

from . import _dtype
from . import ops as _ops
from .tensor import Tensor

__all__ = ["digamma", "entr", "erf", "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "log1p", "log_softmax",
           "logit", "logsumexp", "multigammaln", "ndtr", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py",
           "xlogy"]

digamma = psi = _ops.digamma
erf, erfinv, exp2, expm1, log1p = _ops.erf, _ops.erfinv, _ops.exp2, _ops.expm1, _ops.log1p
expit, gammaln, i0, logit, polygamma = _ops.sigmoid, _ops.lgamma, _ops.i0, _ops.logit, _ops.polygamma
log_softmax, softmax, logsumexp = _ops.log_softmax, _ops.softmax, _ops.logsumexp
round, sinc, xlogy = _ops.round, _ops.sinc, _ops.xlogy  # noqa: A001


def _floating(x: Tensor) -> Tensor:
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


def entr(input):  # noqa: A002
    x = _floating(input)
    positive = x > 0
    inside = -x * _ops.log(_ops.where(positive, x, 1.0))
    return _ops.where(x != x, x, _ops.where(positive, inside, _ops.where(x == 0, 0.0, -math.inf)))


def ndtr(input):  # noqa: A002
    return 0.5 * (1.0 + _ops.erf(_floating(input) * 0.7071067811865476))


def xlog1py(input, other):  # noqa: A002
    x, y = (v if isinstance(v, Tensor) else _ops.tensor(v) for v in (input, other))
    value = _floating(x) * _ops.log1p(_floating(y))
    return _ops.where((x == 0) & (y == y), 0.0, value)


def multigammaln(input, p):  # noqa: A002
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _floating(input)
    shifts = _ops.arange(p, dtype=x.dtype, device=x.device) * -0.5
    return _ops.lgamma(x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
