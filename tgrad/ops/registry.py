"""Where the public ops are listed: ``tgrad.<name>``, ``Tensor.<name>`` and the functions of
``tgrad.nn.functional`` that are core ops all come from the dicts below, filled as each op module
defines its ops. There is one way in: ``op``, at the op's definition (``@op("sum")`` on a function,
``op("T", function=False)(property(...))`` for a value; the op table's rows call it too)."""
from __future__ import annotations

FUNCTIONS: dict = {}     # tgrad.<name>
METHODS: dict = {}       # Tensor.<name>: a function whose first argument is the tensor (or any attribute)
NN_FUNCTIONAL: dict = {}  # tgrad.nn.functional.<name> (activations PyTorch has only there)


def op(*names, function=True, method=True, nn_functional=False):
    """Declares where an op appears: ``tgrad.<name>`` (``function``), ``Tensor.<name>`` (``method``)
    and ``tgrad.nn.functional.<name>`` (``nn_functional``), for each of ``names``. Returns a
    decorator that lists its argument and returns it unchanged."""
    def declare(fn):
        for name in names:
            if function:
                FUNCTIONS[name] = fn
            if method:
                METHODS[name] = fn
                for cls in _INSTALLED:  # declared after the install (tgrad.linalg's aliases): install it too
                    setattr(cls, name, fn)
            if nn_functional:
                NN_FUNCTIONAL[name] = fn
        return fn
    return declare


_INSTALLED: list = []


def install_methods(tensor_cls):
    _INSTALLED.append(tensor_cls)
    for name, fn in METHODS.items():
        setattr(tensor_cls, name, fn)
