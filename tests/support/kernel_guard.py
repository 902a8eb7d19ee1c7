"""Test-only memory checks for interpreted (CPU) kernel launches.

Triton's interpreter lets an out-of-bounds load or store "succeed": it reads or writes whatever
lies at that address. Three tools make such bugs visible:

- ``memory_checked()``: while active, each launch tells the checker (through ``launch_observers``)
  which tensors it was given, and every load, store and atomic the interpreter performs is checked
  lane by lane: each address a live (unmasked) lane touches must be the address of an element of
  one of those tensors -- of the *view* passed, not merely of its storage. A violation raises
  ``MemoryViolation`` at once (before the access, so a wild pointer cannot crash the process) and is
  recorded in the list the context yields. The fused optimizer step and gradient clipping reach
  their tensors through pointer tables (``kernels/optim/step.py``, ``clip_grad.py``): their rows are
  decoded into the element ranges they name, and the tensors a launch keeps alive for its table
  (``launch(..., keep_alive=)``: step counters among them) are valid too. Launches replayed by a
  captured CPU graph interpret while the checker is on and are checked against their own
  arguments as an eager launch is.
- ``poisoned_allocations()``: ``torch.empty``/``empty_like``/``empty_strided`` (how kernels
  allocate their outputs) return memory filled with 0x7F bytes, so an element a kernel forgot to
  write reads as 3.4e38 (fp32), 1.4e306 (fp64), 0x7F7F... (ints) or byte 0x7F (bool) instead of
  whatever the allocator left there.
- ``Guard(shape, dtype)``: a strided, offset view inside a larger buffer of 0x7F bytes;
  ``check()`` asserts that no byte outside the view changed, ``unwritten()`` counts the elements
  of the view still holding the sentinel.

``close`` and ``backprop`` compare a guarded run with its float64 torch reference.
"""
from __future__ import annotations

import ctypes
import threading
from contextlib import contextmanager

import numpy as np
import torch
from triton.runtime.interpreter import InterpreterBuilder, interpreter_builder

import tgrad
from tgrad.kernels.runtime import executor, launch as launch_module
from tgrad.kernels.runtime.launch import launch_observers

SENTINEL = 0x7F
F64 = torch.float64


class MemoryViolation(AssertionError):
    pass


def element_offsets(shape, strides) -> np.ndarray:
    """Element offsets (from the view's first element) of every element of a strided view."""
    off = np.zeros((), dtype=np.int64)
    for size, stride in zip(shape, strides):
        off = np.add.outer(off, np.arange(size, dtype=np.int64) * stride)
    return off.reshape(-1)


class _Region:
    """The element addresses of a strided view, tested by arithmetic rather than enumerated (a
    launch over a large tensor would otherwise list, sort and search every one of its addresses).
    Dims are taken outermost first by stride; where each stride passes the extent of the dims
    inside it (every view torch makes without ``as_strided`` overlap), an address's index along a
    dim is its offset divided by that stride, so membership is a few integer operations per lane.
    An overlapping layout falls back to the sorted list of its addresses."""

    def __init__(self, base: int, item: int, shape, strides):
        dims = sorted(((st, n) for n, st in zip(shape, strides) if n > 1 and st != 0), reverse=True)
        self.base, self.item, self.dims, self.listed = base, item, dims, None
        if 0 in tuple(shape):
            self.listed = np.empty(0, dtype=np.uint64)
            return
        extent = 0
        for st, n in reversed(dims):
            if st <= extent:
                self.listed = np.unique(base + element_offsets([n for _, n in dims], [s for s, _ in dims])
                                        .astype(np.uint64) * np.uint64(item))
                break
            extent += (n - 1) * st

    @classmethod
    def of(cls, t: torch.Tensor):
        return cls(t.data_ptr(), t.element_size(), t.shape, t.stride())

    def contains(self, p: np.ndarray) -> np.ndarray:
        if self.listed is not None:
            if not self.listed.size:
                return np.zeros(p.shape, dtype=bool)
            pos = np.minimum(np.searchsorted(self.listed, p), self.listed.size - 1)
            return self.listed[pos] == p
        d = p.astype(np.int64) - np.int64(self.base)
        inside = (d >= 0) & (d % self.item == 0)
        e = d // self.item
        for st, n in self.dims:
            i = e // st
            inside &= i < n
            e = e - np.minimum(i, n - 1) * st
        return inside & (e == 0)


def _tensors(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _tensors(v)


def _table_addresses(width, pointers, count):
    """The decoder of a pointer table of rows of ``width`` int64, whose columns ``pointers`` each
    point at ``row[count]`` elements of the launch's second argument's dtype."""
    def decode(args):
        table, like = args[0], args[1]
        item = like.element_size()
        return [_Region(row[c], item, (row[count],), (1,))
                for row in _int64s(table).reshape(-1, width).tolist() for c in pointers if row[c]]
    return decode


def _int64s(t: torch.Tensor) -> np.ndarray:
    """A contiguous int64 tensor's values, read from its memory without a torch op (a test may be
    recording the torch ops a step makes)."""
    return np.ctypeslib.as_array((ctypes.c_int64 * t.numel()).from_address(t.data_ptr())).copy()


_CLIP_ROWS = _table_addresses(3, (0,), 1)  # [ptr, n, partial_index] (kernels/optim/clip_grad.py)
_INDIRECT = {"optim_step_kernel": _table_addresses(10, range(5), 5),  # [param, grad, s0, s1, s2, n, ...]
             "_norm_partials_kernel": _CLIP_ROWS, "_clip_scale_kernel": _CLIP_ROWS, "_clamp_kernel": _CLIP_ROWS}


class _Launch(threading.local):
    """What the checker knows of the launch running on this thread (threads launch concurrently)."""
    kernel = None
    tensors: list = []
    regions: list = []  # a _Region per tensor and table row the launch may touch
    keep_alive: tuple = ()  # set by the patched ``_launch`` for its observer


class _Checker:
    def __init__(self):
        self.current = _Launch()
        self.violations = []
        self.launches = 0

    def observe(self, kernel, grid, args, meta):
        tensors = [t for t in _tensors(list(args) + list(meta.values()) + list(self.current.keep_alive))
                   if t.device.type == "cpu"]
        if not tensors:
            return
        self.current.kernel, self.current.tensors = kernel.__name__, tensors
        regions = [_Region.of(t) for t in tensors if t.numel()]
        if kernel.__name__ in _INDIRECT:
            regions += _INDIRECT[kernel.__name__](args)
        self.current.regions = regions
        self.launches += 1

    def check(self, ptrs, mask, what):
        p = np.asarray(ptrs.data)
        if mask is not None:
            p = p[np.broadcast_to(np.asarray(mask.data, dtype=bool), p.shape)]
        p = p.reshape(-1).astype(np.uint64)
        if p.size == 0:
            return
        bad = np.ones(p.shape, dtype=bool)
        for region in self.current.regions:
            bad[bad] = ~region.contains(p[bad])
            if not bad.any():
                break
        if bad.any():
            first = int(p[bad][0])
            err = MemoryViolation(f"{self.current.kernel}: {what} of {int(bad.sum())} lane(s) outside every tensor it was "
                                  f"given; first at {self._describe(first)}")
            self.violations.append(err)
            raise err

    def _describe(self, addr):
        best = None
        for i, t in enumerate(self.current.tensors):
            start = t.data_ptr()
            d = (addr - start) / t.element_size()
            if best is None or abs(d) < abs(best[0]):
                best = (d, i, t)
        if best is None:
            return hex(addr)
        d, i, t = best
        return (f"element offset {d:+g} from tensor argument #{i} (shape {list(t.shape)}, strides "
                f"{list(t.stride())}, dtype {t.dtype})")


@contextmanager
def memory_checked():
    """Check every interpreted load/store/atomic against the launch's tensors (module doc).
    Yields the list of violations (also raised where they happen)."""
    checker = _Checker()
    b = interpreter_builder
    load, store = InterpreterBuilder.create_masked_load, InterpreterBuilder.create_masked_store
    rmw, cas = InterpreterBuilder.create_atomic_rmw, InterpreterBuilder.create_atomic_cas

    def masked_load(ptrs, mask, other, cache_policy, is_volatile):
        checker.check(ptrs, mask, "load")
        return load(b, ptrs, mask, other, cache_policy, is_volatile)

    def masked_store(ptrs, value, mask, cache_policy):
        checker.check(ptrs, mask, "store")
        return store(b, ptrs, value, mask, cache_policy)

    def atomic_rmw(op, ptr, val, mask, sem, scope):
        checker.check(ptr, mask, "atomic")
        return rmw(b, op, ptr, val, mask, sem, scope)

    def atomic_cas(ptr, cmp, val, sem, scope):
        checker.check(ptr, None, "atomic_cas")
        return cas(b, ptr, cmp, val, sem, scope)

    patches = {"create_masked_load": masked_load, "create_masked_store": masked_store,
               "create_atomic_rmw": atomic_rmw, "create_atomic_cas": atomic_cas}
    before = {name: b.__dict__.get(name) for name in patches}  # an enclosing check's, if nested
    for name, fn in patches.items():
        setattr(b, name, fn)  # instance attributes shadow the methods
    eager, graph_step = launch_module._launch, executor.graph_step

    def launching(kernel, grid, args, meta, keep_alive=(), site=None):
        checker.current.keep_alive = keep_alive
        try:
            return eager(kernel, grid, args, meta, keep_alive, site)
        finally:
            checker.current.keep_alive = ()

    def replaying(step):  # a captured graph's launch: no observer sees it otherwise
        checker.current.keep_alive = step.keep_alive
        try:
            checker.observe(step.kernel, step.grid, step.args, step.meta)
        finally:
            checker.current.keep_alive = ()
        return graph_step(step)

    launch_module._launch, executor.graph_step = launching, replaying
    launch_observers.append(checker.observe)
    try:
        yield checker.violations
    finally:
        launch_observers.remove(checker.observe)
        launch_module._launch, executor.graph_step = eager, graph_step
        for name, old in before.items():
            if old is None:
                delattr(b, name)
            else:
                setattr(b, name, old)


_empty = torch.empty  # the real one, for poison_ itself


def poison_(t: torch.Tensor) -> torch.Tensor:
    """Fill the whole storage under ``t`` with the sentinel byte."""
    if t.numel():
        _empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage()).fill_(SENTINEL)
    return t


@contextmanager
def poisoned_allocations():
    """torch.empty / empty_like / empty_strided hand out 0x7F-filled memory (module doc)."""
    originals = torch.empty, torch.empty_like, torch.empty_strided

    def wrap(fn):
        def poisoned(*args, **kwargs):
            return poison_(fn(*args, **kwargs))
        return poisoned

    torch.empty, torch.empty_like, torch.empty_strided = (wrap(f) for f in originals)
    try:
        yield
    finally:
        torch.empty, torch.empty_like, torch.empty_strided = originals


def raw_bytes(t: torch.Tensor) -> np.ndarray:
    """The bytes of every element of ``t`` (any strides), as uint8 rows of element_size."""
    c = t.detach().contiguous().reshape(-1)
    return c.view(torch.uint8).reshape(-1, t.element_size()).numpy()


class Guard:
    """A view inside a 0x7F-filled buffer; ``check()`` asserts no byte outside the view changed."""

    def __init__(self, shape, dtype, step=2, pad=5, transpose=False, device="cpu"):
        shape = tuple(shape)
        n = len(shape)
        order = list(range(n))
        if transpose and n >= 2:
            order[-1], order[-2] = order[-2], order[-1]
        # lay the dims out innermost-first in `order`, each with a gap: step on the innermost,
        # one spare element between blocks of the outer ones
        strides = [0] * n
        extent = 1
        for k, d in enumerate(reversed(order)):
            strides[d] = extent * (step if k == 0 else 1)
            extent = strides[d] * max(shape[d], 1) + (1 if k else 0)
        total = pad + extent + pad
        self.buffer = torch.empty(total, dtype=dtype, device=device)
        self.buffer.view(torch.uint8).fill_(SENTINEL)
        self.view = self.buffer.as_strided(shape, strides, pad)
        inside = np.zeros(total, dtype=bool)
        inside[pad + element_offsets(shape, strides)] = True
        self.outside = ~inside

    def check(self):
        b = self.buffer.view(torch.uint8).reshape(-1, self.buffer.element_size()).cpu().numpy()
        touched = (b[self.outside] != SENTINEL).any(axis=1)
        assert not touched.any(), f"{int(touched.sum())} guard element(s) around the view were written"

    def unwritten(self):
        """How many elements of the view still hold the sentinel bytes (never written)."""
        return int((raw_bytes(self.view) == SENTINEL).all(axis=1).sum())



def close(got, want, dtype=torch.float32):
    got = got.torch() if isinstance(got, tgrad.Tensor) else got
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(got.to(F64), want.detach().to(F64), equal_nan=True, **tol)


def backprop(y, yr, pairs, dtype=torch.float32, seed=5):
    """One random upstream gradient through tgrad's ``y`` and torch's ``yr``; each (leaf, reference)
    pair's gradients compared."""
    gen = torch.Generator().manual_seed(seed)
    up = torch.rand(tuple(y.shape), generator=gen, dtype=F64) - 0.5
    y.backward(tgrad.from_torch(up.to(y.torch().dtype)))
    yr.backward(up.to(y.torch().dtype).to(F64))
    for x, xr in pairs:
        close(x.grad, xr.grad, dtype)
