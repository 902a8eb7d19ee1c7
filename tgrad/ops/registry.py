"""Where the public ops are listed: ``tgrad.<name>``, ``Tensor.<name>`` and the functions of
``tgrad.nn.functional`` that are core ops all come from the dicts below, filled as each op module
defines its ops (table rows register themselves; hand-written ops call ``register``)."""
from __future__ import annotations

FUNCTIONS: dict = {}     # tgrad.<name>
METHODS: dict = {}       # Tensor.<name>: a function whose first argument is the tensor
NN_FUNCTIONAL: dict = {}  # tgrad.nn.functional.<name> (activations PyTorch has only there)


def register(fn, *names, function=True, method=True, nn_functional=False):
    """List ``fn`` under ``names`` in the namespaces asked for; returns ``fn`` (usable as a call)."""
    for name in names:
        if function:
            FUNCTIONS[name] = fn
        if method:
            METHODS[name] = fn
        if nn_functional:
            NN_FUNCTIONAL[name] = fn
    return fn


def op(*names, method=True, function=True):
    """Decorator: ``@op("cumsum")`` registers a function as tgrad.cumsum and Tensor.cumsum."""
    def decorate(fn):
        return register(fn, *names, method=method, function=function)
    return decorate


def install_methods(tensor_cls):
    for name, fn in METHODS.items():
        setattr(tensor_cls, name, fn)
