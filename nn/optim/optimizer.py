"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and state dicts, as in
``torch.optim.Optimizer``; the arithmetic of a step is one fused kernel per group
(``tgrad.kernels.optim.step``, the update formulas in ``tgrad.kernels.optim.updates``).

State dicts have PyTorch's structure: ``{"state": {index: {name: tensor}}, "param_groups":
[{hyperparameters..., "params": [indices]}]}`` with parameters numbered in group order, so a state
dict holds only tensors, numbers, strings, bools and None (what ``tgrad.save`` writes).

Graph capture (``tgrad.kernels.runtime.capture``) records a step once and replays it, so whatever a step
decides on the host is frozen into the graph. Hence, as in PyTorch: Adam, AdamW and RMSprop take
``capturable=True``, which keeps ``state["step"]`` as a 0-d float32 tensor on the parameter's
device that the kernels read and advance (no host value changes per step), and they refuse a
capture with ``capturable=False``. Every optimizer refuses to create state during a capture (the
zero fill and SGD's first-step flag would be replayed every time): run a step before capturing.
Group hyperparameters (``lr`` ...) are read on the host, so a capture freezes them too.

Hooks are PyTorch's: ``register_step_pre_hook`` / ``register_step_post_hook`` (and the global
``register_optimizer_step_pre_hook`` / ``_post_hook``) run around every ``step`` -- global pre-hooks
first, global post-hooks last -- through a wrapper put on the optimizer class's ``step`` once; and
the state-dict hooks run around ``state_dict`` and ``load_state_dict``.
"""
from __future__ import annotations

import copy
import functools
import warnings
from collections import OrderedDict, defaultdict
from itertools import chain

import torch

import tgrad
from tgrad import torch_format
from tgrad.autograd.hooks import RemovableHandle, add_hook
from tgrad.kernels.runtime.capture import is_capturing
from tgrad.kernels.optim.step import fused_step
from tgrad.kernels.optim.tables import TableCache
from tgrad.tensor import Tensor
from tgrad.nn.modules.module import zero_grads

__all__ = ["Optimizer", "HostScalarsOptimizer", "required", "check_betas", "scalar_state",
           "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

_global_optimizer_pre_hooks: dict = OrderedDict()
_global_optimizer_post_hooks: dict = OrderedDict()
_HOOK_TABLES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                "_optimizer_load_state_dict_post_hooks")


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before every optimizer's step."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """``hook(optimizer, args, kwargs)`` after every optimizer's step."""
    return add_hook(_global_optimizer_post_hooks, hook)


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


def _typename(x):
    return x.type() if isinstance(x, Tensor) else f"{type(x).__module__}.{type(x).__qualname__}"


def _check_nonnegative(value, what):
    if not 0.0 <= value:
        raise ValueError(f"Invalid {what}: {value}")


class Optimizer:
    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in params]  # by identity: == on tensors is elementwise
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          UserWarning, stacklevel=3)
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        for g in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in g):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not taken.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True):
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    # ------------------------------------------------------------------ hooks
    def _init_hooks(self):
        for name in _HOOK_TABLES:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()

    @staticmethod
    def profile_hook_step(func):
        """``func`` (a ``step``) wrapped to run the step hooks; their ``args`` include the optimizer, as PyTorch's."""
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            self = args[0]
            for pre_hook in (*_global_optimizer_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()):
                result = pre_hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                           f"{result}.")
                    args, kwargs = result
            out = func(*args, **kwargs)
            for post_hook in (*self._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()):
                post_hook(self, args, kwargs)
            return out
        return wrapper

    def _patch_step_function(self):
        if not getattr(type(self).step, "hooked", None):
            type(self).step = self.profile_hook_step(type(self).step)
            type(self).step.hooked = True

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before each ``step``."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each ``step``."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(optimizer)`` before ``state_dict`` builds the dict."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend=prepend)

    def register_state_dict_post_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or a replacement state dict`` after ``state_dict``."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend=prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or a replacement`` before ``load_state_dict`` reads it."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend=prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(optimizer)`` after ``load_state_dict``."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend=prepend)

    # ------------------------------------------------------------------ stepping
    @tgrad.no_grad()
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        capturing = is_capturing()
        if "capturable" in self.defaults:
            self._capture_health_check(capturing)
        loss = None
        if closure is not None:
            with tgrad.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update_group(group, params, capturing)
        return loss

    def _update_group(self, group: dict, params: list, capturing: bool):  # pragma: no cover - abstract
        """Update ``params`` (those of ``group`` with a gradient); ``capturing``: a graph capture
        is under way, so nothing may depend on a host value that changes per step."""
        raise NotImplementedError

    def _capture_health_check(self, capturing: bool):
        """PyTorch's checks for optimizers with a ``capturable`` flag: a capture needs every group
        capturable; capturable outside a capture warns once (CUDA parameters only: on the CPU,
        capturable is how graph capture is tested without a GPU)."""
        capturable = all(group.get("capturable", False) for group in self.param_groups)
        if capturing and not capturable:
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of {type(self).__name__} "
                               "but param_groups' capturable is False.")
        if (not capturing and capturable and not getattr(self, "_warned_capturable_if_run_uncaptured", False)
                and any(p.device.type == "cuda" for group in self.param_groups for p in group["params"])):
            warnings.warn("This instance was constructed with capturable=True or some of all the param_groups came "
                          "with capturable=True, but step() is running without CUDA graph capture. If you never "
                          "intend to graph-capture this instance, capturable=True can impair performance, and you "
                          "should set capturable=False.", UserWarning, stacklevel=4)
            self._warned_capturable_if_run_uncaptured = True

    def _tables(self) -> TableCache:
        """This optimizer's cache of device pointer tables (made on first use; not saved)."""
        cache = self.__dict__.get("_table_cache")
        if cache is None:
            cache = self._table_cache = TableCache()
        return cache

    def _no_state_during_capture(self, capturing: bool, what: str):
        """State is made (zero-filled) on a parameter's first step; a capture would replay that
        fill every time, so the state has to exist before capturing."""
        if capturing:
            raise RuntimeError(f"{type(self).__name__} creates its state ({what}) for a parameter on the first "
                               "step() that updates it, and that cannot be graph-captured (the initialisation "
                               "would be replayed every time): run at least one step() before capturing "
                               "(warm-up).")

    @staticmethod
    def _device_step(state: dict, p: Tensor, capturing: bool) -> Tensor:
        """``state["step"]`` as a capturable step keeps it: a 0-d float32 tensor on ``p``'s device
        (moved there once if it was saved or made by the host path)."""
        step = state["step"]
        if step.dtype is not tgrad.float32 or step.device != p.device:
            if capturing:
                raise RuntimeError(f"capturable=True keeps state['step'] on the parameter's device ({p.device}) "
                                   f"as float32, but it is {step.dtype} on {step.device}: run one step() "
                                   "before capturing to move it there")
            step = state["step"] = Tensor._wrap(step._data.to(dtype=torch.float32, device=p.device).clone())
        return step

    def _state_tensor(self, p: Tensor, fill=0.0) -> Tensor:
        """A contiguous state buffer shaped like ``p`` (torch allocates and fills: storage work)."""
        return Tensor._wrap(torch.full(tuple(p.shape), float(fill), dtype=p._data.dtype, device=p.device))

    @staticmethod
    def _next_step(state: dict) -> float:
        """Advance the parameter's step counter (a 0-d float32 CPU tensor, as PyTorch keeps it)."""
        step = state["step"]
        value = float(step.item()) + 1.0
        step._data.fill_(value)
        return value

    def _launch(self, algo, group, params, states, scalars=None, flags=None, hyper=(), steps=None,
                cached=False, capturing=False, **options):
        """One fused step of ``params`` by ``algo``'s update formula. ``steps``: their device step
        tensors (capturable); with ``cached`` (or when capturable or capturing) the device table
        comes from ``_tables()``."""
        cache = self._tables() if cached or capturing or steps is not None else None
        fused_step(algo, [p._data for p in params], [p.grad._data for p in params],
                   [[None if s is None else s._data for s in st] for st in states], hyper, scalars=scalars,
                   flags=flags, maximize=group.get("maximize", False),
                   steps=None if steps is None else [s._data for s in steps], cache=cache, capturing=capturing,
                   **options)
        for p in params:  # each parameter was written in place
            p._version.value += 1

    # ------------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        mapping: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            state_dict = state_dict if result is None else result
        return state_dict

    def load_state_dict(self, state_dict: dict):
        state_dict = torch_format.from_torch_objects(dict(state_dict))  # a PyTorch optimizer's, too
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            state_dict = state_dict if result is None else result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        capturable = {i: g.get("capturable", False) for g in saved_groups for i in g["params"]}
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            k = int(k) if isinstance(k, str) and k.isdigit() else k  # JSON keys come back as strings
            if k in id_map:
                param = id_map[k]
                state[param] = {name: self._cast_state(param, name, value, capturable[k]) for name, value in v.items()}
            else:
                state[k] = v
        for group, new in zip(groups, saved_groups):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
            for key, value in list(new.items()):  # JSON turns tuples (betas) into lists
                if isinstance(value, list) and isinstance(self.defaults.get(key), tuple):
                    new[key] = tuple(value)
        self.state = state
        self.param_groups = saved_groups
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    @staticmethod
    def _cast_state(param: Tensor, name, value, capturable=False):
        """A copy of a saved state value placed like ``param``: tensors other than ``step`` take its
        dtype and device (contiguous, so the fused kernel can use them); ``step`` is float32, on
        ``param``'s device when its group is capturable, else on the CPU (PyTorch's policy)."""
        if not isinstance(value, Tensor):
            return value
        if name == "step":
            device = param.device if capturable else "cpu"
            return Tensor._wrap(value._data.detach().to(dtype=torch.float32, device=device).clone())
        value = value.detach()
        if value.device != param.device:
            value = value.to(device=param.device)
        if value.dtype is not param.dtype:
            value = value.to(param.dtype)  # a cast is a kernel; the copy below is storage
        data = torch.empty(tuple(value.shape), dtype=param._data.dtype, device=param.device)
        data.copy_(value._data)
        return Tensor._wrap(data)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_hooks()  # hooks are not saved (as in PyTorch): a loaded optimizer has none

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"


def check_betas(betas):
    for i in range(2):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def scalar_state(value: float, device) -> Tensor:
    """A 0-d float32 state tensor (PyTorch's ``step``, ``eta``, ``mu``, ``mu_product``)."""
    return Tensor._wrap(torch.full((), float(value), dtype=torch.float32, device=device))


class HostScalarsOptimizer(Optimizer):
    """An optimizer whose step-dependent scalars are computed on the host, per parameter (Adadelta,
    Adamax, NAdam, RAdam, ASGD, Rprop): its state is made on a parameter's first step, then one
    fused launch updates the group. Such a step cannot be graph-captured (``capturable=True`` is
    refused). Subclasses define ``ALGO`` (the update formula's name), ``_init_state(group, p,
    state)``, ``_prepare(group, p, state) -> (states, scalars, flag or None)`` (which also advances
    the step) and ``_hyper(group) -> (group constants, formula options)``."""

    ALGO = ""

    def __init__(self, params, defaults):
        if defaults.get("differentiable"):
            raise NotImplementedError("tgrad optimizers are not differentiable")
        if defaults.get("capturable"):
            raise NotImplementedError(f"tgrad's {type(self).__name__} does not support capturable=True "
                                      "(Adam, AdamW and RMSprop do)")
        super().__init__(params, defaults)

    def _update_group(self, group, params, capturing):
        states, scalars, flags = [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                self._no_state_during_capture(capturing, type(self).__name__ + " state")
                state["step"] = scalar_state(0.0, p.device if self.ALGO == "asgd" else "cpu")
                self._init_state(group, p, state)
            s, c, f = self._prepare(group, p, state)
            states.append(s)
            scalars.append(c)
            flags.append(f)
        hyper, options = self._hyper(group)
        self._launch(self.ALGO, group, params, states, scalars=scalars if scalars[0] else None,
                     flags=None if flags[0] is None else flags, hyper=hyper, **options)
