"""Property-based tests (hypothesis): random shapes, broadcast pairs, memory layouts and reduction
dims, for elementwise ops, reductions, matmul and movement ops, forward and backward against PyTorch
in float64 on the same numbers.

Shapes have 0 to 4 dims of sizes 0 to 70 (at most ``MAX_NUMEL`` elements, which keeps the
interpreter fast); layouts are contiguous, permuted (the storage is allocated in another dim order),
sliced with a step, or broadcast (stride 0, read-only inputs). The number of examples comes from a
hypothesis profile chosen by the environment variable ``TGRAD_HYPOTHESIS_PROFILE``:

- ``ci`` (the default): ``CI_EXAMPLES`` examples per property, derandomized (the same examples on
  every run, so CI is stable);
- ``full``: 200 examples per property, random (``TGRAD_HYPOTHESIS_PROFILE=full pytest
  tests/ops/test_properties.py``).
"""
from __future__ import annotations

import math
import os

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tgrad

CI_EXAMPLES = 25
settings.register_profile("tgrad-ci", max_examples=CI_EXAMPLES, deadline=None, derandomize=True,
                          database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("tgrad-full", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = os.environ.get("TGRAD_HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "full"):
    raise ValueError(f"TGRAD_HYPOTHESIS_PROFILE must be 'ci' or 'full', got {PROFILE!r}")
SETTINGS = settings.get_profile(f"tgrad-{PROFILE}")  # a decorator: no global profile is loaded

MAX_SIDE, MAX_DIMS, MAX_NUMEL = 70, 4, 3000
F64 = torch.float64
DTYPES = st.sampled_from([torch.float32, torch.float64])


# ----------------------------------------------------------------------------- strategies

@st.composite
def shapes(draw, min_dims=0, max_dims=MAX_DIMS, max_numel=MAX_NUMEL):
    """Up to 4 dims of 0..70 (small sizes, 0 and 1 likely) with at most max_numel elements."""
    n = draw(st.integers(min_dims, max_dims))
    shape, numel = [], 1
    for _ in range(n):
        cap = max(1, min(MAX_SIDE, max_numel // max(numel, 1)))
        side = draw(st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(0, cap))) if cap >= 3 else \
            draw(st.integers(0, cap))
        side = min(side, cap)
        shape.append(side)
        numel *= max(side, 1)
    return tuple(shape)


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: the second keeps, ones out, or drops each dim of the first."""
    a = draw(shapes())
    b = []
    for i, side in enumerate(a):
        if i < len(a) - 2 and not b and draw(st.booleans()):
            continue  # a missing leading dim
        b.append(side if draw(st.integers(0, 2)) else 1)
    if draw(st.booleans()):
        a, b = tuple(b), a
    return tuple(a), tuple(b)


LAYOUTS = st.sampled_from(["contiguous", "permuted", "stepped", "broadcast"])


def make(shape, layout, dtype, seed, low=-2.0, high=2.0):
    """(tgrad leaf, float64 torch leaf) with equal values, laid out as ``layout``."""
    gen = torch.Generator().manual_seed(seed)
    values = (torch.rand(shape, generator=gen, dtype=F64) * (high - low) + low).to(dtype)
    n = len(shape)
    if layout == "permuted" and n >= 2:
        order = list(reversed(range(n)))
        data = values.permute(order).contiguous().permute(order)  # same values, reversed strides
    elif layout == "stepped" and n >= 1:
        big = torch.empty(shape[:-1] + (2 * shape[-1],), dtype=dtype)
        big[..., ::2] = values
        data = big[..., ::2]
    elif layout == "broadcast" and n >= 1 and shape[0] > 1:
        data = values[:1].expand(shape)  # stride 0 on dim 0
        values = data.clone()
    else:
        data = values.clone()
    x = tgrad.from_torch(data).requires_grad_()
    return x, values.to(F64).requires_grad_()


def tolerance(dtype, terms=1):
    """(rtol, atol): float32 sums of ``terms`` products round ~sqrt(terms) times more."""
    if dtype == F64:
        return 1e-9, 1e-11 * terms
    return 1e-4, 2e-6 * max(1.0, math.sqrt(terms)) * 4


def compare(got, want, dtype, terms=1, what=""):
    rtol, atol = tolerance(dtype, terms)
    g = got.torch() if isinstance(got, tgrad.Tensor) else got
    assert tuple(g.shape) == tuple(want.shape), f"{what}: shape {tuple(g.shape)} != {tuple(want.shape)}"
    torch.testing.assert_close(g.detach().to(F64), want.detach().to(F64), rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


def forward_backward(fn, inputs, refs, dtype, seed, terms=1, what=""):
    """fn on tgrad and torch, then backward with a random upstream gradient; compares all."""
    y, yr = fn(*inputs), fn(*refs)
    compare(y, yr, dtype, terms, what + " forward")
    if not y.requires_grad:
        return
    gen = torch.Generator().manual_seed(seed + 1)
    up = (torch.rand(tuple(yr.shape), generator=gen, dtype=F64) - 0.5).to(dtype)
    y.backward(tgrad.from_torch(up.clone()))
    yr.backward(up.to(F64))
    for i, (x, r) in enumerate(zip(inputs, refs)):
        if r.grad is None:
            assert x.grad is None or not x.grad.torch().any(), f"{what}: input {i} got a gradient torch has not"
            continue
        assert x.grad is not None, f"{what}: no gradient for input {i}"
        assert x.grad.dtype is x.dtype and tuple(x.grad.shape) == tuple(x.shape)
        compare(x.grad, r.grad, dtype, terms * max(1, y.numel() // max(1, x.numel())), f"{what} grad {i}")


# ----------------------------------------------------------------------------- elementwise

def _lib(x):
    return tgrad if isinstance(x, tgrad.Tensor) else torch


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - 2.5 * b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5), "maximum": lambda a, b: _lib(a).maximum(a, b),
    "where": lambda a, b: _lib(a).where(a > b, a, b * 3), "pow": lambda a, b: (a.abs() + 0.5) ** b,
}


@SETTINGS
@given(pair=broadcast_pair(), layouts=st.tuples(LAYOUTS, LAYOUTS), op=st.sampled_from(sorted(BINARY)),
       dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_binary_elementwise_with_broadcasting(pair, layouts, op, dtype, seed):
    (a, ar), (b, br) = make(pair[0], layouts[0], dtype, seed), make(pair[1], layouts[1], dtype, seed + 7)
    forward_backward(BINARY[op], [a, b], [ar, br], dtype, seed, what=f"{op} {pair} {layouts}")


UNARY = {"exp": lambda x: (x * 0.5).exp(), "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
         "relu": lambda x: x.relu(), "abs": lambda x: x.abs(), "sin": lambda x: x.sin(),
         "log": lambda x: (x.abs() + 0.1).log(), "sqrt": lambda x: (x.abs() + 0.1).sqrt(),
         "square": lambda x: x ** 2, "neg-reciprocal": lambda x: -(1 / (x.abs() + 0.5)),
         "clamp": lambda x: x.clamp(-1.0, 0.5)}


@SETTINGS
@given(shape=shapes(), layout=LAYOUTS, op=st.sampled_from(sorted(UNARY)), dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_unary_elementwise(shape, layout, op, dtype, seed):
    x, xr = make(shape, layout, dtype, seed)
    forward_backward(UNARY[op], [x], [xr], dtype, seed, what=f"{op} {shape} {layout}")


# ----------------------------------------------------------------------------- reductions

@st.composite
def reduction(draw):
    shape = draw(shapes(min_dims=1))
    dims = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                         unique_by=lambda d: d % len(shape)))
    return shape, tuple(dims), draw(st.booleans())


REDUCTIONS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k), "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k), "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k), "logsumexp": lambda x, d, k: x.logsumexp(d, keepdim=k),
    "prod": lambda x, d, k: (x * 0.3 + 1).prod(d[0], keepdim=k),
    "max-values": lambda x, d, k: x.max(d[0], keepdim=k).values,
    "softmax": lambda x, d, k: x.softmax(d[0]), "log_softmax": lambda x, d, k: x.log_softmax(d[0]),
}
EMPTY_OK = {"sum", "prod", "logsumexp", "softmax", "log_softmax"}  # defined (or nan like torch) over size 0


@pytest.mark.filterwarnings("ignore:var.*degrees of freedom")  # torch's, for empty inputs
@SETTINGS
@given(case=reduction(), layout=LAYOUTS, op=st.sampled_from(sorted(REDUCTIONS)), dtype=DTYPES,
       seed=st.integers(0, 2 ** 16))
def test_reductions_over_random_dims(case, layout, op, dtype, seed):
    shape, dims, keepdim = case
    reduced = math.prod(shape[d] for d in dims)
    if op == "var":
        assume(reduced > 1)
    elif op not in EMPTY_OK:
        assume(reduced > 0)
    x, xr = make(shape, layout, dtype, seed)
    forward_backward(lambda t: REDUCTIONS[op](t, dims, keepdim), [x], [xr], dtype, seed, terms=max(reduced, 1),
                     what=f"{op} {shape} dims={dims} keepdim={keepdim} {layout}")


@SETTINGS
@given(case=reduction(), layout=LAYOUTS, dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_argmax_picks_torch_index(case, layout, dtype, seed):
    shape, dims, _ = case
    assume(shape[dims[0]] > 0)
    x, xr = make(shape, layout, dtype, seed)
    assert torch.equal(x.argmax(dims[0]).torch(), xr.argmax(dims[0]))
    assert torch.equal(x.max(dims[0]).indices.torch(), xr.max(dims[0]).indices)


# ----------------------------------------------------------------------------- matmul

@st.composite
def matmul_shapes(draw):
    """Shapes for a @ b: 1-d or (batched) 2-d on each side, broadcast batch dims, sizes up to 70."""
    m, k, n = (draw(st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(0, MAX_SIDE))) for _ in range(3))
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    kind_a, kind_b = draw(st.sampled_from(["vec", "mat"])), draw(st.sampled_from(["vec", "mat"]))
    a = (k,) if kind_a == "vec" else tuple(batch) + (m, k)
    b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    b = (k,) if kind_b == "vec" else tuple(b_batch) + (k, n)
    assume(math.prod(a) <= MAX_NUMEL and math.prod(b) <= MAX_NUMEL)
    return a, b


@SETTINGS
@given(ab=matmul_shapes(), layouts=st.tuples(LAYOUTS, LAYOUTS), dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_matmul_shapes_and_layouts(ab, layouts, dtype, seed):
    (a, ar), (b, br) = make(ab[0], layouts[0], dtype, seed), make(ab[1], layouts[1], dtype, seed + 3)
    k = ab[0][-1]
    forward_backward(lambda u, v: u @ v, [a, b], [ar, br], dtype, seed, terms=max(k, 1), what=f"matmul {ab} {layouts}")


# ----------------------------------------------------------------------------- movement ops

@st.composite
def movement(draw):
    """A shape and a chain of 1-3 movement ops valid for it (applied to tgrad and torch alike)."""
    shape = draw(shapes(min_dims=1))
    ops, cur = [], list(shape)
    for _ in range(draw(st.integers(1, 3))):
        n = len(cur)
        choice = draw(st.sampled_from(["permute", "transpose", "reshape", "unsqueeze", "squeeze", "slice",
                                       "expand", "flatten", "narrow", "select", "cat", "stack", "t"]))
        if choice == "permute":
            perm = draw(st.permutations(range(n)))
            ops.append(("permute", lambda x, p=tuple(perm): x.permute(*p)))
            cur = [cur[p] for p in perm]
        elif choice == "transpose" and n >= 2:
            i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
            ops.append(("transpose", lambda x, i=i, j=j: x.transpose(i, j)))
            cur[i], cur[j] = cur[j], cur[i]
        elif choice == "reshape":
            numel = math.prod(cur)
            new = [numel] if numel else [0]
            if numel and draw(st.booleans()):
                f = draw(st.sampled_from([d for d in range(1, min(numel, 70) + 1) if numel % d == 0]))
                new = [numel // f, f]
            ops.append(("reshape", lambda x, s=tuple(new): x.reshape(s)))
            cur = new
        elif choice == "unsqueeze":
            d = draw(st.integers(0, n))
            ops.append(("unsqueeze", lambda x, d=d: x.unsqueeze(d)))
            cur.insert(d, 1)
        elif choice == "squeeze" and 1 in cur:
            d = cur.index(1)
            ops.append(("squeeze", lambda x, d=d: x.squeeze(d)))
            cur.pop(d)
        elif choice == "slice" and cur[-1] > 0:
            start, step = draw(st.integers(0, cur[-1] - 1)), draw(st.integers(1, 3))
            ops.append(("slice", lambda x, a=start, s=step: x[..., a::s]))
            cur[-1] = len(range(start, cur[-1], step))
        elif choice == "expand" and 1 in cur and math.prod(cur) <= MAX_NUMEL // 4:
            d = cur.index(1)
            new = list(cur)
            new[d] = 3
            ops.append(("expand", lambda x, s=tuple(new): x.expand(*s)))
            cur = new
        elif choice == "flatten" and n >= 2:
            ops.append(("flatten", lambda x: x.flatten(0, 1)))
            cur = [cur[0] * cur[1]] + cur[2:]
        elif choice == "narrow" and cur[0] > 0:
            start = draw(st.integers(0, cur[0] - 1))
            length = draw(st.integers(0, cur[0] - start))
            ops.append(("narrow", lambda x, a=start, b=length: x.narrow(0, a, b)))
            cur[0] = length
        elif choice == "select" and cur[0] > 0:
            i = draw(st.integers(-cur[0], cur[0] - 1))
            ops.append(("select", lambda x, i=i: x.select(0, i)))
            cur.pop(0)
        elif choice in ("cat", "stack") and math.prod(cur) <= MAX_NUMEL // 3:
            d = draw(st.integers(0, n - 1 if choice == "cat" else n)) if n else 0
            if choice == "cat" and n == 0:
                continue
            ops.append((choice, lambda x, d=d, c=choice: _lib(x).cat([x, x * 2], d) if c == "cat"
                        else _lib(x).stack([x, x * 2], d)))
            if choice == "cat":
                cur[d] *= 2
            else:
                cur.insert(d, 2)
        elif choice == "t" and n <= 2:
            ops.append(("t", lambda x: x.t()))
            cur = cur[::-1]
        if not cur:
            break
    return shape, ops


@SETTINGS
@given(case=movement(), layout=LAYOUTS, dtype=DTYPES, seed=st.integers(0, 2 ** 16))
def test_movement_op_chains(case, layout, dtype, seed):
    shape, ops = case
    assume(ops)
    x, xr = make(shape, layout, dtype, seed)

    def run(t):
        for _, op in ops:
            t = op(t)
        return t * 1.5  # a computed result: its backward runs through every view

    forward_backward(run, [x], [xr], dtype, seed, what=f"{shape} {[name for name, _ in ops]} {layout}")


def test_profile_is_selected_by_the_environment():
    assert SETTINGS.max_examples == (200 if PROFILE == "full" else CI_EXAMPLES)
    assert SETTINGS.deadline is None and SETTINGS.derandomize == (PROFILE == "ci")


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2), ()])
def test_strategies_reach_the_edges(shape):
    """The layouts handle empty and 0-d shapes (hypothesis draws them; here they are pinned)."""
    for layout in ("contiguous", "permuted", "stepped", "broadcast"):
        x, xr = make(shape, layout, torch.float32, 0)
        forward_backward(lambda t: (t * 2).sum(), [x], [xr], torch.float32, 0, what=f"{shape} {layout}")
