"""The program fuzzer's ops on edge cases (``fuzz_programs.py`` draws them with the others): 0-size
operands of index_select, gather and the products, the views unbind/split/chunk return, and in-place
ops writing expanded targets, where an op's edge cases and its errors live. Each op is
``(L, F, x, others, (seed, a, b)) -> value`` on ``torch`` or ``tgrad``, as in ``fuzz_programs.OPS``."""
from __future__ import annotations

EDGE_OPS = {}


def _op(name, n=0):
    def deco(fn):
        EDGE_OPS[name] = (fn, n)
        return fn
    return deco


def dim_of(x, k):
    """Dim k of x taken modulo its ndim (0 for a 0-dim tensor)."""
    return k % max(x.ndim, 1) if x.ndim else 0


@_op("one:index_select")
def _index_select(L, F, x, others, s):
    """Indices none, in range, repeated or out of range (both signs), over dims of any size (0 too)."""
    d = dim_of(x, s[2])
    n = x.shape[d] if x.ndim else 1
    idx = [[], [0], [n - 1, 0, n - 1], [n], [-1]][s[1] % 5]
    return x.index_select(d, L.tensor(idx, dtype=L.int64 if s[2] % 3 else L.int32))


@_op("one:gather")
def _gather(L, F, x, others, s):
    """An index shaped like x with dims cut to 0 or 1 (or one longer along ``dim``), all 0 or all
    out of range."""
    d = dim_of(x, s[2])
    shape = [(n, 0, min(n, 1))[(s[1] + k) % 3] for k, n in enumerate(x.shape)]
    if shape and s[1] % 7 == 0:
        shape[d] += 1
    n = x.shape[d] if x.ndim else 1
    return x.gather(d, L.full(tuple(shape), n if s[2] % 5 == 0 else 0, dtype=L.int64))


@_op("one:matmul_empty")
def _matmul_empty(L, F, x, others, s):
    """x against a ones matrix with a dim of 0 or 2, through @, mm, inner or on the left; the inner
    sizes sometimes differ (PyTorch's error)."""
    k = x.shape[-1] if x.ndim else 0
    m = x.shape[-2] if x.ndim >= 2 else k
    n, off, kind = (0, 2)[s[1] % 2], int(s[2] % 4 == 0), (s[1] // 2) % 4
    ones = (lambda *shape: L.ones(*shape, dtype=x.dtype))
    return [lambda: x @ ones(k + off, n), lambda: L.mm(x, ones(k + off, n)), lambda: L.inner(x, ones(n, k + off)),
            lambda: ones(n, m + off) @ x][kind]()


def _parts(x, s):
    d = dim_of(x, s[2])
    kind = s[1] % 3
    parts = x.unbind(d) if kind == 0 else x.split(1 + s[1] % 3, d) if kind == 1 else x.chunk(1 + s[1] % 4, d)
    return parts[s[2] % max(len(parts), 1)]  # (no part of a size-0 dim: IndexError in both)


@_op("one:multi_view")
def _multi_view(L, F, x, others, s):
    """One of the views unbind, split or chunk return (the pool's later in-place ops reach it too)."""
    return _parts(x, s)


@_op("one:multi_view_")
def _multi_view_inplace(L, F, x, others, s):
    """An in-place op on one of several views an op returned: refused while it requires grad."""
    v = _parts(x, s)
    return [lambda: v.mul_(2), lambda: v.zero_(), lambda: v.add_(1)][s[2] % 3]()


@_op("one:expanded_")
def _expanded_inplace(L, F, x, others, s):
    """An in-place op writing an expanded tensor (a new dim of 1 or 2, or x's size-1 dims widened),
    where elements share memory: PyTorch refuses most, fill_ and zero_ too."""
    shape = [3 if n == 1 and s[2] % 2 else n for n in x.shape]
    lead = (1 + s[2] % 3 // 2,) if s[2] % 4 or not x.ndim else ()
    e = x.expand(*lead, *shape)
    return [lambda: e.add_(1), lambda: e.mul_(2), lambda: e.fill_(0.5), lambda: e.zero_(),
            lambda: e.copy_(L.ones_like(e)), lambda: e.clamp_(min=0)][s[1] % 6]()


@_op("one:index_put")
def _index_put(L, F, x, others, s):
    """index_put, or index_put_ on x itself, at dim-0 indices none, in range, repeated or out of
    range, accumulating or not, of a 0-d value, x's own first row (memory shared: refused in place;
    a copy unless x is contiguous, where PyTorch's check gives up and its loop order decides) or a
    value of another dtype (refused)."""
    n = x.shape[0] if x.ndim else 1
    index = L.tensor([[], [0], [n - 1, 0, n - 1], [n], [-1]][s[1] % 5], dtype=L.int64)
    value = [lambda: L.full((), 0.5, dtype=x.dtype), lambda: x[:1] if x.is_contiguous() else x[:1].clone(),
             lambda: L.ones((), dtype=L.int16)][s[2] % 3]()
    accumulate = bool(s[1] % 2)
    if s[2] % 4 == 0:
        return x.index_put_((index,), value, accumulate=accumulate)
    return L.index_put(x, (index,), value, accumulate)


@_op("one:fill_diagonal_")
def _fill_diagonal(L, F, x, others, s):
    """fill_diagonal_ of x (2 or more equal dims; else PyTorch's error), wrapped where x is
    contiguous (docs/differences.md: PyTorch wraps another layout through its storage)."""
    return x.fill_diagonal_([0.5, -1, 2.0][s[1] % 3], wrap=bool(s[2] % 2) and x.is_contiguous())
