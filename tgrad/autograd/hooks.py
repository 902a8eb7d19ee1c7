"""Tensor hooks: ``register_hook`` (run on the gradient, may replace it) and
``register_post_accumulate_grad_hook`` (run after ``.grad`` is updated)."""
from __future__ import annotations

import itertools

from .function import accumulator_of

_ids = itertools.count()


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` turns the hook off."""

    def __init__(self, hooks: list, hook):
        self._hooks, self._hook, self.id = hooks, hook, next(_ids)

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_tensor_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        node, nr = t._grad_fn, t._output_nr
    else:  # a leaf: its hooks run in its AccumulateGrad node, before the sum into .grad
        node, nr = accumulator_of(t), 0
        t._leaf_hook_node = node  # keep the node (and so the hooks) alive with the tensor
    hooks = node._tensor_hooks.setdefault(nr, [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def register_post_accumulate_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if t._post_acc_hooks is None:
        t._post_acc_hooks = []
    t._post_acc_hooks.append(hook)
    return RemovableHandle(t._post_acc_hooks, hook)
