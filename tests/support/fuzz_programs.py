"""Random programs for the differential fuzzers (``test_fuzz.py``, ``test_fuzz_nn.py``).

A program is plain data (so hypothesis can shrink it): leaf specs and a list of steps, each step an
op name and small integers/floats that the interpreter maps onto the current values (a dim is taken
modulo the tensor's ndim, an operand index modulo the pool). ``execute(L, F, program, upcast)``
runs it on ``torch`` or ``tgrad`` (``upcast``: float16/float32 leaves become float64, the value
reference) and returns every value the program made plus the leaves' gradients for a fixed random
upstream gradient, or where it raised.
"""
from __future__ import annotations

import numpy as np
import torch

from tgrad.ops.table import ROWS

from support.fuzz_edge_ops import EDGE_OPS, dim_of as _dim

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0, -1.0, 2.5]
DTYPES = ["float32", "float64", "float16", "int64", "int32", "bool"]
LAYOUTS = ["contiguous", "permuted", "sliced", "expanded", "odd1"]


def leaf_data(shape, dtype, seed, special):
    rng = np.random.RandomState(seed)
    if dtype == "bool":
        return rng.rand(*shape) < 0.5
    if dtype.startswith("int"):
        return rng.randint(-6, 7, size=shape).astype(dtype)
    a = np.round(rng.uniform(-3, 3, size=shape) * 4) / 4  # quarter steps: ties for round/floor
    if special and a.size:
        mask = rng.rand(*shape) < 0.3
        a = np.where(mask, np.array(SPECIAL)[rng.randint(0, len(SPECIAL), size=shape)], a)
    return a.astype(dtype if dtype != "float16" else "float16")


def make_leaf(L, spec, upcast):
    """A leaf of ``spec = (shape, dtype, layout, seed, special, requires_grad)`` laid out as asked
    (the same numbers and the same view in both libraries); returns (leaf, value)."""
    shape, dtype, layout, seed, special, requires_grad = spec
    shape = tuple(shape)
    dt = "float64" if upcast and dtype in ("float32", "float16") else dtype
    rng = np.random.RandomState(seed + 1)
    nd = len(shape)
    if layout == "permuted" and nd >= 2:
        perm = list(rng.permutation(nd))
        base_shape = tuple(shape[p] for p in perm)
        data = leaf_data(base_shape, dtype, seed, special)
        leaf = L.tensor(data.astype(dt), dtype=getattr(L, dt))
        inv = list(np.argsort(perm))
        value = leaf.permute(*inv)
    elif layout == "sliced" and nd >= 1:
        big = tuple(2 * s + 1 for s in shape)
        data = leaf_data(big, dtype, seed, special)
        leaf = L.tensor(data.astype(dt), dtype=getattr(L, dt))
        value = leaf[tuple(slice(1, None, 2) for _ in shape)]
    elif layout == "expanded" and nd >= 1:
        small = tuple(1 if rng.rand() < 0.5 else s for s in shape)
        data = leaf_data(small, dtype, seed, special)
        leaf = L.tensor(data.astype(dt), dtype=getattr(L, dt))
        value = leaf.expand(*shape)
    elif layout == "odd1" and nd >= 1:  # size-1 dims cut from a wider dim, the rest transposed
        big = tuple(3 if s == 1 else s for s in shape)
        data = leaf_data(big[::-1], dtype, seed, special)
        leaf = L.tensor(data.astype(dt), dtype=getattr(L, dt))
        value = leaf.permute(*reversed(range(nd)))
        for d, s in enumerate(shape):
            if s == 1:
                value = value.narrow(d, 1, 1)
    else:
        data = leaf_data(shape, dtype, seed, special)
        leaf = L.tensor(data.astype(dt), dtype=getattr(L, dt))
        value = leaf
    if requires_grad and dt.startswith("float"):
        leaf.requires_grad_()
        value = leaf if value is leaf else _replay(L, leaf, value, layout, shape, rng, spec)
    return leaf, value


def _replay(L, leaf, value, layout, shape, rng, spec):
    """The view again, now from a leaf that requires grad (so the view has a history)."""
    _, dtype, _, seed, _, _ = spec
    rng = np.random.RandomState(seed + 1)
    nd = len(shape)
    if layout == "permuted":
        perm = list(rng.permutation(nd))
        return leaf.permute(*list(np.argsort(perm)))
    if layout == "sliced":
        return leaf[tuple(slice(1, None, 2) for _ in shape)]
    if layout == "expanded":
        return leaf.expand(*shape)
    out = leaf.permute(*reversed(range(nd)))
    for d, s in enumerate(shape):
        if s == 1:
            out = out.narrow(d, 1, 1)
    return out


# ----------------------------------------------------------------------------- the op catalogue

def _row_call(row):
    name = row.name
    n = len(row.operands)

    def call(L, F, x, others, step):
        if "torch" in row.where:
            return getattr(L, name)(x, *others[:n])
        if "Tensor" in row.where:
            return getattr(x, name)(*others[:n])
        return getattr(F, name)(x, *others[:n])
    return call, n


def _row_inplace(row):
    name = row.name

    def call(L, F, x, others, step):
        if "Tensor" in row.where:
            return getattr(x, name + "_")(*others[:len(row.operands)])
        return getattr(F, name)(x, *others[:len(row.operands)], inplace=True)
    return call, len(row.operands)


# Ops whose PyTorch CPU gradient at NaN depends on where the element falls (the vectorized body of
# the loop gives 0, its scalar tail passes g; docs/differences.md): the fuzzer gives them no NaN.
NAN_GRADIENT_BY_POSITION = ("hardtanh", "relu6", "elu", "selu", "celu", "hardswish")


def _without_nan(op):
    call, n = op

    def wrapped(L, F, x, others, step):
        if x.dtype.is_floating_point:  # (in place, the op then writes into this NaN-free copy)
            x = L.where(x != x, L.zeros_like(x), x)
        return call(L, F, x, others, step)
    return wrapped, n


# Ops whose PyTorch CPU result on a tie of signed zeros (x = -0.0, bound = 0.0) depends on the
# tensor's size and layout (its vectorized body gives the bound, its scalar loop x; docs/differences.md): the
# fuzzer gives them no -0.0 (x + 0.0 is +0.0 for either zero). (clamp by one tensor bound too: bin:clamp_t.)
SIGNED_ZERO_TIE_BY_LAYOUT = ("clamp_min", "clamp_max")


def _without_negative_zero(op):
    call, n = op

    def wrapped(L, F, x, others, step):
        if x.dtype.is_floating_point:  # (in place, the op then writes into this copy)
            x = x + 0.0
        others = [o + 0.0 if hasattr(o, "dtype") and o.dtype.is_floating_point else o for o in others]
        return call(L, F, x, others, step)
    return wrapped, n


def _polygamma(L, x, n, as_function):
    """polygamma of order n >= 2 sums floor(9 - x) + 1 zeta terms for x < 0 (as PyTorch does), each a
    block's worth of interpreted ops, and gives NaN below x = -65,527 (docs/differences.md); a
    composed program reaches such values (polygamma near a pole is ~1e6), so float inputs are clamped
    at -40 first: up to 50 terms, past the 24 the series once stopped at."""
    if n >= 2 and x.dtype.is_floating_point:
        x = x.clamp(min=-40)
    return L.polygamma(n, x) if as_function else x.polygamma(n)


OPS = {}
for _row in ROWS:
    if _row.where:
        OPS["row:" + _row.name] = _row_call(_row)
        if _row.inplace:
            OPS["row_:" + _row.name] = _row_inplace(_row)
        if _row.name in NAN_GRADIENT_BY_POSITION:
            for _kind in ("row:", "row_:"):
                OPS[_kind + _row.name] = _without_nan(OPS[_kind + _row.name])
        if _row.name in SIGNED_ZERO_TIE_BY_LAYOUT:
            for _kind in ("row:", "row_:"):
                if _kind + _row.name in OPS:
                    OPS[_kind + _row.name] = _without_negative_zero(OPS[_kind + _row.name])


for _name, _expr in {
    "add": lambda L, F, a, b, s: a + b, "sub": lambda L, F, a, b, s: a - b, "mul": lambda L, F, a, b, s: a * b,
    "truediv": lambda L, F, a, b, s: a / b, "floordiv": lambda L, F, a, b, s: a // b,
    "mod": lambda L, F, a, b, s: a % b, "pow": lambda L, F, a, b, s: a ** b,
    "radd": lambda L, F, a, b, s: b + a, "rsub": lambda L, F, a, b, s: b - a, "rmul": lambda L, F, a, b, s: b * a,
    "rtruediv": lambda L, F, a, b, s: b / a, "rfloordiv": lambda L, F, a, b, s: b // a,
    "rmod": lambda L, F, a, b, s: b % a, "rpow": lambda L, F, a, b, s: b ** a,
    "and": lambda L, F, a, b, s: a & b, "or": lambda L, F, a, b, s: a | b, "xor": lambda L, F, a, b, s: a ^ b,
    "lshift": lambda L, F, a, b, s: a << b, "rshift": lambda L, F, a, b, s: a >> b,
    "lt": lambda L, F, a, b, s: a < b, "ge": lambda L, F, a, b, s: a >= b, "eq": lambda L, F, a, b, s: a == b,
    "maximum": lambda L, F, a, b, s: L.maximum(a, b), "minimum": lambda L, F, a, b, s: L.minimum(a, b),
    "add_alpha": lambda L, F, a, b, s: L.add(a, b, alpha=s[1] % 3 - 1 or 2),
    "div_floor": lambda L, F, a, b, s: L.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda L, F, a, b, s: L.div(a, b, rounding_mode="trunc"),
    "logical_and": lambda L, F, a, b, s: L.logical_and(a, b),
    "clamp_t": lambda L, F, a, b, s: L.clamp(a, min=b) if s[1] % 2 else L.clamp(a, max=b),
    "where": lambda L, F, a, b, s: L.where(a > 0, a, b),
    "broadcast_tensors": lambda L, F, a, b, s: L.broadcast_tensors(a, b)[s[1] % 2],
    # (PyTorch's isin views a gapped test_elements and can raise: it gets a contiguous one)
    "isin": lambda L, F, a, b, s: L.isin(a, b.contiguous() if hasattr(b, "contiguous") else b, invert=bool(s[1] % 2)),
    "heaviside": lambda L, F, a, b, s: L.heaviside(a, b),
    "equal": lambda L, F, a, b, s: L.tensor(L.equal(a, b) if s[1] % 2 else a.equal(b)),
    "iadd": lambda L, F, a, b, s: a.__iadd__(b), "imul": lambda L, F, a, b, s: a.__imul__(b),
    "isub": lambda L, F, a, b, s: a.__isub__(b), "itruediv": lambda L, F, a, b, s: a.__itruediv__(b),
    "ipow": lambda L, F, a, b, s: a.__ipow__(b), "ifloordiv": lambda L, F, a, b, s: a.__ifloordiv__(b),
    "imod": lambda L, F, a, b, s: a.__imod__(b), "iand": lambda L, F, a, b, s: a.__iand__(b),
    "clamp_": lambda L, F, a, b, s: a.clamp_(min=-1.0 if s[1] % 2 else None, max=1.5),
}.items():
    OPS["bin:" + _name] = ((lambda f: lambda L, F, x, others, s: f(L, F, x, others[0], s))(_expr), 1)
OPS["bin:clamp_t"] = _without_negative_zero(OPS["bin:clamp_t"])

for _name, _expr in {
    "clamp": lambda L, F, x, s: x.clamp(min=(s[1] % 5) - 2.5 if s[1] % 3 else None, max=1.0 if s[1] % 2 else None)
    if s[1] % 6 else x.clamp(min=float("nan")),
    "round": lambda L, F, x, s: L.round(x, decimals=s[1] % 3 - 1),
    "gelu": lambda L, F, x, s: F.gelu(x, approximate="tanh" if s[1] % 2 else "none"),
    "pow_scalar": lambda L, F, x, s: x ** [2, 3, 0.5, -1, 0, -2, 1.5, 2.0][s[1] % 8],
    "neg_op": lambda L, F, x, s: -x, "invert": lambda L, F, x, s: ~x, "abs_op": lambda L, F, x, s: abs(x),
    "isnan": lambda L, F, x, s: L.isnan(x), "logical_not": lambda L, F, x, s: L.logical_not(x),
    "to": lambda L, F, x, s: x.to(getattr(L, DTYPES[s[1] % len(DTYPES)])),
    # reductions
    "sum": lambda L, F, x, s: x.sum() if s[1] % 3 == 0 else x.sum(_dim(x, s[2]), keepdim=bool(s[1] % 2)),
    "mean": lambda L, F, x, s: x.mean() if s[1] % 3 == 0 else x.mean(_dim(x, s[2]), keepdim=bool(s[1] % 2)),
    "prod": lambda L, F, x, s: x.prod() if s[1] % 2 == 0 else x.prod(_dim(x, s[2])),
    "amax": lambda L, F, x, s: x.amax() if s[1] % 2 == 0 else x.amax(_dim(x, s[2])),
    "max_all": lambda L, F, x, s: x.max() if s[1] % 2 else x.min(),
    "max_dim": lambda L, F, x, s: x.max(_dim(x, s[2]), keepdim=bool(s[1] % 2))[0],
    "argmax": lambda L, F, x, s: x.argmax() if s[1] % 2 == 0 else x.argmax(_dim(x, s[2])),
    "var": lambda L, F, x, s: x.var() if s[1] % 3 == 0 else x.std(_dim(x, s[2]), unbiased=bool(s[1] % 2)),
    "logsumexp": lambda L, F, x, s: L.logsumexp(x, _dim(x, s[2])),
    "softmax": lambda L, F, x, s: (L.softmax if s[1] % 2 else L.log_softmax)(x, _dim(x, s[2])),
    "norm": lambda L, F, x, s: x.norm(),
    "unique_consecutive": lambda L, F, x, s: L.unique_consecutive(x, return_inverse=True, return_counts=True,
                                                                  dim=None if s[1] % 2 else _dim(x, s[2]))[s[2] % 3],
    "unravel_index": lambda L, F, x, s: L.unravel_index(x, (3, 2) if s[1] % 2 else 4)[0],
    "combinations": lambda L, F, x, s: L.combinations(x.reshape(-1)[:5], s[1] % 4, with_replacement=bool(s[2] % 2)),
    "polygamma": lambda L, F, x, s: _polygamma(L, x, s[1] % 4, s[2] % 2),
    "cov": lambda L, F, x, s: L.cov(x, correction=s[2] % 3) if s[1] % 2 else L.corrcoef(x),
    "all": lambda L, F, x, s: x.all() if s[1] % 2 else x.any(_dim(x, s[2])),
    # shapes
    "reshape": lambda L, F, x, s: x.reshape(-1), "view": lambda L, F, x, s: x.view(-1),
    "flatten": lambda L, F, x, s: x.flatten(), "t": lambda L, F, x, s: x.t(),
    "transpose": lambda L, F, x, s: x.transpose(_dim(x, s[1]), _dim(x, s[2])),
    "unsqueeze": lambda L, F, x, s: x.unsqueeze(s[1] % (x.ndim + 1)),
    "squeeze": lambda L, F, x, s: x.squeeze() if s[1] % 2 else x.squeeze(_dim(x, s[2])),
    "narrow": lambda L, F, x, s: x.narrow(_dim(x, s[1]), 0, min(1, x.shape[_dim(x, s[1])]) if x.ndim else 1),
    "slice": lambda L, F, x, s: x[::2] if s[1] % 3 == 0 else x[1:] if s[1] % 3 == 1 else x[..., :1],
    "index": lambda L, F, x, s: x[0] if x.ndim else x,
    "cat": lambda L, F, x, s: L.cat([x, x], _dim(x, s[1])), "stack": lambda L, F, x, s: L.stack([x, x]),
    "movedim": lambda L, F, x, s: x.movedim(0, -1) if x.ndim else x.movedim(0, 0),
    "contiguous": lambda L, F, x, s: x.contiguous(), "clone": lambda L, F, x, s: x.clone(),
    "mT": lambda L, F, x, s: x.mT, "expand": lambda L, F, x, s: x.expand(2, *x.shape),
    "detach": lambda L, F, x, s: x.detach(),
    "atleast": lambda L, F, x, s: (L.atleast_1d, L.atleast_2d, L.atleast_3d)[s[1] % 3](x),
    "stacks": lambda L, F, x, s: (L.hstack, L.vstack, L.column_stack, L.dstack)[s[1] % 4]([x, x]),
    # in place through a view
    "view_mul_": lambda L, F, x, s: x[..., :1].mul_(2) if x.ndim else x.mul_(2),
    "view_relu_": lambda L, F, x, s: F.relu(x.view(-1) if s[1] % 2 else x.t() if x.ndim == 2 else x, inplace=True),
    "fill_": lambda L, F, x, s: x.fill_(1.5),
    "matmul_t": lambda L, F, x, s: x @ x.mT if x.ndim >= 2 else x @ x,
}.items():
    OPS["one:" + _name] = ((lambda f: lambda L, F, x, others, s: f(L, F, x, s))(_expr), 0)

OPS.update(EDGE_OPS)
OP_NAMES = sorted(OPS)
SCALARS = [2, -1, 0, 3, 0.5, -1.5, 2.0, True, False, float("nan"), float("inf"), np.float64(1.5), np.int64(2),
           np.float32(-0.5)]


def _shares_storage(a, b):
    def storage(t):
        data = t.torch() if hasattr(t, "torch") and not isinstance(t, torch.Tensor) else t
        return data.untyped_storage().data_ptr() if isinstance(data, torch.Tensor) and data.numel() else None
    sa = storage(a) if hasattr(a, "shape") else None
    return sa is not None and sa == (storage(b) if hasattr(b, "shape") else None)


def _operand(L, pool, x, kind, seed, upcast):
    """The op's other operand: a value of the pool, a Python or NumPy scalar, or a fresh tensor of a
    shape that broadcasts against x."""
    rng = np.random.RandomState(seed)
    if kind == 0:
        return pool[seed % len(pool)]
    if kind == 1:
        return SCALARS[seed % len(SCALARS)]
    shape = tuple(1 if rng.rand() < 0.3 else s for s in x.shape)[int(rng.rand() < 0.3):]
    dtype = DTYPES[rng.randint(0, len(DTYPES))] if rng.rand() < 0.3 else "float64" if upcast and \
        x.dtype in (L.float32, L.float16) else str(x.dtype).split(".")[-1]
    if upcast and dtype in ("float32", "float16"):
        dtype = "float64"
    data = leaf_data(shape, dtype, seed, special=rng.rand() < 0.3)
    return L.tensor(data, dtype=getattr(L, dtype))


class UnspecifiedAlias(Exception):
    """An in-place op reads a view of the tensor it writes, one of the two gapped (docs/differences.md: PyTorch's
    overlap check gives up on gapped tensors and its result depends on its loop order): not compared."""


def _gapped(t):
    """Whether t's elements are spread over its storage with gaps (a slice with steps), not one
    dense block (in any dim order) and not overlapping (expanded)."""
    span = 1
    for stride, size in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n > 1):
        if stride < span:
            return False  # overlapping: PyTorch refuses to write it, and so does tgrad
        if stride > span:
            return True
        span *= size
    return False


def _reads_a_view_of_its_gapped_target(name, x, others):
    in_place = name.startswith("row_:") or name.startswith("bin:i") or name == "bin:clamp_"
    return in_place and hasattr(x, "stride") and any(
        o is not x and hasattr(o, "stride") and _shares_storage(o, x) and (_gapped(x) or _gapped(o)) for o in others)


def execute(L, F, program, upcast=False, round_to=None, nudge=1):
    """(values, grads, error): every value made (the pool), the leaves' gradients, and the
    exception the program stopped at (None). ``round_to`` (with ``upcast``): the dtype each pool
    value has in the program's own precision; each step's float64 result is rounded to it in place,
    or moved by a few ulps where it is float64, up or down at random per element (``nudge=-1``: each
    the other way; the computation on intermediates as inexact as that precision holds them: where
    that moves a value beyond the tolerance, the value is ill-conditioned in that precision:
    ``x.pow(x).pow(x) % 2``, or ``trunc`` of a value that is 1 or an ulp below)."""
    default = L.get_default_dtype()
    if upcast:  # the reference computes an integer leaf's exp() in float64 too
        L.set_default_dtype(L.float64)
    try:
        return _execute(L, F, program, upcast, round_to, nudge)
    finally:
        L.set_default_dtype(default)


def _execute(L, F, program, upcast, round_to, nudge):
    leaves_spec, steps, grad_seed = program
    leaves, pool = [], []
    try:
        for spec in leaves_spec:
            leaf, value = make_leaf(L, spec, upcast)
            leaves.append(leaf)
            pool.append(value)
    except Exception as exc:  # noqa: BLE001
        return [], [], exc
    error = None
    for step in steps:
        name, src, kind, seed, a, b = step
        fn, n = OPS[name]
        x = pool[src % len(pool)]
        try:
            others = [_operand(L, pool, x, kind, seed + i, upcast) for i in range(n)]
            if _reads_a_view_of_its_gapped_target(name, x, others):
                return pool, [], UnspecifiedAlias(name)
            out = fn(L, F, x, others, (seed, a, b))
        except Exception as exc:  # noqa: BLE001
            error = exc
            # what a refused in-place op leaves in its target is unspecified (PyTorch may have
            # written part of it before raising, as for x //= x with a zero in x): not compared
            pool = [v for v in pool if not _shares_storage(v, x)]
            break
        if round_to is not None and isinstance(out, L.Tensor) and len(pool) < len(round_to) and \
                out.dtype == L.float64 and round_to[len(pool)] in (L.float32, L.float16, L.float64):
            try:
                with L.no_grad():
                    if round_to[len(pool)] == L.float64:  # a few ulps, up or down
                        signs = nudge * np.random.RandomState(len(pool)).choice([-1.0, 1.0], size=tuple(out.shape))
                        out.mul_(L.tensor(1.0 + 4 * np.finfo(np.float64).eps * signs, dtype=L.float64))
                    else:
                        out.copy_(out.to(round_to[len(pool)]))
            except RuntimeError:  # an expanded result (memory written through many elements) stays
                pass
        pool.append(out)
    grads = []
    if error is None:
        outs = [v for v in pool if hasattr(v, "requires_grad") and v.requires_grad and v.dtype.is_floating_point]
        if outs:
            y = outs[-1]
            g = np.random.RandomState(grad_seed).uniform(-1, 1, size=tuple(y.shape))
            try:
                y.backward(L.tensor(g, dtype=y.dtype))
            except Exception as exc:  # noqa: BLE001
                error = exc
        grads = [leaf.grad for leaf in leaves]
    return pool, grads, error
