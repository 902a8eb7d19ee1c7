"""The device kind a launch's configuration is chosen for.

Launch decisions (block sizes, tiles, warps, split counts, which path) differ by device kind: the
interpreter pays per program and per tl op whatever a block's size, a GPU per byte and per
register. Every such decision asks ``target(device)``: the tensor's device kind, except that
inside ``as_cuda()`` CPU tensors are configured as CUDA ones. The CPU then interprets exactly the
launches a GPU run would make (what a kernel computes does not depend on its configuration, so the
results agree up to the order of floating-point sums), and an observer of ``launch`` sees the GPU's
configurations: ``tgrad.kernels.runtime.cuda_compile`` compiles them for sm_90 and sm_80 as a GPU launch
would. No launch argument is chosen for the interpreter's sake by the tensor's real device: the
interpreter widens a dot's 16-bit operands itself (``runtime/interpreter.py``), so what is compiled
is what a GPU compiles. What stays with the real device is not a decision: the ops' refusal of bf16
on the CPU (the interpreter's bf16 arithmetic), uploads, streams and graph captures.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch

__all__ = ["target", "sm_count", "as_cuda", "AS_CUDA_SMS"]

AS_CUDA_SMS = 132  # an H100/H200's multiprocessors: what split counts are sized for inside as_cuda()
_as_cuda = 0
_sm_counts: dict = {}


def target(device: torch.device) -> str:
    """'cuda' or 'cpu': the device kind ``device``'s launches are configured for."""
    kind = device.type
    return "cuda" if kind == "cpu" and _as_cuda else kind


def sm_count(device: torch.device) -> int:
    """Multiprocessors of ``device`` (a CUDA one, or a CPU one configured as CUDA)."""
    if device.type != "cuda":
        return AS_CUDA_SMS
    index = device.index if device.index is not None else torch.cuda.current_device()
    count = _sm_counts.get(index)
    if count is None:
        count = _sm_counts[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return count


@contextmanager
def as_cuda():
    """Configure CPU launches as CUDA ones while inside (nests; process-wide)."""
    global _as_cuda
    _as_cuda += 1
    try:
        yield
    finally:
        _as_cuda -= 1
