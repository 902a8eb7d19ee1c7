"""``nn.Module``: the container of parameters, buffers and child modules, as ``torch.nn.Module``.

Attribute assignment registers: a ``Parameter`` goes into ``_parameters``, a ``Module`` into
``_modules``, and ``register_buffer`` puts tensors into ``_buffers``; the state dict names them by
their dotted path (``"0.weight"``, ``"bn.running_mean"``), exactly PyTorch's keys.
"""
from __future__ import annotations

import itertools
from collections import OrderedDict, namedtuple

import torch

import tgrad
from tgrad import _dtype
from tgrad.tensor import Tensor
from ..parameter import Parameter
from . import hooks as _hooks
from .hooks import (ModuleHooks, register_module_backward_hook, register_module_buffer_registration_hook,
                    register_module_forward_hook, register_module_forward_pre_hook, register_module_full_backward_hook,
                    register_module_full_backward_pre_hook, register_module_module_registration_hook,
                    register_module_parameter_registration_hook, registered)

__all__ = ["Module", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook",
           "register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join((n * " ") + line if line.strip() else "" for line in lines[1:])


def _typename(x):
    return x.type() if isinstance(x, Tensor) else f"{type(x).__module__}.{type(x).__qualname__}"


def _check_name(kind, name, owner, table):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\"" + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")
    if hasattr(owner, name) and name not in table:
        raise KeyError(f"attribute '{name}' already exists")


def zero_grads(params, set_to_none=True):
    """What ``Module.zero_grad`` and ``Optimizer.zero_grad`` do: drop each ``.grad`` (the default), or
    detach it and fill it with zeros in place."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()


class Module(ModuleHooks):
    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        for name, value in (("training", True), ("_parameters", {}), ("_buffers", {}),
                            ("_non_persistent_buffers_set", set()), ("_modules", {})):
            object.__setattr__(self, name, value)
        self._init_hooks()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name, self, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(tgrad Tensor or None required)")
        self._buffers[name] = registered(_hooks._global_buffer_registration_hooks, self, name, tensor)
        (self._non_persistent_buffers_set.discard if persistent else self._non_persistent_buffers_set.add)(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name, self, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(tgrad.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = registered(_hooks._global_parameter_registration_hooks, self, name, param)

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name, self, self._modules)
        self._modules[name] = registered(_hooks._global_module_registration_hooks, self, name, module)

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        mod = self
        for item in target.split(".") if target else []:
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def __getattr__(self, name):
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__

        def remove_from(*tables):
            for t in tables:
                if name in t:
                    t.remove(name) if isinstance(t, set) else t.pop(name)

        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, buffers, modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(tgrad.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, params, buffers, self._non_persistent_buffers_set)
            modules[name] = registered(_hooks._global_module_registration_hooks, self, name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(tgrad.nn.Module or None expected)")
            modules[name] = registered(_hooks._global_module_registration_hooks, self, name, value)
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(tgrad.Tensor or None expected)")
            self.register_buffer(name, value, name not in self._non_persistent_buffers_set)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(dir(type(self))) + list(self.__dict__) + list(self._parameters) + list(self._modules) \
            + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield mod_prefix + ("." if mod_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ device and dtype
    def _apply(self, fn):
        """Replace every parameter's (and its grad's) and buffer's data by ``fn(data)``, keeping
        the Parameter objects, so optimizers built earlier still hold them."""
        for module in self.children():
            module._apply(fn)
        with tgrad.no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                p.data = fn(p)
                if p._grad is not None:
                    p._grad = fn(p._grad)
            for key, b in self._buffers.items():
                if b is not None:
                    self._buffers[key] = fn(b)
        return self

    def to(self, *args, **kwargs):
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, _dtype.dtype) or type(a).__name__ == "dtype":
                dtype = a
            else:
                device = a
        if dtype is not None:
            dtype = _dtype.as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
        device = _dtype.as_device(device) if device is not None else None

        def convert(t):
            return t.to(device=device if device is not None else t.device,
                        dtype=dtype if dtype is not None and t.is_floating_point() else t.dtype)
        return self._apply(convert)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    # ------------------------------------------------------------------ state dicts
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return self._run_state_dict_hooks(destination, prefix)

    def _load_from_state_dict(self, state_dict, prefix, strict, missing, unexpected, errors, assign=False):
        for hook in self._load_state_dict_pre_hooks.values():  # tgrad state dicts carry no metadata
            hook(state_dict, prefix, {"assign_to_params_buffers": True} if assign else {}, strict, missing,
                 unexpected, errors)
        local = {k: v for k, v in itertools.chain(self._parameters.items(), (
            (k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set)) if v is not None}
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing.append(key)
                continue
            value = state_dict[key]
            if isinstance(value, torch.Tensor):  # a PyTorch module's state_dict(): no copy
                value = tgrad.from_torch(value)
            if not isinstance(value, Tensor):
                errors.append(f'While copying the parameter named "{key}", expected tgrad.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(value)}")
                continue
            if param.ndim == 0 and value.ndim == 1 and value.shape[0] == 1:
                value = value[0]
            if value.shape != param.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                              f"the shape in current model is {param.shape}.")
                continue
            try:
                with tgrad.no_grad():
                    if assign:
                        if isinstance(param, Parameter) and not isinstance(value, Parameter):
                            value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as ex:  # reported with every other problem, as PyTorch does
                errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f"{param.size()} and whose dimensions in the checkpoint are {value.size()}, an "
                              f"exception occurred : {ex.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    head = key[len(prefix):].split(".", 1)
                    if (len(head) > 1 and head[0] not in self._modules) or (len(head) == 1 and head[0] not in local):
                        unexpected.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []

        def load(module, local, prefix=""):
            module._load_from_state_dict(local, prefix, True, missing, unexpected, errors, assign)
            for name, child in module._modules.items():
                if child is not None:
                    p = prefix + name + "."
                    load(child, {k: v for k, v in local.items() if k.startswith(p)}, p)
            module._run_load_state_dict_post_hooks(_IncompatibleKeys(missing, unexpected))

        load(self, dict(state_dict))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in
                                                                                        unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(m), 2) for key, m in self._modules.items()]
        lines = extra_lines + child_lines
        s = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                s += extra_lines[0]
            else:
                s += "\n  " + "\n  ".join(lines) + "\n"
        return s + ")"
