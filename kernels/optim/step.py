"""The fused optimizer step: one launch updates every parameter of a group, whatever the algorithm.

The parameters of a group are reached through a pointer table (``tables.py``), one row per chunk
of at most ``chunk`` elements of one parameter:

    row = [param_ptr, grad_ptr, state0_ptr, state1_ptr, state2_ptr, n, c0_bits, c1_bits, c2_bits, flag]

``n`` is the chunk's length, ``c0..c2`` the parameter's step-dependent scalars (Adam's
``lr / (1 - beta1^t)``, Adagrad's decayed lr ...) as fp64 bits, ``flag`` a per-parameter branch the
host decides (SGD's first momentum step, RAdam's rectification, ASGD's averaging). The update
itself is a formula of ``updates.py``, the kernel's ``UPDATE`` constexpr; the kernel owns the walk:
it decodes the group constants once, each row's pointers and scalars, loads the parameter, the
gradient and the state slots in use, and stores what the formula returns -- weight decay, moments,
bias correction, the parameter write all in registers: each element is read once and written once
per step. Group constants arrive as fp64 bits (``h0..h7``) computed on the host in fp64, then
rounded to the compute dtype like PyTorch's scalar arguments; the math runs in fp32 for fp16/bf16/
fp32 parameters and in fp64 for fp64 ones; state is stored in the parameter's dtype.

Capturable steps (``steps=`` given: Adam/AdamW/RMSprop with ``capturable=True``) read no host value
that changes between steps, so a captured graph replays them correctly. A row is then

    row = [param_ptr, grad_ptr, state0_ptr, state1_ptr, state2_ptr, n, step_ptr, 0, 0, owner]

with ``step_ptr`` the parameter's 0-d float32 step count on its device. With ``bias_correction``
(Adam) the kernel computes t = step + 1 and the scalars from it in fp64 -- the host path's
``c0 = lr / (1 - beta1^t)``, ``c1 = sqrt(1 - beta2^t)`` with beta^t = exp(t log beta), from fp64
``h6 = lr``, ``h7 = beta1``, ``h1 = beta2``; a second tiny launch (``advance_steps_kernel``) then
adds 1 to every step, through the rows flagged ``owner`` (one per parameter) -- not in the first
launch, whose programs would race: the rows of one parameter run in parallel and all read its step.
Such a table is the same every step, so it is uploaded once and kept (``TableCache``): a repeated
step makes no host->device copy (in a CUDA graph, one would be replayed every time).

On the CPU (``target``) the group's one launch is ``optim_params_kernel`` instead: the same walk
(``_update_blocks``) over the group's tensors passed as tuple arguments, each parameter's length and
block (its length's power of two, at most 2^16) constexprs, the group constants and each
parameter's scalars and flag in one fp64 tensor, a capturable parameter's step advanced in the same
launch (one program: no race). A table's rows are loaded data, so its recorded trace had to guard
every row's length and pointers and ran every row at the longest parameter's block (~2 ms of a
digits CNN step's Adam); this trace has no guards, its addresses are replay inputs and a bias of
16 elements costs 16 lanes. Both launches compute the same bits (``tests/optim``).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from tgrad.kernels.helpers.dtypes import compute_dtype
from tgrad.kernels.runtime.launch import launch, launch_site
from tgrad.kernels.helpers.layout import next_pow2
from tgrad.kernels.helpers.scalars import as_f64, f64_bits
from tgrad.kernels.runtime.target import target
from .tables import TableCache, chunk_sizes, host_values, row_grid, upload
from .updates import OPTION_BITS, UPDATES

__all__ = ["fused_step", "launch_params", "ROW"]

ROW = tl.constexpr(10)  # int64 entries per table row (layout in the module docstring)
# Adadelta ... Rprop have been checked in fp16/fp32/fp64 only: bfloat16 parameters are refused
_NO_BFLOAT16 = ("adadelta", "adamax", "nadam", "radam", "asgd", "rprop", "axpy")


@triton.jit
def _ptr(row_base, col: tl.constexpr, like):
    return tl.load(row_base + col).to(tl.pointer_type(like.dtype.element_ty))


@triton.jit
def _constant(bits, I: tl.constexpr, N: tl.constexpr, COMPUTE: tl.constexpr):
    """The I-th group constant in the compute dtype; a placeholder past the N the launch passed."""
    if I < N:
        return as_f64(bits).to(COMPUTE)
    else:
        return 0.0


@triton.jit
def _row_scalar(row_base, I: tl.constexpr, N: tl.constexpr, COMPUTE: tl.constexpr):
    if I < N:
        return as_f64(tl.load(row_base + 6 + I)).to(COMPUTE)
    else:
        return 0.0


@triton.jit
def _load_state(ptr_base, offs, mask, placeholder, USED: tl.constexpr, COMPUTE: tl.constexpr):
    if USED:
        return tl.load(ptr_base + offs, mask=mask, other=0.0).to(COMPUTE)
    else:
        return placeholder


@triton.jit
def _beta_power(beta, log_beta, t):
    """beta^t for t >= 1 in fp64, as exp(t log beta); 0^t = 0 (log 0 is not used)."""
    return tl.where(beta > 0.0, tl.exp(t * log_beta), 0.0)


@triton.jit
def _update_blocks(p_ptr, g_ptr, s0_ptr, s1_ptr, s2_ptr, n, k, c, flag, UPDATE: tl.constexpr, OPTIONS: tl.constexpr,
                   S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr, MAXIMIZE: tl.constexpr,
                   COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    """One parameter's ``n`` elements updated by ``UPDATE``, ``BLOCK`` at a time: each element of the
    parameter, its gradient and its state slots in use read once and written once."""
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
        g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(COMPUTE)
        if MAXIMIZE:
            g = -g
        s0 = _load_state(s0_ptr, offs, mask, p, S0, COMPUTE)
        s1 = _load_state(s1_ptr, offs, mask, p, S1, COMPUTE)
        s2 = _load_state(s2_ptr, offs, mask, p, S2, COMPUTE)
        p, s0, s1, s2 = UPDATE(p, g, s0, s1, s2, k, c, flag, OPTIONS, COMPUTE)
        if S0:
            tl.store(s0_ptr + offs, s0.to(s0_ptr.dtype.element_ty), mask=mask)
        if S1:
            tl.store(s1_ptr + offs, s1.to(s1_ptr.dtype.element_ty), mask=mask)
        if S2:
            tl.store(s2_ptr + offs, s2.to(s2_ptr.dtype.element_ty), mask=mask)
        tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)


@triton.jit
def optim_step_kernel(table, like, rows_per_program, h0, h1, h2, h3, h4, h5, h6, h7,
                      UPDATE: tl.constexpr, OPTIONS: tl.constexpr, N_HYPER: tl.constexpr,
                      N_SCALARS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr,
                      FLAG: tl.constexpr, MAXIMIZE: tl.constexpr, CAPTURABLE: tl.constexpr,
                      COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    # The interpreter pays per tl op and per program: on the CPU one program walks every row
    # (rows_per_program = all of them), the group constants are decoded once, and each row decodes
    # only the table entries its algorithm reads. Compiled, a program owns one row.
    k = (_constant(h0, 0, N_HYPER, COMPUTE), _constant(h1, 1, N_HYPER, COMPUTE),
         _constant(h2, 2, N_HYPER, COMPUTE), _constant(h3, 3, N_HYPER, COMPUTE),
         _constant(h4, 4, N_HYPER, COMPUTE), _constant(h5, 5, N_HYPER, COMPUTE),
         _constant(h6, 6, N_HYPER, COMPUTE), _constant(h7, 7, N_HYPER, COMPUTE))
    if CAPTURABLE and N_SCALARS == 2:  # the bias corrections come from the device step count
        lr = as_f64(h6)
        beta1 = as_f64(h7)
        beta2 = as_f64(h1)
        log_beta1 = tl.log(tl.where(beta1 > 0.0, beta1, 1.0))
        log_beta2 = tl.log(tl.where(beta2 > 0.0, beta2, 1.0))
    first_row = tl.program_id(0).to(tl.int64) * rows_per_program
    for row in range(first_row, first_row + rows_per_program):
        row_base = table + row * ROW
        p_ptr = _ptr(row_base, 0, like)
        g_ptr = _ptr(row_base, 1, like)
        if S0:
            s0_ptr = _ptr(row_base, 2, like)
        else:
            s0_ptr = p_ptr  # never dereferenced
        if S1:
            s1_ptr = _ptr(row_base, 3, like)
        else:
            s1_ptr = p_ptr
        if S2:
            s2_ptr = _ptr(row_base, 4, like)
        else:
            s2_ptr = p_ptr
        n = tl.load(row_base + 5)
        if CAPTURABLE:
            if N_SCALARS == 2:
                # the host path's c0 = lr / (1 - beta1^t), c1 = sqrt(1 - beta2^t), with t = step + 1
                t = tl.load(tl.load(row_base + 6).to(tl.pointer_type(tl.float32))).to(tl.float64) + 1.0
                c = ((lr / (1.0 - _beta_power(beta1, log_beta1, t))).to(COMPUTE),
                     tl.sqrt(1.0 - _beta_power(beta2, log_beta2, t)).to(COMPUTE), 0.0)
            else:
                c = (0.0, 0.0, 0.0)
            flag = False
        else:
            c = (_row_scalar(row_base, 0, N_SCALARS, COMPUTE), _row_scalar(row_base, 1, N_SCALARS, COMPUTE),
                 _row_scalar(row_base, 2, N_SCALARS, COMPUTE))
            if FLAG:
                flag = tl.load(row_base + 9) != 0
            else:
                flag = False
        _update_blocks(p_ptr, g_ptr, s0_ptr, s1_ptr, s2_ptr, n, k, c, flag, UPDATE, OPTIONS, S0, S1, S2, MAXIMIZE,
                       COMPUTE, BLOCK)


@triton.jit
def advance_steps_kernel(table, n_rows, BLOCK: tl.constexpr):
    """step += 1 through the step pointer (column 6) of every row flagged owner (column 9): one
    row per parameter, so no two lanes write one step."""
    for start in range(0, n_rows, BLOCK):
        rows = start + tl.arange(0, BLOCK)
        in_table = rows < n_rows
        owner = tl.load(table + rows * ROW + 9, mask=in_table, other=0) != 0
        step_ptr = tl.load(table + rows * ROW + 6, mask=in_table, other=0).to(tl.pointer_type(tl.float32))
        step = tl.load(step_ptr, mask=owner, other=0.0)
        tl.store(step_ptr, step + 1.0, mask=owner)


@triton.jit
def _constant_at(consts, I: tl.constexpr, N: tl.constexpr, COMPUTE: tl.constexpr):
    """``consts[I]`` (fp64) in the compute dtype when ``I < N``; a placeholder otherwise."""
    if I < N:
        return tl.load(consts + I).to(COMPUTE)
    else:
        return 0.0


@triton.jit
def optim_params_kernel(p_ptrs, g_ptrs, s0s, s1s, s2s, steps, consts, NS: tl.constexpr, BLOCKS: tl.constexpr,
                        UPDATE: tl.constexpr, OPTIONS: tl.constexpr, N_HYPER: tl.constexpr,
                        N_SCALARS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr, S2: tl.constexpr,
                        FLAG: tl.constexpr, MAXIMIZE: tl.constexpr, CAPTURABLE: tl.constexpr,
                        COMPUTE: tl.constexpr):
    # The CPU's form of optim_step_kernel (module docstring): the tensors are tuple arguments and
    # each parameter's length and block are constexprs, so the recorded trace reads no pointer or
    # length from memory (no guards) and spends no lane past a small parameter's end. (No argument
    # is named `params`: the binder Triton generates for a GPU launch names its own dict so.)
    k = (_constant_at(consts, 0, N_HYPER, COMPUTE), _constant_at(consts, 1, N_HYPER, COMPUTE),
         _constant_at(consts, 2, N_HYPER, COMPUTE), _constant_at(consts, 3, N_HYPER, COMPUTE),
         _constant_at(consts, 4, N_HYPER, COMPUTE), _constant_at(consts, 5, N_HYPER, COMPUTE),
         _constant_at(consts, 6, N_HYPER, COMPUTE), _constant_at(consts, 7, N_HYPER, COMPUTE))
    if CAPTURABLE and N_SCALARS == 2:
        lr = tl.load(consts + 6)
        beta1 = tl.load(consts + 7)
        beta2 = tl.load(consts + 1)
        log_beta1 = tl.log(tl.where(beta1 > 0.0, beta1, 1.0))
        log_beta2 = tl.log(tl.where(beta2 > 0.0, beta2, 1.0))
    for i in tl.static_range(len(NS)):
        p_ptr = p_ptrs[i]
        if S0:
            s0_ptr = s0s[i]
        else:
            s0_ptr = p_ptr  # never dereferenced
        if S1:
            s1_ptr = s1s[i]
        else:
            s1_ptr = p_ptr
        if S2:
            s2_ptr = s2s[i]
        else:
            s2_ptr = p_ptr
        if CAPTURABLE:
            step = tl.load(steps[i])
            if N_SCALARS == 2:
                t = step.to(tl.float64) + 1.0
                c = ((lr / (1.0 - _beta_power(beta1, log_beta1, t))).to(COMPUTE),
                     tl.sqrt(1.0 - _beta_power(beta2, log_beta2, t)).to(COMPUTE), 0.0)
            else:
                c = (0.0, 0.0, 0.0)
            flag = False
        else:  # the parameter's scalars and flag: consts[8 + 4 i ...]
            c = (_constant_at(consts, 8 + 4 * i, 8 + 4 * i + N_SCALARS, COMPUTE),
                 _constant_at(consts, 9 + 4 * i, 8 + 4 * i + N_SCALARS, COMPUTE),
                 _constant_at(consts, 10 + 4 * i, 8 + 4 * i + N_SCALARS, COMPUTE))
            if FLAG:
                flag = tl.load(consts + 11 + 4 * i) != 0.0
            else:
                flag = False
        _update_blocks(p_ptr, g_ptrs[i], s0_ptr, s1_ptr, s2_ptr, NS[i], k, c, flag, UPDATE, OPTIONS, S0, S1, S2,
                       MAXIMIZE, COMPUTE, BLOCKS[i])
        if CAPTURABLE:  # one program: no other reads this step count after now
            tl.store(steps[i], step + 1.0)


def _rows(chunk: int, item: int, capturable: bool, specs) -> list:
    """The flat table (module docstring): per parameter ``(ptrs, n, (c0, c1, c2), flag)``, one row
    per chunk of ``chunk`` elements, pointers advanced to the chunk (``item`` bytes an element). A
    capturable spec holds ``(ptrs, n, (step_ptr, 0, 0), None)``; its rows mark the parameter's first
    chunk, and an empty parameter still gets a row, so its step advances as PyTorch's does."""
    rows = []
    for ptrs, n, c, flag in specs:
        for start in range(0, max(n, 1) if capturable else n, chunk):
            off = start * item
            rows.extend([*(ptr + off if ptr else 0 for ptr in ptrs), min(chunk, n - start), *c,
                         int(start == 0) if capturable else int(flag)])
    return rows


def _slots(states) -> tuple:
    return tuple(s < len(states) and states[s] is not None for s in range(3))


def _check_dtype(algo: str, device, dtype):
    if not dtype.is_floating_point:
        raise TypeError(f"optimizers update floating-point parameters, got {dtype}")
    if dtype == torch.bfloat16:
        if device.type == "cpu":  # the interpreter's bf16 arithmetic is wrong
            raise RuntimeError("bfloat16 parameters cannot be optimized on the CPU: Triton's interpreter computes "
                               "bfloat16 wrongly. Use float32 on the CPU" +
                               ("." if algo in _NO_BFLOAT16 else ", or a CUDA device for bfloat16."))
        if algo in _NO_BFLOAT16:
            raise TypeError(f"{algo} updates float16, float32 and float64 parameters, got {dtype}")


def fused_step(algo: str, params, grads, states, hyper, *, scalars=None, flags=None, maximize=False,
               steps=None, bias_correction=False, cache: TableCache | None = None, capturing=False, **options):
    """Update ``params`` in place with one launch per (device, dtype) of the group (two when
    capturable and compiled), by the formula ``updates.UPDATES[algo]``.

    ``params``/``grads``: torch tensors of equal shapes and dtypes; ``states``: per parameter a
    list of up to three state tensors (the slots the algorithm reads, in its order; ``None`` for
    unused slots); ``hyper``: up to eight group constants; ``scalars``: per parameter up to three
    step-dependent floats, or None; ``flags``: per parameter bool, or None (the formula reads no
    flag); ``options``: the formula's variant booleans (``updates.OPTION_BITS``). Tensors that are
    not contiguous are updated through contiguous copies written back after the launch.

    ``steps`` (capturable): per parameter its 0-d float32 step count on its device, which a second
    launch advances (compiled; on the CPU the one launch does); with ``bias_correction`` the kernel derives Adam's two scalars from it (``hyper``
    then ends with ``(lr, beta1)``). ``cache``: reuse device tables (and staging buffers) by
    contents instead of uploading one per launch. ``capturing``: a graph capture is under way, so
    the tables used are kept in ``cache`` for the graph's life."""
    update = UPDATES[algo]
    bits = sum(OPTION_BITS[name] for name, on in options.items() if on)
    capturable = steps is not None
    n_scalars = 2 if capturable and bias_correction else len(scalars[0]) if scalars else 0
    buckets: dict = {}
    for i, p in enumerate(params):
        buckets.setdefault((p.device, p.dtype), []).append(i)
    h = [f64_bits(x) for x in hyper] + [0] * (8 - len(hyper))
    for (device, dtype), idx in buckets.items():
        _check_dtype(algo, device, dtype)
        keep, write_back, staging = [], [], []
        used = _slots(states[idx[0]])  # the state slots the launch loads and stores (equal for every parameter)
        rows = []  # per parameter its [param, grad, s0, s1, s2] as the kernel reads them (None: a slot not used)
        for i in idx:
            tensors = [params[i], grads[i]] + list(states[i]) + [None] * (3 - len(states[i]))
            for slot, t in enumerate(tensors):
                if t is None:
                    continue
                if t.dtype != dtype or t.device != device or t.shape != params[i].shape:
                    raise ValueError(f"optimizer tensors of one parameter must share its shape, dtype and "
                                     f"device: got {tuple(t.shape)} {t.dtype} {t.device} for "
                                     f"{tuple(params[i].shape)} {dtype} {device}")
                if not t.is_contiguous():
                    c = t.contiguous() if cache is None else cache.staged(t)
                    if cache is not None:
                        staging.append(c)
                    if slot != 1:  # gradients are only read
                        write_back.append((t, c))
                    tensors[slot] = c
                keep.append(tensors[slot])
            if _slots(states[i]) != used:
                raise ValueError(f"the parameters of one {algo} step must have the same state slots, got "
                                 f"{_slots(states[i])} and {used}")
            if capturable:
                step = steps[i]
                if step.dtype != torch.float32 or step.device != device or step.numel() != 1:
                    raise ValueError(f"a capturable optimizer keeps each step count as a 0-d float32 tensor on "
                                     f"its parameter's device ({device}), got {tuple(step.shape)} {step.dtype} "
                                     f"{step.device}")
                keep.append(step)
            rows.append(tensors)
        meta = {"UPDATE": update, "OPTIONS": bits, "N_HYPER": len(hyper), "N_SCALARS": n_scalars, "S0": used[0],
                "S1": used[1], "S2": used[2], "FLAG": flags is not None and not capturable,
                "MAXIMIZE": bool(maximize), "CAPTURABLE": capturable, "COMPUTE": compute_dtype(dtype)}
        if target(device) == "cpu":
            launch_params(rows, [steps[i] for i in idx] if capturable else None,
                           [scalars[i] for i in idx] if scalars else None, [flags[i] for i in idx] if flags else None,
                           hyper, meta)
        else:
            _launch_table(rows, idx, device, steps, scalars, flags, h, keep, staging, cache, capturing, meta)
        for dst, src in write_back:
            dst.copy_(src)


def launch_params(rows, steps, scalars, flags, hyper, meta):
    """The CPU's launch (``optim_params_kernel``): the tensors as tuples, the group constants and the
    parameters' scalars and flags as one fp64 tensor ``[hyper (8), then per parameter c0, c1, c2,
    flag]`` (host values, as the table's bits are; a capture keeps the tensor, so they are frozen).
    A call site of ``launch_site``: the sizes, dtype and variant decide everything but addresses."""
    consts = list(hyper) + [0.0] * (8 - len(hyper))
    for j in range(len(rows)):
        c = list(scalars[j]) if scalars else []
        consts += c + [0.0] * (3 - len(c)) + [1.0 if flags and flags[j] else 0.0]
    consts = host_values(consts)
    sizes = tuple(row[0].numel() for row in rows)
    groups = [tuple(row[0] for row in rows), tuple(row[1] for row in rows)]
    groups += [tuple(row[s] for row in rows) if meta[f"S{s - 2}"] else () for s in (2, 3, 4)]
    groups.append(tuple(steps) if steps is not None else ())
    site = ("optim", sizes, rows[0][0].dtype, *meta.values())
    tensors = [t for group in groups for t in group] + [consts]

    def build():
        blocks = tuple(min(next_pow2(max(n, 1)), 1 << 16) for n in sizes)
        return (1,), (*groups, consts), {"NS": sizes, "BLOCKS": blocks, **meta}
    launch_site(optim_params_kernel, site, tensors, build)


def _launch_table(rows, idx, device, steps, scalars, flags, h, keep, staging, cache, capturing, meta):
    """The compiled launch (``optim_step_kernel``) through a pointer table (module docstring), and
    the step counts' advance after it when capturable."""
    capturable = meta["CAPTURABLE"]
    chunk, block = chunk_sizes(device, max(row[0].numel() for row in rows))
    specs = []  # per parameter what its rows hold
    for j, (i, row) in enumerate(zip(idx, rows)):
        ptrs = tuple(t.data_ptr() if t is not None else 0 for t in row)  # the kernel never reads an unused slot
        n = row[0].numel()
        if capturable:
            specs.append((ptrs, n, (steps[i].data_ptr(), 0, 0), None))
        else:
            c = tuple(f64_bits(x) for x in scalars[i]) if scalars else ()
            specs.append((ptrs, n, c + (0,) * (3 - len(c)), bool(flags[i]) if flags else False))
    key = (chunk, rows[0][0].element_size(), capturable, tuple(specs))  # the rows are a function of this
    if cache is None:
        table_rows = _rows(*key)
        table = upload(table_rows, device, capturing)[0] if table_rows else None
    else:
        table = cache.table(device, key, _rows, staging, capturing)
    if table is None:
        return
    n_rows = table.numel() // ROW.value
    grid, per_program = row_grid(device, n_rows)
    launch(optim_step_kernel, grid, table, rows[0][0], per_program, *h, BLOCK=block, num_warps=4, keep_alive=keep,
           **meta)
    if capturable:  # after every row has read the step counts
        launch(advance_steps_kernel, (1,), table, n_rows, BLOCK=min(next_pow2(max(n_rows, 16)), 1024),
               num_warps=1, keep_alive=keep)
