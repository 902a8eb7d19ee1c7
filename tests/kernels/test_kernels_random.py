"""kernels.random (Philox fills) and kernels.factories (arange / linspace / eye / fill).

Torch is used here only as the reference and for allocation; every value under test comes from a
Triton kernel (interpreted on the CPU)."""
import math

import numpy as np
import pytest
import torch

from tgrad.kernels import count_launches
from tgrad.kernels.factories import arange, eye, fill, linspace
from tgrad.kernels.random.philox import counters_for, fill_bernoulli, fill_normal, fill_randint, fill_uniform

FILLS = {
    "uniform": lambda out, s, o: fill_uniform(out, s, o, -2.0, 3.0),
    "normal": lambda out, s, o: fill_normal(out, s, o, 1.0, 2.0),
    "randint": lambda out, s, o: fill_randint(out, s, o, -1000, 1000),
    "bernoulli": lambda out, s, o: fill_bernoulli(out, s, o, 0.5),
}
OUT_DTYPE = {"uniform": torch.float32, "normal": torch.float32, "randint": torch.int64,
             "bernoulli": torch.bool}


def _same(a, b):
    return torch.equal(a, b)


# ------------------------------------------------------------------------------------------
# random: determinism and the counter contract


@pytest.mark.parametrize("kind", list(FILLS))
def test_determinism_and_counter_contract(kind):
    fn, dt = FILLS[kind], OUT_DTYPE[kind]
    a, b = torch.empty(1001, dtype=dt), torch.empty(1001, dtype=dt)
    assert fn(a, 1234, 40) == counters_for(1001) == 1004
    fn(b, 1234, 40)
    assert _same(a, b)  # same (seed, offset) -> same numbers
    c = torch.empty(1001, dtype=dt)
    fn(c, 1234, 44)
    d = torch.empty(1001, dtype=dt)
    fn(d, 99, 40)
    if kind == "bernoulli":  # 1000 coin flips agree ~half the time
        assert (a != c).sum() > 300 and (a != d).sum() > 300
    else:
        assert not _same(a, c) and not _same(a, d)
        assert (a != c).float().mean() > 0.9 and (a != d).float().mean() > 0.9
    # counter-based: element i depends only on (seed, offset + i), so a fill at offset 40 + 4
    # is the fill at offset 40 shifted by 4 elements
    assert _same(c[:-4], a[4:])


def test_large_seed_and_offset_are_accepted():
    a, b = torch.empty(64), torch.empty(64)
    fill_uniform(a, 2**64 - 1, 2**40 + 3)
    fill_uniform(b, -1, 2**40 + 3)  # the same 64 key bits
    assert _same(a, b)
    c = torch.empty(64)
    fill_uniform(c, 2**63 + 5, 2**33)  # high counter bits matter too
    fill_uniform(b, 2**63 + 5, 2**33 + 2**32)
    assert not _same(b, c)


def test_zero_size_outputs_launch_nothing():
    with count_launches() as c:
        assert fill_uniform(torch.empty(0), 1, 0) == 0
        assert fill_normal(torch.empty(3, 0), 1, 0) == 0
        assert fill_randint(torch.empty(0, dtype=torch.int64), 1, 0, 0, 5) == 0
        assert fill_bernoulli(torch.empty(0, 2, dtype=torch.bool), 1, 0, 0.5) == 0
        arange(torch.empty(0), 0, 1)
        linspace(torch.empty(0), 0, 1, 0)
        eye(torch.empty(0, 3))
        fill(torch.empty(0, 5), 1.0)
    assert sum(c.values()) == 0


# ------------------------------------------------------------------------------------------
# random: distributions (generous bounds; 100k samples give std errors ~0.003)


def test_uniform_distribution():
    x = torch.empty(100_000)
    fill_uniform(x, 7, 0)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean().item() - 0.5) < 0.01
    assert abs(x.var().item() - 1 / 12) < 0.005
    hist = torch.histc(x, bins=10, min=0, max=1)
    assert (hist - 10_000).abs().max() < 600
    y = torch.empty(100_000)
    fill_uniform(y, 7, 0, -3.0, 5.0)
    assert y.min() >= -3.0 and y.max() < 5.0
    assert abs(y.mean().item() - 1.0) < 0.05
    assert torch.equal(y, -3.0 + x * 8.0)  # same counters, same u: an exact affine map here


def test_normal_distribution():
    x = torch.empty(100_000)
    fill_normal(x, 3, 0)
    assert abs(x.mean().item()) < 0.02 and abs(x.std().item() - 1.0) < 0.02
    assert abs((x.abs() < 1).float().mean().item() - 0.6827) < 0.01
    skew = ((x - x.mean()) ** 3).mean() / x.std() ** 3
    assert abs(skew.item()) < 0.05
    y = torch.empty(100_000, dtype=torch.float64)
    fill_normal(y, 3, 0, mean=5.0, std=0.5)
    assert abs(y.mean().item() - 5.0) < 0.01 and abs(y.std().item() - 0.5) < 0.01


def test_randint_distribution():
    x = torch.empty(100_000, dtype=torch.int64)
    fill_randint(x, 11, 0, -3, 7)
    assert x.min() == -3 and x.max() == 6
    counts = torch.bincount(x + 3, minlength=10)
    assert (counts - 10_000).abs().max() < 600
    # a span of 2^32 (bigger than int32): values in range, top and bottom halves equally likely
    w = torch.empty(50_000, dtype=torch.int64)
    fill_randint(w, 5, 0, -(2**31), 2**31)
    assert w.min() >= -(2**31) and w.max() < 2**31
    assert abs((w >= 0).float().mean().item() - 0.5) < 0.02
    assert abs(w.double().mean().item() / 2**31) < 0.02
    assert (w % 2 == 0).float().mean().sub(0.5).abs() < 0.02  # low bits are random too
    # other output dtypes, and the degenerate one-value range
    for dt in (torch.int32, torch.int16, torch.uint8, torch.float32):
        y = torch.empty(1000, dtype=dt)
        fill_randint(y, 2, 0, 0, 200)
        assert y.min() >= 0 and y.max() <= 199 and len(torch.unique(y)) > 150
    z = torch.empty(10, dtype=torch.int64)
    fill_randint(z, 1, 0, 42, 43)
    assert (z == 42).all()
    with pytest.raises(ValueError):
        fill_randint(z, 1, 0, 5, 5)


def test_bernoulli_rate():
    m = torch.empty(100_000, dtype=torch.bool)
    fill_bernoulli(m, 9, 0, 0.3)
    assert abs(m.float().mean().item() - 0.3) < 0.01
    f = torch.empty(100_000, dtype=torch.float32)
    fill_bernoulli(f, 9, 0, 0.3)  # same counters -> the same mask, as 0/1 floats
    assert torch.equal(f, m.float())
    fill_bernoulli(m, 9, 0, 0.0)
    assert not m.any()
    fill_bernoulli(m, 9, 0, 1.0)
    assert m.all()


# ------------------------------------------------------------------------------------------
# random: strided / in-place writes and dtypes


@pytest.mark.parametrize("kind", list(FILLS))
def test_writes_through_transposed_view(kind):
    fn, dt = FILLS[kind], OUT_DTYPE[kind]
    base = torch.zeros(5, 7, dtype=dt)
    view = base.t()  # (7, 5), strides (1, 7)
    fn(view, 21, 8)
    ref = torch.empty(7, 5, dtype=dt)
    fn(ref, 21, 8)
    assert _same(view, ref)  # element i of the *logical* order gets counter offset + i


@pytest.mark.parametrize("kind", list(FILLS))
def test_writes_into_stepped_slice_only(kind):
    fn, dt = FILLS[kind], OUT_DTYPE[kind]
    sentinel = torch.full((6, 11), 77, dtype=dt) if dt != torch.bool else torch.ones(6, 11, dtype=dt)
    base = sentinel.clone()
    view = base[1::2, 2::3]  # (3, 3), strides (22, 3)
    fn(view, 5, 0)
    ref = torch.empty(3, 3, dtype=dt)
    fn(ref, 5, 0)
    assert _same(view, ref)
    untouched = torch.ones(6, 11, dtype=torch.bool)
    untouched[1::2, 2::3] = False
    assert _same(base[untouched], sentinel[untouched])


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_uniform_stays_below_high_in_every_float_dtype(dt):
    x = torch.empty(20_000, dtype=dt)
    fill_uniform(x, 1, 0)
    assert x.dtype == dt and x.min() >= 0 and x.max() < 1
    # a range narrower than the dtype's spacing near 1: rounding would give 1.0 without the clamp
    # (in bf16 no value lies in [0.9999, 1): everything lands on the one just below 1)
    fill_uniform(x, 1, 0, 0.9999, 1.0)
    assert x.max() < 1.0 and x.min() >= min(0.9999, 1 - torch.finfo(dt).eps)
    fill_uniform(x, 1, 0, -1.0, -0.5)
    assert x.max() < -0.5 and x.min() >= -1.0


def test_float64_uniform_has_more_than_24_bits():
    x = torch.empty(1000, dtype=torch.float64)
    fill_uniform(x, 4, 0)
    assert (x * 2**24 != torch.floor(x * 2**24)).float().mean() > 0.99
    assert (x * 2**53 == torch.floor(x * 2**53)).all()  # on the 2^-53 grid


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16, torch.float64])
def test_normal_other_float_dtypes(dt):
    x = torch.empty(20_000, dtype=dt)
    fill_normal(x, 8, 16)
    ref = torch.empty(20_000, dtype=torch.float32)
    fill_normal(ref, 8, 16)
    assert x.dtype == dt and torch.isfinite(x).all()
    tol = {torch.float16: 1e-3, torch.bfloat16: 8e-3, torch.float64: 1e-6}[dt]
    torch.testing.assert_close(x.double(), ref.double(), rtol=tol, atol=tol)


def test_uniform_degenerate_and_reversed_ranges():
    x = torch.empty(10)
    fill_uniform(x, 0, 0, 2.5, 2.5)
    assert (x == 2.5).all()
    with pytest.raises(ValueError):
        fill_uniform(x, 0, 0, 1.0, 0.0)


def test_float_only_fills_reject_integer_outputs():
    with pytest.raises(TypeError):
        fill_uniform(torch.empty(3, dtype=torch.int64), 0, 0)
    with pytest.raises(TypeError):
        fill_normal(torch.empty(3, dtype=torch.bool), 0, 0)


# ------------------------------------------------------------------------------------------
# factories


def _close_to_scale(ours, ref, ulps=1):
    """Equal up to ``ulps`` units in the last place of the largest magnitude involved (torch's
    vectorised CPU kernels round some elements through chunk bases)."""
    if ours.numel() == 0:
        assert ref.numel() == 0
        return
    scale = ref.abs().max().double().item()
    eps = torch.finfo(ref.dtype).eps
    atol = ulps * eps * max(scale, torch.finfo(ref.dtype).tiny)
    torch.testing.assert_close(ours, ref, rtol=0, atol=atol)


@pytest.mark.parametrize("start,end,step", [(0, 5, 1), (3, 4, 1), (-7, 20, 3), (10, -11, -2),
                                            (0, 1000, 1), (5, 2**40, 2**31 - 1)])
@pytest.mark.parametrize("dt", [torch.int64, torch.int32, torch.int16])
def test_arange_int_exact(start, end, step, dt):
    ref = torch.arange(start, end, step, dtype=torch.int64).to(dt)
    assert torch.equal(arange(torch.empty(ref.numel(), dtype=dt), start, step), ref)


@pytest.mark.parametrize("start,end,step", [(0.0, 1.0, 0.1), (-3.3, 77.7, 0.37), (0.5, 1.0, 1.0),
                                            (1e6, 1e6 + 10, 0.013), (2.0, -3.0, -0.25)])
@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_arange_float(start, end, step, dt):
    ref = torch.arange(start, end, step, dtype=dt)
    ours = arange(torch.empty(ref.numel(), dtype=dt), start, step)
    # exactly the fp64 formula, rounded once (via fp32 for 16-bit types, as C++ casts do)
    exact = np.float64(start) + np.arange(ref.numel(), dtype=np.float64) * np.float64(step)
    exact = torch.from_numpy(exact).to(torch.float32 if dt != torch.float64 else dt).to(dt)
    assert torch.equal(ours, exact)
    _close_to_scale(ours, ref)


def test_arange_strided_out():
    base = torch.zeros(10, dtype=torch.int64)
    arange(base[1::3], 5, 2)
    assert base.tolist() == [0, 5, 0, 0, 7, 0, 0, 9, 0, 0]


def _linspace_emulation(start, end, steps, npdt):
    s, e = npdt(start), npdt(end)
    if steps == 1:
        return np.array([s], dtype=npdt)
    step = npdt(e - s) / npdt(steps - 1)
    i = np.arange(steps)
    return np.where(i < steps // 2, s + step * i.astype(npdt),
                    e - step * (steps - 1 - i).astype(npdt)).astype(npdt)


LIN_CASES = [(0.0, 1.0, 0), (0.0, 1.0, 1), (2.5, -1.0, 2), (0.0, 1.0, 11), (-3.7, 10.2, 7),
             (-3.3, 77.7, 777), (1e6, 1e6 + 100, 99), (0.0, 1.0, 1001), (-1.0, 1.0, 4096)]


@pytest.mark.parametrize("start,end,steps", LIN_CASES)
@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
def test_linspace_float(start, end, steps, dt):
    ref = torch.linspace(start, end, steps, dtype=dt)
    ours = linspace(torch.empty(steps, dtype=dt), start, end, steps)
    npdt = np.float32 if dt == torch.float32 else np.float64
    assert torch.equal(ours, torch.from_numpy(_linspace_emulation(start, end, steps, npdt)))
    _close_to_scale(ours, ref)
    if steps >= 1:
        assert ours[0] == ref[0] and ours[-1] == ref[-1]


@pytest.mark.parametrize("start,end,steps", LIN_CASES + [(-7, 30, 5), (0, 10, 7), (5, -5, 4),
                                                        (-3, 27, 16), (0, 2**40, 9)])
@pytest.mark.parametrize("dt", [torch.int64, torch.int32])
def test_linspace_int(start, end, steps, dt):
    if dt == torch.int32 and abs(end) >= 2**31:
        pytest.skip("does not fit in int32")
    ours = linspace(torch.empty(steps, dtype=dt), start, end, steps)
    # exactly torch's scalar formula (its CUDA kernel): integral ends, fp64 step, truncation
    s, e = int(start), int(end)
    step = (e - s) / (steps - 1) if steps > 1 else 0.0
    exact = [int(s + step * i) if i < steps // 2 else int(e - step * (steps - 1 - i))
             for i in range(steps)]
    if steps == 1:
        exact = [s]
    assert ours.tolist() == exact
    # torch's CPU kernel truncates a vector chunk's base first and steps from it, so an element
    # whose fp64 value is a hair below an integer can come out 1 lower there
    ref = torch.linspace(start, end, steps, dtype=dt)
    assert ours.shape == ref.shape
    if steps:
        assert (ours.long() - ref.long()).abs().max().item() <= 1
    if steps and float(step).is_integer():
        assert torch.equal(ours, ref)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_linspace_half(dt):
    ref = torch.linspace(-2.0, 3.0, 101, dtype=dt)
    ours = linspace(torch.empty(101, dtype=dt), -2.0, 3.0, 101)
    torch.testing.assert_close(ours, ref, rtol=0, atol=3.0 * torch.finfo(dt).eps * 2)
    assert ours[0] == -2 and ours[-1] == 3


@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 5), (5, 3), (7, 7), (1, 9), (33, 17)])
@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                torch.uint8, torch.bool])
def test_eye(n, m, dt):
    assert torch.equal(eye(torch.empty(n, m, dtype=dt)), torch.eye(n, m, dtype=dt))


def test_eye_strided_out():
    base = torch.full((4, 6), 9.0)
    eye(base[:, ::2])
    ref = torch.full((4, 6), 9.0)
    ref[:, ::2] = torch.eye(4, 3)
    assert torch.equal(base, ref)
    t = torch.empty(6, 4)
    eye(t.t())  # (4, 6) view of a (6, 4) buffer
    assert torch.equal(t.t(), torch.eye(4, 6))


FILL_VALUES = [0, 1, -3, 2.5, -2.7, 1e-8, 65520.0, 1.00390625 + 1e-9, float("inf"), -0.0, True]


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                torch.int64, torch.int32, torch.int8, torch.bool])
def test_fill_matches_torch(dt):
    for value in FILL_VALUES:
        if math.isinf(value) and not dt.is_floating_point:
            continue
        ours = fill(torch.empty(2, 3, dtype=dt), value)
        try:
            ref = torch.empty(2, 3, dtype=dt).fill_(value)
        except RuntimeError:  # torch refuses to overflow a finite value to inf; we round (RNE)
            ref = torch.full((2, 3), float(value), dtype=torch.float64).float().to(dt)
        if dt.is_floating_point:  # compare bits: catches -0.0 and every rounding
            width = {2: torch.int16, 4: torch.int32, 8: torch.int64}[ref.element_size()]
            assert torch.equal(ours.view(width), ref.view(width)), (dt, value)
        else:
            assert torch.equal(ours, ref), (dt, value)


@pytest.mark.parametrize("dt", [torch.float32, torch.int64, torch.bool])
def test_fill_strided_views(dt):
    for make_view in (lambda b: b.t(), lambda b: b[1::2, ::3], lambda b: b[:, 2], lambda b: b):
        base = torch.zeros(5, 7, dtype=dt)
        ref = base.clone()
        fill(make_view(base), 1)
        make_view(ref).fill_(1)
        assert torch.equal(base, ref)
