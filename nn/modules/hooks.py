"""Module hooks, as in ``torch.nn.Module``: per-module forward, forward-pre, full backward and
backward-pre hooks (``ModuleHooks``, a base of ``Module``), the module-global ones
(``register_module_forward_hook`` ...), state-dict hooks, and the call that runs them all.

Call order is PyTorch's: global forward pre-hooks, then the module's; the inputs go through the
full-backward-hook wrapper (``tgrad.utils.hooks.BackwardHook``); ``forward``; global forward hooks,
then the module's; the output goes through the wrapper. In backward: global backward pre-hooks,
then the module's, on the output gradients; then global full backward hooks, then the module's,
with the input gradients. Every registration returns a ``RemovableHandle``; ``prepend=True`` puts
a module hook before the module's others (never before the global ones).

The deprecated non-full backward hooks (``register_backward_hook``, ``register_module_backward_hook``)
share the backward-hook tables, so a module (and the global table) takes one kind or the other: they
are post hooks on the ``grad_fn`` of the output's first tensor, registered at each call (see
``_register_non_full``), seeing that one node's gradients.
"""
from __future__ import annotations

import functools
import warnings
import weakref
from collections import OrderedDict

from tgrad.autograd.hooks import add_hook
from tgrad.tensor import Tensor
from tgrad.utils.hooks import BackwardHook, RemovableHandle

__all__ = ["ModuleHooks", "register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook",
           "register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]

_global_buffer_registration_hooks: dict = OrderedDict()
_global_module_registration_hooks: dict = OrderedDict()
_global_parameter_registration_hooks: dict = OrderedDict()
_global_backward_pre_hooks: dict = OrderedDict()
_global_backward_hooks: dict = OrderedDict()
_global_forward_pre_hooks: dict = OrderedDict()
_global_forward_hooks: dict = OrderedDict()
_global_forward_hooks_always_called: dict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = OrderedDict()
# which kind the global backward hooks are: None until the first registration, then for good
_global_is_full_backward_hook = None


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, buffer) -> None or a replacement buffer``, run by every ``register_buffer``."""
    return add_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, submodule) -> None or a replacement``, run whenever a child module is set."""
    return add_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    """``hook(module, name, param) -> None or a replacement``, run by every ``register_parameter``."""
    return add_hook(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, args) -> None or replacement args``, before every module's forward."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False) -> RemovableHandle:
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with ``with_kwargs``)
    after every module's forward; it may return a replacement output."""
    handle = add_hook(_global_forward_hooks, hook,
                      extra_dict=[_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs])
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, grad_output) -> None or a replacement grad_output``, for every module."""
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """``hook(module, grad_input, grad_output) -> None or a replacement grad_input``, for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook) -> RemovableHandle:
    """Deprecated (PyTorch's too): ``hook(module, grad_input, grad_output)`` on the gradients of the
    last node of every module's output (see ``ModuleHooks.register_backward_hook``)."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                           "Please use only one of them.")
    _global_is_full_backward_hook = False
    return add_hook(_global_backward_hooks, hook)


def registered(hooks: dict, module, name, value):
    """``value`` as the global registration ``hooks`` leave it (each may return a replacement)."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


class _WrappedHook:
    """A load-state-dict pre-hook that gets its module first (held weakly, as PyTorch does)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.module = None if module is None else weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.module is None:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)


_HOOK_TABLES = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                "_load_state_dict_post_hooks")


class ModuleHooks:
    """The hook tables of a module, their registration, and ``__call__``, which runs them."""

    def _init_hooks(self):
        for name in _HOOK_TABLES:
            object.__setattr__(self, name, OrderedDict())
        object.__setattr__(self, "_is_full_backward_hook", None)

    # ------------------------------------------------------------------ forward
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False) -> RemovableHandle:
        """``hook(module, args)`` (``hook(module, args, kwargs)`` with ``with_kwargs``) runs before
        ``forward``; it may return replacement args (a non-tuple is wrapped), or with ``with_kwargs``
        a ``(args, kwargs)`` pair."""
        handle = add_hook(self._forward_pre_hooks, hook, extra_dict=self._forward_pre_hooks_with_kwargs,
                          prepend=prepend)
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after ``forward``; it may return a replacement output. With
        ``always_call`` it also runs when forward raised."""
        handle = add_hook(self._forward_hooks, hook, prepend=prepend,
                          extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    # ------------------------------------------------------------------ backward
    def register_full_backward_pre_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(module, grad_output) -> None or a replacement grad_output``, when the gradients of
        the module's outputs are computed."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(self, hook, prepend=False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None or a replacement grad_input``, when the
        gradients of the module's (positional) inputs are computed."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated (PyTorch's too): ``hook(module, grad_input, grad_output) -> None or a
        replacement grad_input``, a post hook on the ``grad_fn`` of the module's output (its first
        tensor): ``grad_input`` are the gradients of that one node's inputs, not the module's."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    # ------------------------------------------------------------------ state dicts
    def _register_state_dict_hook(self, hook):
        """PyTorch's private post-hook: ``hook(module, state_dict, prefix, local_metadata)`` may
        return a replacement state dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was previously "
                               "registered via register_state_dict_post_hook")
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict``; edits in place."""
        hook._from_public_api = True
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before ``state_dict`` saves this module."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return add_hook(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads its part of a state dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after this module and its children loaded; it may
        edit ``incompatible_keys`` in place and must return None."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _run_state_dict_hooks(self, destination, prefix):
        local_metadata = dict(version=getattr(self, "_version", 1))
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _run_load_state_dict_post_hooks(self, incompatible_keys):
        for hook in self._load_state_dict_post_hooks.values():
            if hook(self, incompatible_keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected "
                                     "to return new values, if incompatible_keys need to be modified, it should "
                                     "be done inplace.")

    # ------------------------------------------------------------------ the call
    def _backward_hook_lists(self):
        """(full backward hooks, non-full ones, backward pre-hooks) for a call, global ones first."""
        full, non_full = [], []
        (full if _global_is_full_backward_hook else non_full).extend(_global_backward_hooks.values())
        (full if self._is_full_backward_hook else non_full).extend(self._backward_hooks.values())
        pre = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())
        return full, non_full, pre

    def _has_call_hooks(self) -> bool:
        """Whether a call of this module runs any hook (its own or a global one)."""
        return bool(self._backward_hooks or self._backward_pre_hooks or self._forward_hooks or self._forward_pre_hooks
                    or _global_backward_pre_hooks or _global_backward_hooks or _global_forward_hooks
                    or _global_forward_pre_hooks)

    def __call__(self, *args, **kwargs):
        if not self._has_call_hooks():
            return self.forward(*args, **kwargs)
        result = None
        called_always = set()
        try:
            for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    new = hook(self, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {new}.")
                        args, kwargs = new
                else:
                    new = hook(self, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
            full, non_full, pre = self._backward_hook_lists()
            bw_hook = None
            if full or pre:
                bw_hook = BackwardHook(self, full, pre)
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                    called_always.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            if non_full:
                self._register_non_full(non_full, args, result)
            return result
        except Exception:
            self._run_always_called(args, kwargs, result, called_always)
            raise

    def _register_non_full(self, hooks, args, result):
        """The non-full backward hooks go on the grad_fn of the output's first tensor (PyTorch's walk:
        first values of dicts, first items of sequences), with a warning where that node's gradients
        are not the module's."""
        var = result
        while not isinstance(var, Tensor):
            var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
        grad_fn = var.grad_fn
        if grad_fn is None:
            return
        for hook in hooks:
            grad_fn.register_hook(_WrappedHook(hook, self))
        problem = _non_full_problem(args, result, grad_fn)
        if problem is not None:
            warnings.warn(problem, FutureWarning, stacklevel=3)

    def _run_always_called(self, args, kwargs, result, called):
        """The ``always_call`` forward hooks that did not run before forward (or a hook) raised; what
        they raise is a warning, so the first error propagates (PyTorch's rules, including that
        global ones get no kwargs)."""
        pending = [(hook, False, "global module") for hook_id, hook in _global_forward_hooks.items()
                   if hook_id in _global_forward_hooks_always_called and hook_id not in called]
        pending += [(hook, hook_id in self._forward_hooks_with_kwargs, "module")
                    for hook_id, hook in self._forward_hooks.items()
                    if hook_id in self._forward_hooks_always_called and hook_id not in called]
        for hook, with_kwargs, who in pending:
            try:
                new = hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
                result = result if new is None else new
            except Exception as e:
                warnings.warn(f"{who} forward hook with ``always_call=True`` raised an exception that was silenced "
                              f"as another error was raised in forward: {e}", stacklevel=3)


def _non_full_problem(inputs, result, grad_fn):
    """What a non-full backward hook on ``grad_fn`` will miss of the module's gradients (PyTorch's
    deprecation warnings, in its order), or None."""
    if not isinstance(result, Tensor):
        if not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
            return ("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                    "Tensors is deprecated and will be removed in future versions. This hook will be missing some of "
                    "the grad_output. Please use register_full_backward_hook to get the documented behavior.")
    else:
        result = (result,)
    if not isinstance(inputs, Tensor):
        if not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
            return ("Using non-full backward hooks on a Module that does not take as input a single Tensor or a tuple "
                    "of Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                    "of the grad_input. Please use register_full_backward_hook to get the documented behavior.")
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_grad_fn or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        return ("Using a non-full backward hook when outputs are nested in python data structure is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_output.")
    if len(out_grad_fn) > 1:
        return ("Using a non-full backward hook when outputs are generated by different autograd Nodes is deprecated "
                "and will be removed in future versions. This hook will be missing some grad_output. Please use "
                "register_full_backward_hook to get the documented behavior.")
    if {i.grad_fn for i in inputs if i.grad_fn is not None} != {n for n, _ in grad_fn.next_functions}:
        return ("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_input. Please use "
                "register_full_backward_hook to get the documented behavior.")
    return None
