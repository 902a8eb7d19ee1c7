"""tgrad's ops: functions (``tgrad.exp(x)``) and the matching Tensor methods and operators.

Every public op is listed in ``registry``: the op table's rows (``table.py``, built by
``generated.py``) and the hand-written elementwise ops (``elementwise.py``) register themselves;
the other families (reductions, matmul, shapes, indexing, factories, random) are registered below
from their ``__all__``. ``methods.py`` adds the Tensor-only methods and operators; ``conventions``
gives every op PyTorch's ``out=`` and ``keepdims=``; then the methods are installed on Tensor and
the functions become this package's names.
"""
from __future__ import annotations

from ..tensor import Tensor
from . import registry
from . import generated, elementwise, arrange, products, select, triangular, multinomial  # noqa: F401  (they register)
from . import factories, gather_scatter, matmul, random, reduce, shape, softmax, sorting, statistics
from . import methods  # noqa: F401  (Tensor-only methods and operators)
from . import arithmetic, construction, geometry, indexing, promotion, scans, splits, thresholds  # noqa: F401
from .conventions import apply_to_registry

for _module in (reduce, statistics, softmax, matmul, shape, gather_scatter, sorting, factories, random):
    for _name in _module.__all__:
        registry.register(getattr(_module, _name), _name, method=False)
apply_to_registry()  # out= and keepdims= on every op, once
registry.install_methods(Tensor)

globals().update(registry.FUNCTIONS)
__all__ = sorted(registry.FUNCTIONS)
