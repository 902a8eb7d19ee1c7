"""tgrad's ops: functions (``tgrad.exp(x)``) and the matching Tensor methods and operators.

Every public op declares where it appears (``tgrad.<name>``, ``Tensor.<name>``,
``tgrad.nn.functional.<name>``) at its definition, through ``registry.op``; the op table's rows
(``table.py``, built by ``generated.py``) call it too. This package imports the modules (so they
declare), gives every op PyTorch's ``out=`` and ``keepdims=`` (``conventions``), installs the
methods on Tensor, and takes the functions as its names.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import registry
from . import generated, elementwise, integer, arrange, products, select, triangular, multinomial  # noqa: F401
from . import factories, gather_scatter, joins, matmul, random, reduce, shape, softmax, sorting, statistics  # noqa: F401
from . import methods  # noqa: F401
from . import arithmetic, construction, geometry, indexing, promotion, scans, splits, thresholds  # noqa: F401
from . import broadcasting, comparisons, index_put, stacking, uniques  # noqa: F401
from .conventions import apply_to_registry

apply_to_registry()  # out= and keepdims= on every op, once
registry.install_methods(Tensor)

globals().update(registry.FUNCTIONS)
__all__ = sorted(registry.FUNCTIONS)
