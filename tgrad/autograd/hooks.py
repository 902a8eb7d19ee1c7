"""Tensor hooks: ``register_hook`` (run on the gradient, may replace it) and
``register_post_accumulate_grad_hook`` (run after ``.grad`` is updated)."""
from __future__ import annotations

import weakref
from collections import OrderedDict

from .function import accumulator_of


class RemovableHandle:
    """Returned by every ``register_*hook`` (PyTorch's ``torch.utils.hooks.RemovableHandle``): the
    hooks live in an ordered dict keyed by the handle's ``id``; ``remove()`` deletes that key from
    it and from ``extra_dict`` (the dicts of flags a hook was registered with, e.g. ``with_kwargs``).
    The handle holds the dicts weakly, so it does not keep a dead module's hooks alive."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict or ())

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (state[2] if len(state) > 2 and state[2] else ()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks: dict, hook, *, extra_dict=None, prepend=False) -> RemovableHandle:
    """Put ``hook`` into ``hooks`` under a new handle (first with ``prepend``) and return the handle."""
    handle = RemovableHandle(hooks, extra_dict=extra_dict)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


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
