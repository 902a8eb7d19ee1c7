"""``AtenRecorder``: a ``TorchDispatchMode`` that counts every aten op torch executes while it is
active; ``computed()`` is what falls outside the storage allow-list (allocate, view, copy, fill,
metadata), which is to say what torch computed. The audit tests (tests/kernels/test_no_torch_compute.py)
and the ones that audit a family's forward and backward use it."""
from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode

# aten ops (overload packet names) that only allocate, view, copy, fill or read metadata
STORAGE_OPS = {
    # allocation
    "empty", "empty_strided", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "scalar_tensor", "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full",
    "lift", "lift_fresh", "lift_fresh_copy", "resize_",
    # views
    "view", "_unsafe_view", "_reshape_alias", "as_strided", "permute", "transpose", "t", "expand", "squeeze",
    "unsqueeze", "slice", "select", "alias", "detach", "narrow", "unfold", "unbind", "split", "split_with_sizes",
    "diagonal", "view_as_real", "view_as_complex",
    # copies and fills (the Triton interpreter's own storage copies are copy_ / _to_copy too)
    "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "clone", "fill_", "zero_", "set_",
    "_local_scalar_dense",
    # metadata
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "size", "stride", "dim", "is_same_size",
    "_has_compatible_shallow_copy_type", "is_pinned",
}


class AtenRecorder(TorchDispatchMode):
    """Counts every aten op that reaches torch's dispatcher while the mode is active."""

    def __init__(self):
        super().__init__()
        self.ops = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))

    def computed(self):
        return {op: n for op, n in self.ops.items() if op not in STORAGE_OPS}
