"""The elementwise family: one strided kernel and the formulas it runs.

``pointwise.py`` holds ``pointwise_kernel`` (minitorch's map/zip): ``out[i] = OP(in0[i], ..., p)``
over a logical N-d index, each operand reached through its own strides, OP a ``@triton.jit``
formula passed as a compile-time constant. The formulas, each beside its local derivative:

- ``arithmetic.py``: negation, abs, reciprocal, clamps, powers, sign and rounding, copies and fills,
  add/sub/mul/div, maximum/minimum (the conventions every formula here follows are stated there);
- ``elementary.py``: logs and exponentials, trigonometric and hyperbolic functions and their
  inverses (and ``expm1``/``log1p``/``tanh`` written out, since the interpreter has no libdevice);
- ``activations.py``: sigmoid, relu, gelu, silu, softplus, elu and the rest, the clamp family;
- ``comparison.py``: comparisons, logical ops, isnan/isinf/isfinite, ``where``;
- ``integer.py``: integer and bitwise formulas, exact in the operands' own dtype.
- ``special.py``: the gamma family and erfinv; ``bessel.py``: i0 and i1 (as PyTorch's CPU kernels compute them).

This package gathers every formula by name (``elementwise.exp``, ``elementwise.add_plain``), as the
op table and the traced derivatives look them up; it holds no code of its own.
"""
from .activations import *  # noqa: F401,F403
from .arithmetic import *  # noqa: F401,F403
from .comparison import *  # noqa: F401,F403
from .elementary import *  # noqa: F401,F403
from .integer import *  # noqa: F401,F403
from .bessel import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
