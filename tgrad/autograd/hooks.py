"""Tensor hooks: ``register_hook`` (run on the gradient, may replace it) and
``register_post_accumulate_grad_hook`` (run after ``.grad`` is updated)."""
from __future__ import annotations

from collections import OrderedDict

from .function import accumulator_of
from .removable_handle import RemovableHandle, add_hook

__all__ = ["RemovableHandle", "add_hook", "register_tensor_hook", "register_post_accumulate_hook"]


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
