"""The memory a compiled trace (``runtime/trace.py``) reaches at replay, and the checks its guards run.

A replayed load or store goes through a numpy view of a CPU tensor's memory (``memory_view``) when
its addresses are an argument's address plus fixed offsets, or through a run of memory found at
replay (``run_load``, ``run_store``: a pointer read from a table plus ``tl.arange``, live lanes a
prefix), or through a window over the live lanes' address range found at replay (``load_addresses``,
``atomic_add_addresses``: addresses computed from data, a row gather or a scatter-add), or else through
the interpreter's own C++ load/store. Guards hoisted above a launch's
stores check that no earlier store overlaps what they read (``address_range``, ``run_range``,
``overlaps``). These are the functions the emitted source calls; nothing here records or emits.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from .triton_private import native

__all__ = ["memory_view", "live_prefix", "load_addresses", "load_rows", "store_addresses", "atomic_add_addresses", "run_pointers", "run_load",
           "run_store", "gather", "prefix_load", "prefix_store", "fill_live", "address_range", "run_range", "overlaps"]


_views: dict = {}  # (address, bytes, dtype) -> its array: a view only reads or writes what lies there now
# (region, dtype) -> an array over the aligned 1 MiB region of memory there: a fresh tensor's address is
# a new key of _views half the time (torch's allocator cycles through addresses), and a slice of its
# region's array costs half of a new ctypes buffer. Making an array over memory reads none of it.
_regions: dict = {}
_REGION = 1 << 20


def memory_view(address: int, nbytes: int, dtype) -> np.ndarray:
    """A numpy array over ``nbytes`` of raw memory at ``address`` (a CPU tensor's elements). Kept
    per (address, size, dtype): a replay uses one only while a launch's tensor lives there."""
    key = (address, nbytes, dtype)
    view = _views.get(key)
    if view is None:
        if len(_views) > 8192:
            _views.clear()
        offset, dt = address & (_REGION - 1), np.dtype(dtype)
        if offset + nbytes <= _REGION and offset % dt.itemsize == 0 and nbytes % dt.itemsize == 0:
            region = _regions.get((address - offset, dt))
            if region is None:
                if len(_regions) > 4096:
                    _regions.clear()
                region = _regions[(address - offset, dt)] = np.frombuffer(
                    (ctypes.c_char * _REGION).from_address(address - offset), dtype=dt)
            view = region[offset // dt.itemsize:(offset + nbytes) // dt.itemsize]
        else:
            view = np.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=dtype)
        _views[key] = view
    return view


def _window(p, dt):
    """(the memory from the lowest to the highest address of ``p`` as an array of ``dt``, each
    address's index in it), or None when an address is not a whole number of elements from the
    lowest (the interpreter's access then). Making the window reads nothing: only the indexed
    elements are touched, which are the addresses the interpreter touches."""
    size = dt.itemsize
    if size & (size - 1) or int(np.bitwise_or.reduce(p, axis=None)) % size:
        return None
    lo, hi = int(p.min()), int(p.max())
    window = np.frombuffer((ctypes.c_char * (hi - lo + size)).from_address(lo), dtype=dt)
    return window, ((p - np.uint64(lo)) >> np.uint64(size.bit_length() - 1)).view(np.int64)


# lanes below which the interpreter's C++ access, ~20 ns a lane, beats the window's ~15 us of numpy calls
WINDOW_LANES = 4096


def _live_pointers(ptr, mask):
    """(pointers with every masked lane replaced by a live lane's, the live lanes as a bool array or
    None when all are live), or None when no lane is live, ``ptr`` holds no addresses or too few."""
    if ptr.size < WINDOW_LANES or ptr.dtype != np.uint64:
        return None
    live = np.broadcast_to(mask, ptr.shape)
    if live.all():
        return ptr, None
    first = int(live.argmax())
    if not live.reshape(-1)[first]:
        return None
    return np.where(live, ptr, ptr.reshape(-1)[first]), live


def load_addresses(ptr, mask, other, dt):
    """The interpreter's ``native.load`` of the addresses ``ptr`` (computed at replay: a row picked by
    loaded indices) under ``mask``, the masked lanes ``other``: one numpy gather from a window over
    the live lanes' address range instead of a C++ call per lane. C-ordered, as the interpreter's."""
    found = _live_pointers(ptr, mask)
    window = _window(found[0], dt) if found is not None else None
    if window is None:
        return native.load(ptr, mask, other, dt)
    values = window[0][window[1]]
    live = found[1]
    if live is not None:
        values = np.where(live, values, other)
    return np.ascontiguousarray(values, dtype=dt)


def load_rows(rows, cols, mask, other, dt):
    """``load_addresses`` of the pointers ``rows + cols``: a (R, 1) column of addresses computed at
    replay (rows picked by loaded indices) plus constant (1, C) byte offsets, as a 2-d row gather
    reads. The window and its checks come from the R + C values, not the R x C lanes, and the
    lanes are indexed as row index plus column index."""
    shape = (rows.shape[0], cols.shape[1])
    live = np.broadcast_to(mask, shape)
    if live.size < WINDOW_LANES or rows.dtype != np.uint64:
        return native.load(rows + cols, np.ascontiguousarray(live),
                           np.ascontiguousarray(np.broadcast_to(other, shape), dtype=dt), dt)
    live_rows, live_cols = live.any(axis=1), live.any(axis=0)
    if not live_rows.any():
        return np.array(np.broadcast_to(other, shape), dtype=dt)
    r = rows.reshape(-1)
    r = np.where(live_rows, r, r[int(live_rows.argmax())])
    c = cols.reshape(-1)[live_cols].astype(np.int64)
    size = dt.itemsize
    r_lo, c_lo = int(r.min()), int(c.min())
    if size & (size - 1) or (r_lo + c_lo) % size or int(np.bitwise_or.reduce(r - np.uint64(r_lo))) % size or \
            int(np.bitwise_or.reduce(c - c_lo)) % size:
        return native.load(rows + cols, np.ascontiguousarray(live),
                           np.ascontiguousarray(np.broadcast_to(other, shape), dtype=dt), dt)
    shift = size.bit_length() - 1
    nbytes = int(r.max()) - r_lo + int(c.max()) - c_lo + size
    window = np.frombuffer((ctypes.c_char * nbytes).from_address(r_lo + c_lo), dtype=dt)
    index = ((r - np.uint64(r_lo)).view(np.int64) >> shift)[:, None] + \
        ((cols.reshape(1, -1).astype(np.int64) - c_lo) >> shift)
    values = window[np.where(live, index, 0)]  # a masked lane reads the window's first element, never outside
    return np.ascontiguousarray(np.where(live, values, other), dtype=dt)


def store_addresses(ptr, value, mask):
    """The interpreter's ``native.store`` of ``value`` at the addresses ``ptr`` (computed at replay)
    under ``mask``: one numpy assignment through a window over the live lanes' addresses. The lanes
    go in C order through a 1-d index, which numpy assigns one by one in order, as the interpreter's
    loop does: a repeated address keeps the last live lane's value (a block whose padding lanes
    alias the next row's addresses)."""
    live = np.broadcast_to(mask, ptr.shape)
    p = ptr[live] if ptr.dtype == np.uint64 and ptr.size >= WINDOW_LANES else None
    value = np.asarray(value)
    window = _window(p, value.dtype) if p is not None and p.size else None
    if window is None:
        if p is None or p.size:
            native.store(ptr, value, mask)
    else:
        window[0][window[1]] = np.broadcast_to(value, ptr.shape)[live]


def atomic_add_addresses(ptr, value, mask, dt, interpreted):
    """An atomic add of ``value`` (of ``dt``, the pointers' element type) at the addresses ``ptr``
    under ``mask`` whose result (the old values) nothing reads: ``np.add.at`` on a window over the
    live lanes' addresses, which adds lane by lane in C order as the interpreter's loop does (a
    repeated address sums in the same order: the same bits). ``interpreted(ptr, value, mask)`` (the
    recorded builder call) where no window serves."""
    live = np.broadcast_to(mask, ptr.shape)
    p = ptr[live] if ptr.dtype == np.uint64 and ptr.size >= WINDOW_LANES else None
    window = _window(p, dt) if p is not None and p.size else None
    if window is None:
        if p is None or p.size:
            interpreted(ptr, value, mask)
    else:
        np.add.at(window[0], window[1], np.broadcast_to(value, ptr.shape)[live])


def live_prefix(mask, shape):
    """How many leading lanes (C order) of a block of ``shape`` are live, when exactly those are."""
    if np.shape(mask) != shape:
        return None
    flat = mask.reshape(-1)
    live = int(np.count_nonzero(flat))
    return live if live == flat.size or not flat[live:].any() else None


def run_pointers(base, start, shape, size):
    """The pointers ``base + start + i * size`` of a block, as the interpreter computed them."""
    first = np.uint64((int(base.reshape(-1)[0]) + start) % (1 << 64))
    with np.errstate(over="ignore"):
        return (first + np.arange(math.prod(shape), dtype=np.uint64) * np.uint64(size)).reshape(shape)


def run_load(base, start, mask, filled, other, dt):
    """A masked load of ``base + start + i * size`` (the interpreter's ``native.load`` on those
    pointers): when the live lanes are a prefix, one copy of that run of memory."""
    live = live_prefix(mask, filled.shape)
    if live is None:
        return native.load(run_pointers(base, start, filled.shape, dt.itemsize), mask, other, dt)
    out = np.array(filled, dtype=dt)  # a C-ordered copy, as the interpreter returns
    if live:
        out.reshape(-1)[:live] = memory_view(int(base.reshape(-1)[0]) + start, live * dt.itemsize, dt)
    return out


def run_store(base, start, mask, value, shape, dt):
    """A masked store to ``base + start + i * size`` over a block of ``shape`` (the interpreter's
    ``native.store``): a prefix of live lanes is one copy into that run of memory."""
    live = live_prefix(mask, shape)
    if live is None:
        return native.store(run_pointers(base, start, shape, dt.itemsize), value, mask)
    if live:
        memory_view(int(base.reshape(-1)[0]) + start, live * dt.itemsize, dt)[:] = \
            np.broadcast_to(value, shape).reshape(-1)[:live]
    return None


def gather(view, index, mask, filled):
    """A load through fixed offsets under a mask computed from data: the masked lanes' values,
    then the live lanes read from the view (only those: a masked lane's offset may lie outside)."""
    out = np.array(filled)
    out[mask] = view[index[mask]]
    return out


def _live_count(n, first, block):
    live = int(n.reshape(-1)[0]) - first
    return 0 if live < 0 else block if live > block else live


def prefix_load(view, n, first, filled):
    """``gather`` under the mask ``first + arange(B) < n``: its live lanes, the first ones, copied as a slice."""
    out = np.array(filled)
    live = _live_count(n, first, out.size)
    out[:live] = view[:live]
    return out


def prefix_store(view, n, first, value):
    """A store of ``value`` (B lanes) under the mask ``first + arange(B) < n`` into lanes 0..B-1 of ``view``."""
    live = _live_count(n, first, value.shape[0])
    view[:live] = value[:live]


def fill_live(filled, where, view):
    """A masked load whose live lanes read ``view`` in order: the masked lanes' values, then the view."""
    out = filled.copy()
    out[where] = view
    return out


def address_range(addresses):
    """(addresses, lowest, highest) of one store, for ``overlaps``."""
    if addresses.size == 0:
        return addresses, 1, 0
    return addresses, int(addresses.min()), int(addresses.max())


def run_range(base, start, mask, shape, size):
    """``address_range`` of a store to ``base + start + i * size``: with a prefix of live lanes,
    (None, lowest, highest) (every address between, a step of ``size`` apart), no address array."""
    live = live_prefix(mask, shape)
    if live is None:
        return address_range(run_pointers(base, start, shape, size)[np.broadcast_to(mask, shape)])
    if live == 0:
        return np.zeros(0, np.uint64), 1, 0
    lo = int(base.reshape(-1)[0]) + start
    return None, lo, lo + (live - 1) * size


def overlaps(loads, load_width, stores, store_width) -> bool:
    """Whether any byte range [load, load + load_width) meets a [store, store + store_width) of the
    stores so far: first by address range (a table read after stores to other tensors), then exactly."""
    if not stores or loads.size == 0:
        return False
    if loads.size == 1:  # one table entry read after stores: compared in Python ints
        a = int(loads.reshape(-1)[0])
        for s, s_lo, s_hi in stores:
            if s_lo < a + load_width and a < s_hi + store_width:
                if s is None or bool(((s < np.uint64(a + load_width)) & (s + np.uint64(store_width) >
                                                                           np.uint64(a))).any()):
                    return True
        return False
    lo, hi = int(loads.min()), int(loads.max()) + load_width
    near = [(s, s_lo, s_hi) for s, s_lo, s_hi in stores if s_lo < hi and lo < s_hi + store_width]
    for s, s_lo, s_hi in near:  # a run of memory: every byte from its lowest to its highest store
        if s is None and bool(((loads < np.uint64(s_hi + store_width)) & (loads + np.uint64(load_width) >
                                                                          np.uint64(s_lo))).any()):
            return True
    near = [s for s, _, _ in near if s is not None]
    if not near:
        return False
    s = np.sort(np.concatenate(near))
    idx = np.searchsorted(s, loads - np.uint64(store_width), side="right")  # first store above load - width
    hit = idx < s.size
    return bool((s[idx[hit]] < loads[hit] + np.uint64(load_width)).any())
