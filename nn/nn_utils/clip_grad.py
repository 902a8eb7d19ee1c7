"""``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm`` and ``clip_grads_with_norm_``, as
``torch.nn.utils``'s. The norm is one launch over every gradient (per dtype) and the scaling one
more, through pointer tables (``tgrad.kernels.optim.clip_grad``); the total norm stays on the device
unless ``error_if_nonfinite`` asks to check it. ``foreach`` is accepted and ignored: every path
here is already fused."""
from __future__ import annotations

import math
import types
import warnings

import torch
import triton.language as tl

import tgrad
from tgrad.kernels.optim.clip_grad import NORM_KINDS, ROW, clamp_rows, clip_by_total_norm, grad_norm_partials
from tgrad.kernels.optim.tables import chunk_sizes, upload
from tgrad.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

_TL = {torch.float16: tl.float16, torch.float32: tl.float32, torch.float64: tl.float64, torch.bfloat16: tl.bfloat16}


def _promoted(dtypes):
    """The dtype PyTorch's ``stack`` of the per-tensor norms takes (float16 with bfloat16: float32)."""
    for wide in (torch.float64, torch.float32):
        if wide in dtypes:
            return wide
    return dtypes.pop() if len(dtypes) == 1 else torch.float32


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _kind(norm_type: float):
    if norm_type == math.inf:
        return NORM_KINDS["inf"]
    if norm_type == -math.inf:
        return NORM_KINDS["-inf"]
    return NORM_KINDS.get(repr(int(norm_type)) if norm_type in (0.0, 1.0, 2.0) else "", NORM_KINDS["p"])


class _Tables:
    """Pointer tables over ``tensors`` (torch), one per (device, dtype), and contiguous staging
    copies of non-contiguous ones (written back by ``write_back``)."""

    def __init__(self, tensors, whole_rows=False):
        devices = {t.device for t in tensors}
        if len(devices) > 1:
            raise RuntimeError(f"tgrad clips gradients on one device at a time, got {sorted(map(str, devices))}")
        buckets: dict = {}
        for t in tensors:
            if not t.dtype.is_floating_point:
                raise RuntimeError(f"clipping needs floating-point gradients, got {t.dtype}")
            if t.dtype == torch.bfloat16 and t.device.type == "cpu":
                raise RuntimeError("bfloat16 gradients cannot be clipped on the CPU: Triton's interpreter computes "
                                   "bfloat16 wrongly")
            buckets.setdefault(t.dtype, []).append(t)
        self.buckets, self.staged, self.n_partials = [], [], 0
        for dtype, group in buckets.items():
            device = group[0].device
            longest = max(t.numel() for t in group)
            chunk, block = chunk_sizes(device, longest)
            if whole_rows:  # one row per tensor (p = 0 counts per tensor)
                chunk = max(longest, 1)
            rows, keep = [], []
            for t in group:
                if not t.is_contiguous():
                    c = t.contiguous()
                    self.staged.append((t, c))
                    t = c
                keep.append(t)
                n, item = t.numel(), t.element_size()
                for start in range(0, n, chunk):
                    rows.extend([t.data_ptr() + start * item, min(chunk, n - start), self.n_partials])
                    self.n_partials += 1
            if rows:
                self.buckets.append((upload(rows, device)[0], keep, block))

    def write_back(self):
        for dst, src in self.staged:
            dst.copy_(src)


def _norm_and_clip(grads, max_norm, norm_type, error_if_nonfinite, scale):
    norm_type = float(norm_type)
    if len(grads) == 0:
        return tgrad.tensor(0.0)
    data = [g._data for g in grads]
    out_dtype = _promoted({d.dtype for d in data})
    device = data[0].device
    kind = _kind(norm_type)
    if (norm_type < 0 or norm_type == math.inf) and any(d.numel() == 0 for d in data):
        # as PyTorch (its foreach kernel takes inf, vector_norm the negative orders)
        what = "_foreach_norm cannot compute the infinity" if norm_type == math.inf else \
            f"linalg.vector_norm cannot compute the {norm_type:g}"
        raise RuntimeError(f"{what} norm on an empty tensor because the operation does not have an identity")
    tables = _Tables(data, whole_rows=kind == NORM_KINDS["0"])
    acc_torch = torch.float64 if any(d.dtype == torch.float64 for d in data) else torch.float32
    acc = _TL[acc_torch]
    partials = torch.full((max(tables.n_partials, 1),), math.inf if kind == NORM_KINDS["-inf"] else 0.0,
                          dtype=acc_torch, device=device)
    total = torch.empty((), dtype=out_dtype, device=device)
    for table, keep, block in tables.buckets:
        grad_norm_partials(table, keep[0], partials, table.numel() // ROW.value, norm_type, kind, acc, block)
    if not tables.buckets:  # only empty gradients: the norm of nothing
        total.fill_(math.inf if kind == NORM_KINDS["-inf"] else 0.0)
    for table, keep, block in tables.buckets:
        n_rows = table.numel() // ROW.value if scale else 0
        clip_by_total_norm(table, keep[0], partials, total, n_rows, norm_type, float(max_norm), kind,
                           error_if_nonfinite, acc, _TL[out_dtype], block, keep=(*keep, partials))
    if scale:
        tables.write_back()
        for g in grads:  # written in place
            g._version.value += 1
    total_norm = Tensor._wrap(total)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@tgrad.no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` in place so that their joint ``norm_type``-norm is at
    most ``max_norm``; returns the norm before clipping (a 0-d tensor)."""
    if not isinstance(parameters, Tensor):
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    return _norm_and_clip(grads, max_norm, norm_type, error_if_nonfinite, scale=True)


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@tgrad.no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all of ``tensors`` together (the norm of their norms)."""
    return _norm_and_clip(_as_list(tensors), 0.0, norm_type, error_if_nonfinite, scale=False)


@tgrad.no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.device))


@tgrad.no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` to [-clip_value, clip_value] in place (one launch)."""
    clip_value = float(clip_value)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    tables = _Tables([g._data for g in grads])
    for table, keep, block in tables.buckets:
        compute = tl.float64 if keep[0].dtype == torch.float64 else tl.float32
        clamp_rows(table, keep[0], table.numel() // ROW.value, clip_value, compute, block, keep=keep)
    tables.write_back()
    for g in grads:
        g._version.value += 1
