"""Hooks: registering tensor hooks (``register_hook``: run on the gradient, may replace it;
``register_post_accumulate_grad_hook``: run after ``.grad`` is updated) and running every kind
the engine calls (tensor hooks, graph nodes' pre- and post-hooks, post-accumulate hooks)."""
from __future__ import annotations

from collections import OrderedDict

from ..tensor import Tensor
from .function import accumulator_of
from .removable_handle import RemovableHandle, add_hook

__all__ = ["RemovableHandle", "add_hook", "register_tensor_hook", "register_post_accumulate_hook",
           "run_tensor_hooks", "run_pre_hooks", "run_post_hooks", "run_post_accumulate_hooks"]


def register_tensor_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        node, nr = t._grad_fn, t._output_nr
    else:  # a leaf: its hooks run in its AccumulateGrad node, before the sum into .grad
        node, nr = accumulator_of(t), 0
        t._leaf_hook_node = node  # keep the node (and so the hooks) alive with the tensor
    return add_hook(node._tensor_hooks.setdefault(nr, OrderedDict()), hook)


def register_post_accumulate_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if t._post_acc_hooks is None:
        t._post_acc_hooks = OrderedDict()
    return add_hook(t._post_acc_hooks, hook)


# ------------------------------------------------------------------ running them (the engine's calls)

def run_tensor_hooks(node, nr, grad):
    hooks = node._tensor_hooks.get(nr)
    if not hooks:
        return grad
    for hook in list(hooks.values()):  # (a copy: a hook may remove itself)
        r = hook(grad)
        if r is not None:
            if tuple(r.shape) != tuple(grad.shape):
                raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has changed the size of value")
            grad = r
    return grad


def _hook_result(hook, before, after):
    """A node hook's replacement for the gradients ``before`` (PyTorch's checks: a tuple of as many,
    each None or a tensor of the same type and size; a None gradient stays None)."""
    name = getattr(hook, "__name__", "<unknown>")
    if not isinstance(after, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(after).__name__}'")
    if len(after) != len(before):
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(after)}, but "
                           f"expected {len(before)})")
    for old, new in zip(before, after):
        if new is None:
            continue
        if old is None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
        if not isinstance(new, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
        if new.dtype is not old.dtype or new.device != old.device:
            raise RuntimeError(f"hook '{name}' has changed the type of value (was {_type_name(old)} got "
                               f"{_type_name(new)})")
        if tuple(new.shape) != tuple(old.shape):
            raise RuntimeError(f"hook '{name}' has changed the size of value")
    return list(after)


def _type_name(t):
    return f"tgrad.{'cuda.' if t.device.type == 'cuda' else ''}{t.dtype.legacy}"


def run_pre_hooks(node, grads):
    """``Node.register_prehook`` hooks on the gradients of the node's outputs."""
    for hook in list(node._pre_hooks.values()):
        r = hook(tuple(grads))
        if r is not None:
            grads = _hook_result(hook, grads, r)
    return grads


def run_post_hooks(node, outs, grads):
    """``Node.register_hook`` hooks on the gradients the node computed for its inputs (those of its
    ``next_functions``: a built-in's non-tensor arguments have no entry) and of its outputs."""
    pos = getattr(node, "_edge_pos", None)
    pos = range(len(outs)) if pos is None else pos
    shown = [outs[i] for i in pos]
    for hook in list(node._post_hooks.values()):
        r = hook(tuple(shown), tuple(grads))
        if r is not None:
            shown = _hook_result(hook, shown, r)
    outs = list(outs)
    for i, g in zip(pos, shown):
        outs[i] = g
    return outs


def run_post_accumulate_hooks(var):
    hooks = getattr(var, "_post_acc_hooks", None)
    if not hooks:
        return
    for hook in list(hooks.values()):
        if hook(var) is not None:
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
