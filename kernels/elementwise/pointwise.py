"""One strided elementwise kernel (minitorch's map/zip) that every pointwise op runs through.

``out[i] = OP(in0[i], in1[i], in2[i], params)`` over a logical N-d index ``i``, where each operand
is reached through its own strides. Broadcasting is a stride of 0, so a broadcast operand is never
materialised; transposed and sliced operands are read in place. OP is a ``@triton.jit`` function
passed as a compile-time constant (see ``arithmetic.py`` and the other formula files of this
package), so each op is a one-line formula and the indexing, masking, dtype handling and launch
logic live here once.

Dtypes: fp16/bf16 inputs are computed in fp32 (``dtypes.compute_dtype``); bool inputs stay bool so masks
and ``where`` conditions keep their meaning; results are cast to each output's dtype on store.
"""
from __future__ import annotations

import itertools
import math

import torch
import triton
import triton.language as tl

from ..helpers.dtypes import compute_dtype
from ..runtime.launch import launch_site, site_replayer
from ..helpers.layout import block_for, cdiv, collapse, contiguous_strides, element_offset
from ..helpers.scalars import as_f64, f64_bits

MAX_INPUTS, MAX_OUTPUTS = 4, 3


# How an operand is addressed (a constexpr per operand, so the interpreter runs only the ops its
# layout needs): LINEAR when its collapsed strides are the contiguous ones, SCALAR when every stride
# is 0 (a broadcast 0-d value: one unmasked load of element 0, which exists since numel > 0, then
# broadcast to the block), STRIDED otherwise.
LINEAR, SCALAR, STRIDED = 0, 1, 2


@triton.jit
def _load(ptr, lin, mask, shape, strides, NDIM: tl.constexpr, MODE: tl.constexpr, COMPUTE: tl.constexpr):
    if MODE == 0:
        x = tl.load(ptr + lin, mask=mask)
    elif MODE == 1:  # a block again at once: the interpreter mistypes ops between two scalars
        x = tl.broadcast_to(tl.load(ptr), lin.shape)
    else:
        x = tl.load(ptr + element_offset(lin, shape, strides, NDIM), mask=mask)
    if x.dtype != tl.int1 and x.dtype != COMPUTE:
        x = x.to(COMPUTE)
    return x


@triton.jit
def pointwise_kernel(out0, out1, out2, in0, in1, in2, in3, p0_bits, p1_bits, numel, shape,
                     out_strides, strides0, strides1, strides2, strides3,
                     OP: tl.constexpr, N_IN: tl.constexpr, N_OUT: tl.constexpr, N_PARAMS: tl.constexpr,
                     NDIM: tl.constexpr, MODE_OUT: tl.constexpr, MODE0: tl.constexpr, MODE1: tl.constexpr,
                     MODE2: tl.constexpr, MODE3: tl.constexpr, COMPUTE: tl.constexpr,
                     ONE_PROGRAM: tl.constexpr, MASKED: tl.constexpr, BLOCK: tl.constexpr):
    # the interpreter pays per tl op, not per element: every constexpr branch below skips ops
    if ONE_PROGRAM:
        lin = tl.arange(0, BLOCK)
        if MODE_OUT == 2 or MODE0 == 2 or MODE1 == 2 or MODE2 == 2 or MODE3 == 2:
            lin = lin.to(tl.int64)  # strided offsets (lin * a large stride) overflow int32
    else:
        lin = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        mask = lin < numel
    else:  # the blocks tile numel exactly: no lane is out of bounds
        mask = None
    if N_PARAMS == 0:
        params = (0, 0)
    elif N_PARAMS == 1:
        params = (as_f64(p0_bits).to(COMPUTE), 0)
    else:
        params = (as_f64(p0_bits).to(COMPUTE), as_f64(p1_bits).to(COMPUTE))
    a = _load(in0, lin, mask, shape, strides0, NDIM, MODE0, COMPUTE)
    if N_IN == 1:
        y = OP(a, params)
    elif N_IN == 2:
        y = OP(a, _load(in1, lin, mask, shape, strides1, NDIM, MODE1, COMPUTE), params)
    elif N_IN == 3:
        y = OP(a, _load(in1, lin, mask, shape, strides1, NDIM, MODE1, COMPUTE),
               _load(in2, lin, mask, shape, strides2, NDIM, MODE2, COMPUTE), params)
    else:
        y = OP(a, _load(in1, lin, mask, shape, strides1, NDIM, MODE1, COMPUTE),
               _load(in2, lin, mask, shape, strides2, NDIM, MODE2, COMPUTE),
               _load(in3, lin, mask, shape, strides3, NDIM, MODE3, COMPUTE), params)
    if MODE_OUT == 0:
        out_off = lin
    else:
        out_off = element_offset(lin, shape, out_strides, NDIM)
    if N_OUT == 1:
        _store(out0 + out_off, y, mask)
    else:
        _store(out0 + out_off, y[0], mask)
        _store(out1 + out_off, y[1], mask)
        if N_OUT == 3:
            _store(out2 + out_off, y[2], mask)


@triton.jit
def _store(ptrs, y, mask):
    if y.dtype != ptrs.dtype.element_ty:  # a cast to the same type is still an interpreted op
        y = y.to(ptrs.dtype.element_ty)
    tl.store(ptrs, y, mask=mask)


def _mode(strides, linear) -> int:
    if strides == linear:
        return LINEAR
    if not any(strides):
        return SCALAR
    return STRIDED


def _dense(t) -> bool:
    """Non-overlapping and dense: some order of the dims makes ``t`` contiguous."""
    expected = 1
    for size, stride in sorted(((n, st) for n, st in zip(t.shape, t.stride()) if n != 1), key=lambda p: p[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def output_strides(shape, inputs, views):
    """The strides of a pointwise result, by PyTorch's TensorIterator rule: contiguous when the
    inputs are; the inputs' own strides when they all have the result's shape and one dense layout;
    otherwise the dims ordered as the inputs' strides order them (broadcast dims and ties left to the
    next input), contiguous in that order. None: contiguous."""
    ndim = len(shape)
    if ndim <= 1 or math.prod(shape) == 0:
        return None
    if all(tuple(t.shape) == shape for t in inputs):  # (a number operand is a 0-d input: not this case)
        if all(t.is_contiguous() for t in inputs):
            return None
        if all(_dense(t) for t in inputs) and len({t.stride() for t in inputs}) == 1:
            return inputs[0].stride()
    strides = [v.stride() for v in views]

    def should_swap(d0, d1):
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim))[::-1]  # fastest-moving dim first
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(ndim))[::-1]:
        return None
    out, step = [0] * ndim, 1
    for d in perm:
        out[d] = step
        step *= shape[d]
    return tuple(out)


_sites: dict = {}  # call site -> (its id for launch_site, the strides of fresh outputs or None, like)
_site_ids = itertools.count()  # never reused: the executor keeps plans by id past a clear of _sites


def _plan(site, inputs, shape, out_dtypes):
    """What a call site decides once: its id, the strides of fresh outputs and the input a fresh
    output can be allocated like (``empty_like``: same dtype, shape and dense strides), or None."""
    strides = output_strides(shape, inputs, [t.expand(shape) for t in inputs])
    if strides is None:
        strides = contiguous_strides(shape)
    like = None
    for k, t in enumerate(inputs):
        if t.shape == shape and all(dt == t.dtype for dt in out_dtypes) and _dense(t) and t.stride() == strides:
            like = k
            break
    if len(_sites) > 4096:
        _sites.clear()
    plan = _sites[site] = (next(_site_ids), strides, like)
    return plan


def pointwise(op, inputs, shape, out_dtypes, params=(), outs=None, compute=None):
    """Run ``op`` elementwise over ``inputs`` (torch tensors broadcastable to ``shape``).

    Returns the list of outputs: fresh contiguous tensors of ``out_dtypes``, or ``outs`` (possibly
    strided views, for in-place ops) when given. ``compute`` is the dtype the math runs in
    (defaults to the first output's, widened from fp16/bf16 to fp32).
    """
    shape = tuple(shape)
    bits = tuple([f64_bits(p) for p in params]) if params else ()
    site_id, strides, like = _site_plan(op, inputs, shape, out_dtypes, bits, outs, compute)
    if outs is None:
        outs = _allocate(inputs, shape, out_dtypes, strides, like)
    if math.prod(shape) == 0:
        return outs
    launch_site(pointwise_kernel, site_id, [*outs, *inputs],
                lambda: _arguments(op, inputs, shape, out_dtypes, bits, outs, compute))
    return outs


def _site_plan(op, inputs, shape, out_dtypes, bits, outs, compute):
    # what decides every argument but the addresses (launch_site): a site seen before launches from
    # its id, the rest decided once per site
    site = (id(op), shape, tuple(out_dtypes), bits, compute,
            tuple([(t.dtype, t.shape, t.stride()) for t in inputs]),
            None if outs is None else tuple([(o.dtype, o.stride()) for o in outs]))
    plan = _sites.get(site)
    if plan is None:
        plan = _plan(site, inputs, shape, out_dtypes)
    return plan


def _allocate(inputs, shape, out_dtypes, strides, like):
    if like is not None:  # the cheapest allocation torch has: an input's dtype, shape and layout
        t = inputs[like]
        return [torch.empty_like(t) for _ in out_dtypes]
    device = inputs[0].device
    return [torch.empty_strided(shape, strides, dtype=dt, device=device) for dt in out_dtypes]


def planned(op, inputs, shape, out_dtype, params=(), compute=None):
    """``pointwise(op, inputs, shape, [out_dtype], params, compute=compute)[0]`` as a function of the
    inputs alone, for a caller that sees the same call again (the same op, parameters, dtypes,
    shapes, strides, devices and aliasing among ``inputs``: the caller's key): ``run(*inputs) ->
    out``, whose launch replays the site's trace directly (``launch.site_replayer``). None while
    the CPU executor has no plan for the site yet (its first launches interpret and record) or when
    there is nothing to launch."""
    shape, out_dtypes = tuple(shape), [out_dtype]
    bits = tuple([f64_bits(p) for p in params]) if params else ()
    site_id, strides, like = _site_plan(op, inputs, shape, out_dtypes, bits, None, compute)
    if math.prod(shape) == 0 or not inputs[0].is_cpu:
        return None
    sample = _allocate(inputs, shape, out_dtypes, strides, like)
    replay = site_replayer(pointwise_kernel, site_id, [*sample, *inputs])
    if replay is None:
        return None

    def run(*inputs):
        # (an input's dtype, shape and layout: empty_like, the cheapest allocation torch has)
        out = torch.empty_like(inputs[like]) if like is not None else \
            _allocate(inputs, shape, out_dtypes, strides, like)[0]
        if not replay([out, *inputs]):
            launch_site(pointwise_kernel, site_id, [out, *inputs],
                        lambda: _arguments(op, inputs, shape, out_dtypes, bits, [out], compute))
        return out
    return run


def _arguments(op, inputs, shape, out_dtypes, bits, outs, compute):
    """(grid, args, meta) of the pointwise launch; every tensor argument is one of ``outs`` or
    ``inputs`` (the kernel reaches a broadcast input through its strides, not through a view)."""
    views = [t.expand(shape) for t in inputs]
    numel = math.prod(shape)
    cshape, cstrides = collapse(shape, [o.stride() for o in outs[:1]] + [v.stride() for v in views])
    if any(o.stride() != outs[0].stride() for o in outs[1:]):
        raise ValueError("the outputs of a multi-output pointwise op must share strides")
    in_strides = cstrides[1:] + [cstrides[1]] * (MAX_INPUTS - len(views))
    ptrs = list(inputs) + [inputs[0]] * (MAX_INPUTS - len(inputs))
    out_ptrs = list(outs) + [outs[0]] * (MAX_OUTPUTS - len(outs))
    block = block_for(numel, outs[0].device)
    compute = compute or compute_dtype(out_dtypes[0] if out_dtypes else outs[0].dtype)
    n_params, bits = len(bits), list(bits) + [0] * (2 - len(bits))
    linear = (1,) if len(cshape) == 1 else None  # only a 1-d collapse can be contiguous
    modes = [_mode(st, linear) for st in cstrides]
    # an output is never a broadcast; one element is at offset 0 whatever its strides
    modes[0] = LINEAR if modes[0] == LINEAR or numel == 1 else STRIDED
    modes += [modes[-1]] * (1 + MAX_INPUTS - len(modes))
    grid = cdiv(numel, block)
    return (grid,), (*out_ptrs, *ptrs, *bits, numel, cshape, cstrides[0], *in_strides), dict(
        OP=op, N_IN=len(inputs), N_OUT=len(outs), N_PARAMS=n_params,
        NDIM=len(cshape), MODE_OUT=modes[0], MODE0=modes[1], MODE1=modes[2], MODE2=modes[3], MODE3=modes[4],
        COMPUTE=compute, ONE_PROGRAM=grid == 1, MASKED=numel % block != 0, BLOCK=block,
        num_warps=_WARPS.get(compute.primitive_bitwidth, 4))


# A GPU thread holds 1024 / (32 num_warps) lanes of every live value: four 32-bit or two 64-bit ones
# keep the special functions' series in registers (lgamma, digamma and polygamma spilled up to 200 B
# a thread at eight lanes), and a thread's lanes of a 32- or 64-bit operand are one 16-byte access.
_WARPS = {32: 8, 64: 16}
