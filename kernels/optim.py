"""Fused optimizer steps: one launch updates every parameter of a group.

The parameters of a group are separately allocated tensors, so the kernel reaches them through a
*pointer table*: an int64 tensor with one row per chunk of at most ``CHUNK`` elements of one
parameter,

    row = [param_ptr, grad_ptr, state0_ptr, state1_ptr, state2_ptr, n, c0_bits, c1_bits, first]

where the pointers already point at the chunk's first element (``data_ptr + start * itemsize``),
``n`` is the chunk's length, ``c0``/``c1`` are per-parameter scalars that depend on the parameter's
own step count (Adam's ``lr / (1 - beta1^t)`` and ``sqrt(1 - beta2^t)``, Adagrad's decayed lr), as
fp64 bits, and ``first`` marks SGD's first momentum step. Compiled, program ``r`` takes row ``r``;
interpreted, one program walks every row (the interpreter pays per program). A row's integers are
cast back to pointers (``.to(tl.pointer_type(...))``, which both the compiler and the interpreter
accept) and the whole update is applied -- weight decay, moments, bias correction, the parameter write -- in
registers: each element is read once and written once per step.

Group-wide hyperparameters arrive as fp64 bits (``h0..h5``) with the coefficients PyTorch derives
from them (``1 - beta1``, ``1 - lr * weight_decay`` ...) computed on the host in fp64, then rounded
to the compute dtype like PyTorch's scalar arguments. The math runs in fp32 for fp16/fp32
parameters and in fp64 for fp64 ones; state is stored in the parameter's dtype. On CUDA square root
and division are the IEEE-rounded ``sqrt_rn``/``div_rn``, so compiled results follow the same
formulas as the interpreter's numpy ones.

Each algorithm below lists the update it makes, with ``g`` the gradient (negated when
``MAXIMIZE``) and ``p`` the parameter; they are PyTorch's single-tensor (``foreach=False``) updates.

Capturable steps (``steps=`` given: Adam/AdamW/RMSprop with ``capturable=True``) read no host value
that changes between steps, so a captured graph replays them correctly. A row is then

    row = [param_ptr, grad_ptr, state0_ptr, state1_ptr, state2_ptr, n, step_ptr, 0, owner]

with ``step_ptr`` the parameter's 0-d float32 step count on its device. The kernel computes
t = step + 1 and Adam's bias corrections from it in fp64 (the host path's formulas, with
beta^t = exp(t log beta)); a second tiny launch (``_advance_steps_kernel``) then adds 1 to every
step, through the rows flagged ``owner`` (one per parameter) -- not in the first launch, whose
programs would race: the rows of one parameter run in parallel and all read its step. Such a table
is the same every step, so it is uploaded once and kept (:class:`TableCache`): a repeated step
makes no host->device copy (in a CUDA graph, one would be replayed every time).
"""
from __future__ import annotations

from collections import OrderedDict

import torch
import triton
import triton.language as tl

from .helpers.dtypes import compute_dtype
from .runtime.launch import launch
from .helpers.layout import next_pow2
from .helpers.scalars import as_f64, f64_bits
from .runtime.target import target

__all__ = ["ALGORITHMS", "TableCache", "fused_step"]

ALGORITHMS = {"sgd": 0, "adam": 1, "rmsprop": 2, "adagrad": 3}
ROW = tl.constexpr(9)  # int64 entries per table row (layout in the module docstring)


@triton.jit
def _ptr(row_base, col: tl.constexpr, like):
    return tl.load(row_base + col).to(tl.pointer_type(like.dtype.element_ty))


@triton.jit
def _sqrt(x, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return tl.sqrt(x)  # fp64 sqrt is correctly rounded already
    else:
        return tl.sqrt_rn(x)


@triton.jit
def _div(a, b, COMPUTE: tl.constexpr):
    if COMPUTE == tl.float64:
        return a / b
    else:
        return tl.div_rn(a, b)


@triton.jit
def _beta_power(beta, log_beta, t):
    """beta^t for t >= 1 in fp64, as exp(t log beta); 0^t = 0 (log 0 is not used)."""
    return tl.where(beta > 0.0, tl.exp(t * log_beta), 0.0)


@triton.jit
def _optim_kernel(table, like, rows_per_program, h0, h1, h2, h3, h4, h5, h6, h7,
                  ALGO: tl.constexpr, MAXIMIZE: tl.constexpr, WEIGHT_DECAY: tl.constexpr,
                  MOMENTUM: tl.constexpr, NESTEROV: tl.constexpr, AMSGRAD: tl.constexpr,
                  DECOUPLED: tl.constexpr, CENTERED: tl.constexpr, CAPTURABLE: tl.constexpr,
                  COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    # The interpreter pays per tl op and per program: on the CPU one program walks every row
    # (rows_per_program = all of them), the group constants are decoded once, and each row decodes
    # only the table entries its algorithm reads. Compiled, a program owns one row.
    if ALGO == 0:
        k0 = as_f64(h0).to(COMPUTE)
        if WEIGHT_DECAY:
            k1 = as_f64(h1).to(COMPUTE)
        if MOMENTUM:
            k2 = as_f64(h2).to(COMPUTE)
            k3 = as_f64(h3).to(COMPUTE)
    elif ALGO == 1 or ALGO == 2:
        k0 = as_f64(h0).to(COMPUTE)
        k1 = as_f64(h1).to(COMPUTE)
        k2 = as_f64(h2).to(COMPUTE)
        k3 = as_f64(h3).to(COMPUTE)
        if WEIGHT_DECAY:
            k4 = as_f64(h4).to(COMPUTE)
            k5 = as_f64(h5).to(COMPUTE)
        elif ALGO == 2 and MOMENTUM:
            k5 = as_f64(h5).to(COMPUTE)
        if ALGO == 1 and CAPTURABLE:
            # the bias corrections come from the device step count: fp64 lr, beta1 (h7), beta2 (h1)
            lr = as_f64(h6)
            beta1 = as_f64(h7)
            beta2 = as_f64(h1)
            log_beta1 = tl.log(tl.where(beta1 > 0.0, beta1, 1.0))
            log_beta2 = tl.log(tl.where(beta2 > 0.0, beta2, 1.0))
    else:
        if WEIGHT_DECAY:
            k0 = as_f64(h0).to(COMPUTE)
        k1 = as_f64(h1).to(COMPUTE)
    first_row = tl.program_id(0).to(tl.int64) * rows_per_program
    for row in range(first_row, first_row + rows_per_program):
        row_base = table + row * ROW
        p_ptr = _ptr(row_base, 0, like)
        g_ptr = _ptr(row_base, 1, like)
        n = tl.load(row_base + 5)
        if ALGO == 0:
            if MOMENTUM:
                s0_ptr = _ptr(row_base, 2, like)
                first = tl.load(row_base + 8) != 0
        elif ALGO == 1:
            s0_ptr = _ptr(row_base, 2, like)
            s1_ptr = _ptr(row_base, 3, like)
            if AMSGRAD:
                s2_ptr = _ptr(row_base, 4, like)
            if CAPTURABLE:
                # the host path's c0 = lr / (1 - beta1^t), c1 = sqrt(1 - beta2^t), with t = step + 1
                t = tl.load(tl.load(row_base + 6).to(tl.pointer_type(tl.float32))).to(tl.float64) + 1.0
                c0 = (lr / (1.0 - _beta_power(beta1, log_beta1, t))).to(COMPUTE)
                c1 = tl.sqrt(1.0 - _beta_power(beta2, log_beta2, t)).to(COMPUTE)
            else:
                c0 = as_f64(tl.load(row_base + 6)).to(COMPUTE)
                c1 = as_f64(tl.load(row_base + 7)).to(COMPUTE)
        elif ALGO == 2:
            s0_ptr = _ptr(row_base, 2, like)
            if MOMENTUM:
                s1_ptr = _ptr(row_base, 3, like)
            if CENTERED:
                s2_ptr = _ptr(row_base, 4, like)
        else:
            s0_ptr = _ptr(row_base, 2, like)
            c0 = as_f64(tl.load(row_base + 6)).to(COMPUTE)
        for start in range(0, n, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
            if MAXIMIZE:
                g = -g
            if ALGO == 0:
                # SGD. k0 = lr, k1 = weight_decay, k2 = momentum, k3 = 1 - dampening.
                #   g += wd p;  buf = g on the first step, else momentum buf + (1 - dampening) g;
                #   g = g + momentum buf (nesterov) or buf;  p -= lr g
                if WEIGHT_DECAY:
                    g = g + k1 * p
                if MOMENTUM:
                    buf = tl.load(s0_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                    buf = tl.where(first, g, buf * k2 + k3 * g)
                    tl.store(s0_ptr + offs, buf.to(s0_ptr.dtype.element_ty), mask=mask)
                    if NESTEROV:
                        g = g + k2 * buf
                    else:
                        g = buf
                p = p - k0 * g
            elif ALGO == 1:
                # Adam/AdamW. k0 = 1 - beta1, k1 = beta2, k2 = 1 - beta2, k3 = eps, k4 = weight_decay,
                # k5 = 1 - lr wd (decoupled); per parameter c0 = lr / (1 - beta1^t), c1 = sqrt(1 - beta2^t)
                # (from the table, or computed above from the device step when CAPTURABLE).
                #   p *= 1 - lr wd (AdamW) or g += wd p (Adam);  m += (1 - beta1)(g - m);
                #   v = beta2 v + (1 - beta2) g^2;  vmax = max(vmax, v) (amsgrad);
                #   p -= c0 m / (sqrt(v or vmax) / c1 + eps)
                if WEIGHT_DECAY:
                    if DECOUPLED:
                        p = p * k5
                    else:
                        g = g + k4 * p
                m = tl.load(s0_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                v = tl.load(s1_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                m = m + k0 * (g - m)
                v = v * k1 + k2 * g * g
                tl.store(s0_ptr + offs, m.to(s0_ptr.dtype.element_ty), mask=mask)
                tl.store(s1_ptr + offs, v.to(s1_ptr.dtype.element_ty), mask=mask)
                if AMSGRAD:
                    vmax = tl.load(s2_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                    v = tl.maximum(vmax, v)
                    tl.store(s2_ptr + offs, v.to(s2_ptr.dtype.element_ty), mask=mask)
                denom = _div(_sqrt(v, COMPUTE), c1, COMPUTE) + k3
                p = p - c0 * _div(m, denom, COMPUTE)
            elif ALGO == 2:
                # RMSprop. k0 = lr, k1 = alpha, k2 = 1 - alpha, k3 = eps, k4 = weight_decay, k5 = momentum.
                #   g += wd p;  sq = alpha sq + (1 - alpha) g^2;
                #   avg = sqrt(sq - ga^2) with ga += (1 - alpha)(g - ga) (centered), else sqrt(sq);
                #   buf = momentum buf + g / (avg + eps);  p -= lr buf   (or p -= lr g / (avg + eps))
                if WEIGHT_DECAY:
                    g = g + k4 * p
                sq = tl.load(s0_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                sq = sq * k1 + k2 * g * g
                tl.store(s0_ptr + offs, sq.to(s0_ptr.dtype.element_ty), mask=mask)
                if CENTERED:
                    ga = tl.load(s2_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                    ga = ga + k2 * (g - ga)
                    tl.store(s2_ptr + offs, ga.to(s2_ptr.dtype.element_ty), mask=mask)
                    avg = _sqrt(sq - ga * ga, COMPUTE) + k3
                else:
                    avg = _sqrt(sq, COMPUTE) + k3
                if MOMENTUM:
                    buf = tl.load(s1_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                    buf = buf * k5 + _div(g, avg, COMPUTE)
                    tl.store(s1_ptr + offs, buf.to(s1_ptr.dtype.element_ty), mask=mask)
                    p = p - k0 * buf
                else:
                    p = p - k0 * _div(g, avg, COMPUTE)
            else:
                # Adagrad. k0 = weight_decay, k1 = eps; per parameter c0 = lr / (1 + (t - 1) lr_decay).
                #   g += wd p;  sum += g^2;  p -= c0 g / (sqrt(sum) + eps)
                if WEIGHT_DECAY:
                    g = g + k0 * p
                acc = tl.load(s0_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
                acc = acc + g * g
                tl.store(s0_ptr + offs, acc.to(s0_ptr.dtype.element_ty), mask=mask)
                p = p - c0 * _div(g, _sqrt(acc, COMPUTE) + k1, COMPUTE)
            tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


def _chunk(device: torch.device, longest: int) -> tuple[int, int]:
    """(elements per table row, elements per loop iteration) for a launch whose largest parameter
    has ``longest`` elements. The interpreter pays per program and per op, so a row is one block
    of up to 2^16 elements, no wider than needed; compiled, rows of 16K elements walked in 1K
    blocks keep the table short and every SM busy."""
    if target(device) == "cpu":
        block = min(next_pow2(max(longest, 16)), 1 << 16)
        return block, block
    return 1 << 14, 1 << 10


@triton.jit
def _advance_steps_kernel(table, n_rows, BLOCK: tl.constexpr):
    """step += 1 through the step pointer (column 6) of every row flagged owner (column 8): one
    row per parameter, so no two lanes write one step."""
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        in_table = rows < n_rows
        owner = tl.load(table + rows * ROW + 8, mask=in_table, other=0) != 0
        step_ptr = tl.load(table + rows * ROW + 6, mask=in_table, other=0).to(tl.pointer_type(tl.float32))
        step = tl.load(step_ptr, mask=owner, other=0.0)
        tl.store(step_ptr, step + 1.0, mask=owner)


def _upload(rows: list, device: torch.device, capturing: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(device table, the host tensor it was copied from)."""
    host = torch.tensor(rows, dtype=torch.int64)
    if device.type == "cuda":
        if capturing:
            # Captured, a non-blocking copy becomes a graph node that re-reads ``host`` at every
            # replay (the caller keeps it alive and unchanged). PyTorch refuses a captured copy from
            # pageable memory (seen with 2.11 on an H200) and pins inside a capture since its host
            # allocator learned graph pools; older releases refuse the pinning instead (it queries
            # the pinned cache's events), and there the pageable copy is what is left.
            try:
                host = host.pin_memory()
            except RuntimeError:
                pass
            return host.to(device, non_blocking=True), host
        # Eagerly, a pageable upload makes PyTorch synchronise the stream (the host would wait for
        # the whole queued step). From pinned memory it is asynchronous; PyTorch's pinned-memory
        # cache holds the buffer until the copy has run.
        host = host.pin_memory()
        return host.to(device, non_blocking=True), host
    return host.to(device), host


def _rows(chunk: int, item: int, capturable: bool, specs) -> list:
    """The flat table (module docstring): per parameter ``(ptrs, n, c0, c1, first)``, one row per
    chunk of ``chunk`` elements, pointers advanced to the chunk (``item`` bytes an element). A
    capturable spec holds ``(ptrs, n, step_ptr, 0, None)``; its rows mark the parameter's first
    chunk, and an empty parameter still gets a row, so its step advances as PyTorch's does."""
    rows = []
    for ptrs, n, c0, c1, first in specs:
        for start in range(0, max(n, 1) if capturable else n, chunk):
            off = start * item
            rows.extend([*(ptr + off if ptr else 0 for ptr in ptrs), min(chunk, n - start), c0, c1,
                         int(start == 0) if capturable else int(first)])
    return rows


class TableCache:
    """An optimizer's device pointer tables, looked up by their contents, so a step whose tensors
    and per-row values are those of an earlier step launches from the table already on the device
    (no host->device copy). Non-contiguous tensors are updated through contiguous staging buffers
    kept here too, so their addresses -- and the table -- stay the same from step to step.

    A table used while a graph is being captured is kept for the cache's (the optimizer's) life:
    the graph replays launches that read it. Others are dropped least recently used first. A table
    first needed during a capture (gradients allocated inside it have new addresses) is uploaded
    then: on CUDA the capture records that copy from host memory, so its host buffer is kept
    unchanged too, and each replay repeats the small copy (a table uploaded before the capture --
    a warm-up step with the same tensors -- costs replays nothing).
    ``uploads`` counts the tables built and copied to a device (a repeated step adds none)."""

    LIMIT = 16  # unpinned tables (and staging buffers) kept

    def __init__(self):
        self._tables: OrderedDict = OrderedDict()  # (device, row spec) -> (table, host copy, staging buffers)
        self._pinned: dict = {}  # the same, for tables a capture has used
        self._staging: OrderedDict = OrderedDict()  # (device, dtype, ptr, shape, strides) -> buffer
        self.uploads = 0

    def staged(self, t: torch.Tensor) -> torch.Tensor:
        """A contiguous buffer holding ``t``'s values, the same buffer for the same ``t`` each step."""
        key = (t.device, t.dtype, t.data_ptr(), tuple(t.shape), t.stride())
        buf = self._staging.get(key)
        if buf is None:
            buf = self._staging[key] = torch.empty(tuple(t.shape), dtype=t.dtype, device=t.device)
            if len(self._staging) > 4 * self.LIMIT:
                self._staging.popitem(last=False)
        else:
            self._staging.move_to_end(key)
        buf.copy_(t)
        return buf

    def table(self, device: torch.device, spec: tuple, staging: list, capturing: bool) -> torch.Tensor | None:
        """The device table of ``_rows(*spec)`` (None when it has no rows), uploaded on a miss only:
        a hit costs a lookup, not the rows (on CUDA a parameter has a row per 16K elements)."""
        key = (device, spec)
        entry = self._pinned.get(key)
        if entry is None:
            entry = self._tables.get(key)
            if entry is None:
                rows = _rows(*spec)
                if not rows:
                    return None
                entry = self._tables[key] = (*_upload(rows, device, capturing), list(staging))
                self.uploads += 1
                if len(self._tables) > self.LIMIT:
                    self._tables.popitem(last=False)
            else:
                self._tables.move_to_end(key)
            if capturing:
                self._pinned[key] = self._tables.pop(key)
        return entry[0]


def fused_step(algo: str, params, grads, states, scalars, firsts, hyper, *, maximize=False,
               weight_decay=False, momentum=False, nesterov=False, amsgrad=False, decoupled=False,
               centered=False, steps=None, cache: TableCache | None = None, capturing=False):
    """Update ``params`` in place with one launch per (device, dtype) of the group (two when
    capturable).

    ``params``/``grads``: torch tensors of equal shapes and dtypes; ``states``: per parameter a
    list of up to three state tensors (the ones the algorithm reads, in its order; ``None`` for
    unused slots); ``scalars``: per parameter ``(c0, c1)``; ``firsts``: per parameter bool;
    ``hyper``: up to eight group coefficients (see the kernel). Tensors that are not contiguous are
    updated through contiguous copies written back after the launch.

    ``steps`` (capturable): per parameter its 0-d float32 step count on its device; the kernel
    reads ``step + 1`` instead of ``scalars`` (Adam then needs ``hyper[6:8] = (lr, beta1)``) and a
    second launch adds 1 to every step. ``cache``: reuse device tables (and staging buffers) by
    contents instead of uploading one per launch. ``capturing``: a graph capture is under way, so
    the tables used are kept in ``cache`` for the graph's life."""
    code = ALGORITHMS[algo]
    capturable = steps is not None
    buckets: dict = {}
    for i, p in enumerate(params):
        buckets.setdefault((p.device, p.dtype), []).append(i)
    h = [f64_bits(x) for x in hyper] + [0] * (8 - len(hyper))
    for (device, dtype), idx in buckets.items():
        if not dtype.is_floating_point:
            raise TypeError(f"optimizers update floating-point parameters, got {dtype}")
        if dtype == torch.bfloat16 and device.type == "cpu":  # the interpreter's bf16 arithmetic is wrong
            raise RuntimeError("bfloat16 parameters cannot be optimized on the CPU: Triton's interpreter computes "
                               "bfloat16 wrongly. Use float32 on the CPU, or a CUDA device for bfloat16.")
        specs, keep, write_back, staging = [], [], [], []  # specs: per parameter what its rows hold
        chunk, block = _chunk(device, max(params[i].numel() for i in idx))
        item = params[idx[0]].element_size()
        for i in idx:
            tensors = [params[i], grads[i]] + list(states[i]) + [None] * (3 - len(states[i]))
            ptrs = []
            for k, t in enumerate(tensors):
                if t is None:
                    ptrs.append(0)  # the kernel never dereferences an unused slot
                    continue
                if t.dtype != dtype or t.device != device or t.shape != params[i].shape:
                    raise ValueError(f"optimizer tensors of one parameter must share its shape, dtype and "
                                     f"device: got {tuple(t.shape)} {t.dtype} {t.device} for "
                                     f"{tuple(params[i].shape)} {dtype} {device}")
                if not t.is_contiguous():
                    c = t.contiguous() if cache is None else cache.staged(t)
                    if cache is not None:
                        staging.append(c)
                    if k != 1:  # gradients are only read
                        write_back.append((t, c))
                    t = c
                keep.append(t)
                ptrs.append(t.data_ptr())
            n = params[i].numel()
            if capturable:
                step = steps[i]
                if step.dtype != torch.float32 or step.device != device or step.numel() != 1:
                    raise ValueError(f"a capturable optimizer keeps each step count as a 0-d float32 tensor on "
                                     f"its parameter's device ({device}), got {tuple(step.shape)} {step.dtype} "
                                     f"{step.device}")
                keep.append(step)
                specs.append((tuple(ptrs), n, step.data_ptr(), 0, None))
            else:
                specs.append((tuple(ptrs), n, *(f64_bits(x) for x in scalars[i]), bool(firsts[i])))
        key = (chunk, item, capturable, tuple(specs))  # the rows are a function of this
        if cache is None:
            rows = _rows(*key)
            table = _upload(rows, device, capturing)[0] if rows else None
        else:
            table = cache.table(device, key, staging, capturing)
        if table is None:
            continue
        n_rows = table.numel() // ROW.value
        # one program walks every row under the interpreter (it pays per program); one per row compiled
        grid, per_program = ((1,), n_rows) if target(device) == "cpu" else ((n_rows,), 1)
        launch(_optim_kernel, grid, table, keep[0], per_program, *h, ALGO=code, MAXIMIZE=bool(maximize),
               WEIGHT_DECAY=bool(weight_decay), MOMENTUM=bool(momentum), NESTEROV=bool(nesterov),
               AMSGRAD=bool(amsgrad), DECOUPLED=bool(decoupled), CENTERED=bool(centered),
               CAPTURABLE=capturable, COMPUTE=compute_dtype(dtype), BLOCK=block, num_warps=4, keep_alive=keep)
        if capturable:  # after every row has read the step counts
            launch(_advance_steps_kernel, (1,), table, n_rows, BLOCK=min(next_pow2(max(n_rows, 16)), 1024),
                   num_warps=1, keep_alive=keep)
        for dst, src in write_back:
            dst.copy_(src)
