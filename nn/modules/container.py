"""Containers: ``Sequential``, ``ModuleList``, ``ModuleDict`` (children named ``"0"``, ``"1"`` ... or
by key, so state-dict keys are PyTorch's), and the trivial ``Identity`` and ``Flatten``."""
from __future__ import annotations

import operator
from collections import OrderedDict

from .. import functional
from .activation import ReLU
from .linear import Linear
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "Identity", "Flatten", "Unflatten"]


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


class Sequential(Module):
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
            and not (first._forward_hooks or first._forward_pre_hooks or second._forward_hooks
                     or second._forward_pre_hooks)
            and "forward" not in first.__dict__ and "forward" not in second.__dict__)


class ModuleList(Module):
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

    def __delitem__(self, idx):
        _delete(self, idx)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

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

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

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


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` into one (a view when the input allows it)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
