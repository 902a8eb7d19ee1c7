"""``RemovableHandle``, what every ``register_*hook`` returns, and ``add_hook``, which files a hook
under a new one (tensor, graph-node and module hooks alike)."""
from __future__ import annotations

import weakref
from collections import OrderedDict


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
