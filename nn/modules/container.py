"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (children named ``"0"``, ``"1"`` ... or
by key, so state-dict keys are PyTorch's) and ``ParameterList``, ``ParameterDict`` (parameters
registered under "0", "1" ... or their keys: ``params.0``, ``params.weight``). Plain tensors put into
a parameter container become Parameters; other objects are kept as attributes (not state), as in
PyTorch."""
from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc

from tgrad.tensor import Tensor

from .. import functional
from .activation import ReLU
from .linear import Linear
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


def _renumber(container, modules):
    """Make ``modules`` the container's children under the keys "0".."n-1" (what PyTorch leaves
    after a deletion or insertion, so state-dict keys stay dense)."""
    container._modules.clear()
    for i, m in enumerate(modules):
        container.add_module(str(i), m)


def _delete(container, idx):
    keys = list(container._modules)
    doomed = set(keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]])
    _renumber(container, [m for k, m in container._modules.items() if k not in doomed])


class _Numbered(Module):
    """A container of children numbered "0", "1" ...: what Sequential and ModuleList share."""

    def __delitem__(self, idx):
        _delete(self, idx)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self


class Sequential(_Numbered):
    """Calls its children in order, each on the previous one's output."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self))]
        setattr(self, key, module)

    def insert(self, index, module):
        n = len(self)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index % (n + 1) if index < 0 else index
        items = list(self._modules.values())
        items.insert(index, module)
        _renumber(self, items)
        return self

    def forward(self, input):
        modules = list(self._modules.values())
        i = 0
        while i < len(modules):
            if i + 1 < len(modules) and _fusable_linear_relu(modules[i], modules[i + 1]):
                # Linear then ReLU: one matmul launch with the ReLU in its epilogue and one fused
                # backward (node ReluBackward0, as unfused), instead of a matmul plus a pointwise each way
                linear = modules[i]
                input = functional.linear_act(input, linear.weight, linear.bias, "relu")
                i += 2
                continue
            input = modules[i](input)
            i += 1
        return input


def _fusable_linear_relu(first, second) -> bool:
    """Exactly a Linear and a non-inplace ReLU, neither with hooks or a replaced forward: then the
    fused call computes what calling both would, and nothing could observe the difference."""
    return (type(first) is Linear and type(second) is ReLU and not second.inplace
            and not (first._has_call_hooks() or second._has_call_hooks())
            and "forward" not in first.__dict__ and "forward" not in second.__dict__)


class ModuleList(_Numbered):
    """A list of modules registered as children ``"0"``, ``"1"`` ...; it has no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self))), module)

    def __iadd__(self, modules):
        return self.extend(modules)

    def __repr__(self):
        # as PyTorch prints it: a run of children that print alike is one line, "(0-1): 2 x Block(...)"
        if not self._modules:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            r = repr(m)
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        items = list(self._modules.values())
        items.insert(index, module)
        _renumber(self, items)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward: iterate over it and call its modules")


class ModuleDict(Module):
    """An ordered dict of modules registered as children under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        m = self[key]
        del self[key]
        return m

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward: index it and call its modules")


def _describe(p):
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.size())
        device = f" ({p.device})" if p.device.type == "cuda" else ""
        return size, device
    return None


class ParameterList(Module):
    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _index(self, idx):
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range")
        return str(idx + len(self) if idx < 0 else idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._index(idx))

    def __setitem__(self, idx, param):
        name = self._index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, name, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        index = len(self)
        self._size += 1
        self[index] = value
        return self

    def extend(self, values):
        if not isinstance(values, abc.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        lines = []
        for k, p in enumerate(self):
            info = _describe(p)
            if info is None:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
            else:
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{p.dtype} of size {info[0]}{info[1]}]")
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    def __init__(self, parameters=None):
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        attr = self._attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in self._keys.copy():
            del self[k]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        k, _ = self._keys.popitem()
        self._keys[k] = None  # so that the deletion below finds it
        value = self[k]
        del self[k]
        return k, value

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        if not isinstance(parameters, abc.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, value in parameters.items():
                self[key] = value
        elif isinstance(parameters, abc.Mapping):
            for key, value in sorted(parameters.items()):  # PyTorch sorts a plain dict's keys
                self[key] = value
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, abc.Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                    + type(p).__name__)
                if not len(p) == 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            info = _describe(p)
            if info is None:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
            else:
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{p.type()} of size {info[0]}{info[1]}]")
        return "\n".join(lines)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self
