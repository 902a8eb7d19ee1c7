"""kernels.reduce and kernels.softmax against torch computed in float64 on the same numbers.

Inputs are drawn in float64 and cast down; the reference runs on the cast-down values widened back
to float64, so only the kernel's own rounding is measured. Every case also runs with tiny blocks
(4 rows x 8 columns), which makes small tensors exercise many programs, the column loop, and the
masks at every chunk edge -- and with the columns split three ways (the GPU's path for few long
rows: partial results per split, then a second launch combining them).
"""
import math

import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad.kernels.reductions.reduce as reduce_mod
import tgrad.kernels.reductions.softmax as softmax_mod
import tgrad.kernels.runtime.target as target_mod
from support.launches import record_launches
from tgrad.kernels import count_launches
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.reductions.reduce import REDUCE_OPS, reduce
from tgrad.kernels.reductions.softmax import softmax, softmax_backward

INF, NAN = float("inf"), float("nan")
# torch warns when var/std's correction leaves no degrees of freedom; that case is tested on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")
TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=2e-5, atol=2e-5),
       torch.float16: dict(rtol=2e-2, atol=2e-2)}


def _split_every(monkeypatch, ways):
    """Split every splittable reduction ``ways`` ways, on the CPU too (the column split decision)."""
    monkeypatch.setattr(reduce_mod, "_splits", lambda op, *_: ways if op in reduce_mod.SPLITTABLE else 1)


@pytest.fixture(params=["default_blocks", "tiny_blocks", "split_columns"])
def blocks(request, monkeypatch):
    if request.param == "split_columns":
        _split_every(monkeypatch, 3)
    if request.param == "tiny_blocks":
        def tiny(n_rows, n_cols, device):
            return (min(4, triton.next_power_of_2(max(n_rows, 1))),
                    min(8, triton.next_power_of_2(max(n_cols, 1))), 4)
        monkeypatch.setattr(reduce_mod, "block_shape_2d", tiny)
        monkeypatch.setattr(softmax_mod, "block_shape_2d", tiny)
    return request.param


def _base(shape, seed=0, low=None):
    g = torch.Generator().manual_seed(seed)
    if low is not None:  # values near 1 keep long products finite
        return low + 0.2 * torch.rand(shape, generator=g, dtype=torch.float64)
    return torch.randn(shape, generator=g, dtype=torch.float64)


# name -> (how to make x from a float64 base of the given dtype, dims reduced)
def _strided(dtype, seed, low=None):
    return {
        "0d": (_base((), seed, low).to(dtype), ()),
        "vector_odd": (_base((37,), seed, low).to(dtype), (0,)),
        "rows": (_base((5, 13), seed, low).to(dtype), (1,)),
        "cols": (_base((5, 13), seed, low).to(dtype), (0,)),
        "size1_dim": (_base((3, 1, 11), seed, low).to(dtype), (1,)),
        "size1_kept": (_base((3, 1, 11), seed, low).to(dtype), (0, 2)),
        "4d_dims02": (_base((4, 5, 6, 7), seed, low).to(dtype), (0, 2)),
        "4d_dims13": (_base((4, 5, 6, 7), seed, low).to(dtype), (1, 3)),
        "4d_all": (_base((3, 4, 5, 6), seed, low).to(dtype), (0, 1, 2, 3)),
        "4d_none": (_base((2, 3, 4, 5), seed, low).to(dtype), ()),
        "transposed": (_base((13, 9), seed, low).to(dtype).t(), (1,)),
        "sliced_step": (_base((11, 40), seed, low).to(dtype)[1::2, ::3], (1,)),
        "permuted": (_base((6, 5, 7), seed, low).to(dtype).permute(2, 0, 1), (0, 2)),
        "expanded": (_base((5, 1), seed, low).to(dtype).expand(5, 9), (1,)),
        "empty_rows": (_base((0, 5), seed, low).to(dtype), (1,)),
        "empty_reduced": (_base((4, 0, 3), seed, low).to(dtype), (1,)),
    }


def _flat_reduced(x, dims):
    """x with ``dims`` moved last and flattened into one (row-major), as the kernel sees it."""
    kept = [d for d in range(x.dim()) if d not in dims]
    n_cols = math.prod(x.shape[d] for d in dims)
    return x.permute(kept + list(dims)).reshape([x.shape[d] for d in kept] + [n_cols])


def _reference(x64, dims, op, correction=1):
    f = _flat_reduced(x64, dims)
    return {
        "sum": lambda: f.sum(-1), "mean": lambda: f.mean(-1), "prod": lambda: f.prod(-1),
        "amax": lambda: f.amax(-1), "amin": lambda: f.amin(-1),
        "max": lambda: tuple(f.max(-1)), "min": lambda: tuple(f.min(-1)),
        "argmax": lambda: f.argmax(-1), "argmin": lambda: f.argmin(-1),
        "var": lambda: f.var(-1, correction=correction),
        "std": lambda: f.std(-1, correction=correction),
        "logsumexp": lambda: f.logsumexp(-1), "norm1": lambda: f.abs().sum(-1),
        "norm2": lambda: f.square().sum(-1).sqrt(), "norminf": lambda: f.abs().amax(-1),
    }[op]()


def _check(actual, expected, dtype, atol=None):
    if isinstance(expected, tuple):
        _check(actual[0], expected[0], dtype, atol)
        assert torch.equal(actual[1], expected[1])
        return
    assert actual.shape == expected.shape and actual.is_contiguous()
    if expected.dtype == torch.int64 or not expected.is_floating_point():
        assert torch.equal(actual, expected)
    else:
        assert actual.dtype == dtype
        tol = dict(TOL[dtype], **({} if atol is None else {"atol": atol}))
        torch.testing.assert_close(actual.double(), expected, equal_nan=True, **tol)


_NO_IDENTITY = ("amax", "amin", "max", "min", "argmax", "argmin", "norminf")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("op", REDUCE_OPS)
def test_reduce_matches_torch(op, dtype, blocks):
    for name, (x, dims) in _strided(dtype, seed=1, low=0.9 if op == "prod" else None).items():
        if name == "empty_reduced" and op in _NO_IDENTITY:
            with pytest.raises(ValueError, match="non-zero size"):
                reduce(x, dims, op)
            continue
        try:
            _check(reduce(x, dims, op), _reference(x.double(), dims, op), dtype)
        except AssertionError as e:
            raise AssertionError(f"case {name}: {e}") from e


@pytest.mark.parametrize("correction", [0, 2, 5, 13])
def test_var_correction(correction):
    x = _base((4, 13), seed=2)
    for op in ("var", "std"):
        _check(reduce(x, (1,), op, correction=correction), _reference(x, (1,), op, correction),
               torch.float64)


def test_var_is_accurate_with_a_large_mean():
    x = (1e4 + _base((3, 1000), seed=3)).float()
    _check(reduce(x, (1,), "var"), x.double().var(1), torch.float32)


def test_large_inputs_use_many_programs():
    x = _base((300, 7000), seed=4).float()
    x64 = x.double()
    for op in ("sum", "max", "var", "logsumexp"):
        _check(reduce(x, (1,), op), _reference(x64, (1,), op), torch.float32)
    _check(reduce(x, (0,), "sum"), x64.sum(0), torch.float32)
    long_rows = _base((2, 70001), seed=5).float()  # wider than one 2^16 block
    for op in ("sum", "argmin", "norm2"):
        # fp32 rounding of a 70001-term sum of unit normals: ~eps * sqrt(n) * |partial sums|
        _check(reduce(long_rows, (1,), op), _reference(long_rows.double(), (1,), op),
               torch.float32, atol=2e-4)
    many_rows = _base((20000, 3), seed=6)
    _check(reduce(many_rows, (1,), "amax"), many_rows.amax(1), torch.float64)


def test_ties_pick_the_first_index(blocks):
    x = torch.tensor([[1., 3., 3., 2.], [5., 5., 5., 5.], [-INF, -INF, -INF, -INF],
                      [0., -2., 7., -2.]])
    for op in ("max", "min", "argmax", "argmin"):
        _check(reduce(x, (1,), op), _reference(x.double(), (1,), op), torch.float32)
    spread = torch.zeros(3, 41)
    spread[:, [6, 17, 33]] = 4.0  # equal maxima in different chunks with tiny blocks
    assert reduce(spread, (1,), "argmax").tolist() == [6, 6, 6]
    assert reduce(-spread, (1,), "min")[1].tolist() == [6, 6, 6]


def test_nan_propagates_with_its_index(blocks):
    x = torch.tensor([[1., NAN, 3., NAN], [NAN, 2., 9., 1.], [4., 2., 9., NAN], [1., 2., 3., 0.]])
    for op in ("max", "min", "argmax", "argmin", "amax", "amin", "norminf", "sum", "logsumexp"):
        _check(reduce(x, (1,), op), _reference(x.double(), (1,), op), torch.float32)
    long_row = torch.zeros(2, 50)
    long_row[0, 45], long_row[1, 3] = NAN, NAN
    long_row[0, 13], long_row[1, 27] = NAN, NAN  # a later NaN in the same lane must not win
    values, index = reduce(long_row, (1,), "max")
    assert values.isnan().all() and index.tolist() == [13, 3]


def test_logsumexp_infinities(blocks):
    x = torch.tensor([[-INF] * 10, [INF, 1.] + [-INF] * 8, [INF, INF] + [0.] * 8,
                      [-INF, 0., 1.] + [-INF] * 7, [1000., 1000.] + [-1000.] * 8,
                      [-INF] * 8 + [1., 2.]])  # with tiny blocks, a whole first chunk of -inf
    _check(reduce(x, (1,), "logsumexp"), x.double().logsumexp(1), torch.float32)


def test_integer_and_out_dtypes():
    i = torch.tensor([[3, -7, 2, 9], [4, 4, -1, 4]], dtype=torch.int64)
    assert reduce(i, (1,), "sum").tolist() == [7, 11]
    assert reduce(i, (1,), "prod").tolist() == [-378, -64]
    assert [t.tolist() for t in reduce(i, (1,), "max")] == [[9, 4], [3, 0]]
    assert reduce(i.to(torch.int32), (1,), "amin").dtype == torch.int32
    assert reduce(i, (1,), "mean", out_dtype=torch.float32).tolist() == [1.75, 2.75]
    exact = torch.tensor([2 ** 53, 1, 1])  # a float accumulator would lose the ones
    assert reduce(exact, (0,), "sum").item() == 2 ** 53 + 2
    wraps = torch.full((2,), 2 ** 62, dtype=torch.int64)
    assert torch.equal(reduce(wraps, (0,), "sum"), wraps.sum())
    h = _base((6, 300), seed=7).half()
    _check(reduce(h, (1,), "sum", out_dtype=torch.float32), h.double().sum(1), torch.float32)
    for op in ("sum", "mean"):
        _check(reduce(h, (1,), op), _reference(h.double(), (1,), op), torch.float16)


def test_one_launch_per_reduction():
    x = _base((6, 7, 8), seed=8).float()
    for op in REDUCE_OPS:
        with count_launches() as launches:
            reduce(x, (0, 2), op)
        assert sum(launches.values()) == 1, op


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown op"):
        reduce(torch.zeros(3), (0,), "median")
    with pytest.raises(ValueError, match="out of range"):
        reduce(torch.zeros(3), (1,), "sum")
    assert reduce(torch.zeros(0, 3), (1,), "amax").shape == (0,)


# ----------------------------------------------------------------------------- softmax

_SOFTMAX_CASES = {
    "rows": (lambda d: _base((5, 13), 11).to(d), -1),
    "cols": (lambda d: _base((5, 13), 11).to(d), 0),
    "middle_dim": (lambda d: _base((3, 10, 4), 12).to(d), 1),
    "0d": (lambda d: _base((), 13).to(d), 0),
    "size1": (lambda d: _base((4, 1), 14).to(d), 1),
    "empty": (lambda d: _base((0, 7), 15).to(d), 1),
    "transposed": (lambda d: _base((9, 6), 16).to(d).t(), 1),
    "sliced_step": (lambda d: _base((8, 50), 17).to(d)[::3, 1::2], 1),
    "permuted": (lambda d: _base((4, 5, 6), 18).to(d).permute(1, 2, 0), 2),
}


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_softmax_and_backward_match_torch(dtype, log, blocks):
    for name, (make, dim) in _SOFTMAX_CASES.items():
        x = make(dtype)
        x64 = x.double().requires_grad_()
        ref = (torch.log_softmax if log else torch.softmax)(x64, dim)
        y = softmax(x, dim, log=log)
        g = _base(x.shape, 19).to(dtype)
        if g.dim() == 2:
            g = g.t().contiguous().t()  # strides differ from y's
        ref.backward(g.double())
        # the backward reference uses torch's y on the same numbers as ours
        dx = softmax_backward(ref.detach().to(dtype), g, dim, log=log)
        try:
            _check(y, ref.detach(), dtype)
            _check(dx, x64.grad, dtype)
        except AssertionError as e:
            raise AssertionError(f"case {name}: {e}") from e


@pytest.mark.usefixtures("replay_verify_mode")
def test_softmax_of_the_last_position_keeps_one_site_at_every_length():
    # logits[:, -1, :] of a growing context (the bigram sampler): the row stride of its size-1 dim
    # changes with the length but no argument reads it, so every length launches from one site;
    # verify mode checks each call's plan against binding its arguments
    for T in range(1, 7):
        logits = _base((1, T, 11), 30 + T).float()
        for log in (False, True):
            x64 = logits[:, -1, :].double().requires_grad_()
            ref = (torch.log_softmax if log else torch.softmax)(x64, -1)
            y = softmax(logits[:, -1, :], -1, log=log)
            _check(y, ref.detach(), torch.float32)
            g = _base((1, 11), 50 + T).float()
            ref.backward(g.double())
            _check(softmax_backward(ref.detach().float(), g, -1, log=log), x64.grad, torch.float32)
    sites = softmax_mod.softmax_kernel.__dict__["_tgrad_replay"].sites
    assert sorted(key[-1] for key in sites) == [False, True]  # one site per log flag, whatever T


def test_softmax_long_rows():
    x = _base((2, 100000), 20).float()
    x64 = x.double().requires_grad_()
    ref = torch.softmax(x64, 1)
    _check(softmax(x, 1), ref.detach(), torch.float32)
    _check(softmax(x, 1, log=True), torch.log_softmax(x64, 1).detach(), torch.float32)
    g = _base((2, 100000), 21).float()
    ref.backward(g.double())
    _check(softmax_backward(ref.detach().float(), g, 1), x64.grad, torch.float32)


def test_softmax_special_values(blocks):
    x = torch.tensor([[-INF] * 10, [INF, 1.] + [0.] * 8, [NAN] + [1.] * 9,
                      [0., -INF, 2.] + [-INF] * 7, [100., -100.] * 5,
                      [-INF] * 8 + [1., 2.]])  # with tiny blocks, a whole first chunk of -inf
    for log in (False, True):
        ref = (torch.log_softmax if log else torch.softmax)(x.double(), 1)
        _check(softmax(x, 1, log=log), ref, torch.float32)


def test_softmax_one_launch_each():
    x = _base((6, 9), 22).float()
    with count_launches() as launches:
        y = softmax(x, 1)
        softmax_backward(y, x, 1)
        softmax(x, 0, log=True, out_dtype=torch.float64)
    assert sum(launches.values()) == 3


def test_split_reductions_combine_partials_in_a_second_launch(monkeypatch):
    _split_every(monkeypatch, 4)
    x = _base((1001,), seed=9).float()
    for op in reduce_mod.SPLITTABLE:
        with count_launches() as launches:
            got = reduce(x, (0,), op)
        assert sum(launches.values()) == 2, op
        _check(got, _reference(x.double(), (0,), op), torch.float32)
    ints = torch.arange(-500, 700, dtype=torch.int64) * (2 ** 40)  # exact only in an integer accumulator
    assert torch.equal(reduce(ints, (0,), "sum"), ints.sum())
    assert reduce(ints, (0,), "amin").item() == ints.min().item()
    h = _base((3, 900), seed=10).half()
    _check(reduce(h, (1,), "sum", out_dtype=torch.float32), h.double().sum(1), torch.float32)
    for op in ("sum", "mean", "norm2"):
        _check(reduce(h, (1,), op), _reference(h.double(), (1,), op), torch.float16)
    with count_launches() as launches:  # var, max/argmax, prod, logsumexp keep one pass
        reduce(x, (0,), "var")
    assert sum(launches.values()) == 1


@pytest.mark.cpu_launch_decisions
def test_columns_split_only_where_a_gpu_would_idle(monkeypatch):
    monkeypatch.setattr(target_mod, "_sm_counts", {0: 132})
    gpu, cpu = torch.device("cuda", 0), torch.device("cpu")
    splits = reduce_mod._splits
    assert splits("sum", 1, 2 ** 26, 2048, gpu) == 4 * 132  # a full reduction: four programs per SM
    assert splits("amax", 8, 2 ** 26, 2048, gpu) == 66
    assert splits("sum", 8192, 4096, 2048, gpu) == 1  # many rows fill the GPU already
    assert splits("sum", 1, 4096, 2048, gpu) == 1  # too short to split into 4-chunk pieces
    assert splits("argmax", 1, 2 ** 26, 2048, gpu) == 1  # partials would need their indices
    assert splits("sum", 1, 2 ** 26, 2048, cpu) == 1  # the interpreter pays per program


def test_split_configurations_compile_for_sm90(monkeypatch):
    _split_every(monkeypatch, 3)
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        for op in reduce_mod.SPLITTABLE:
            reduce(_base((4, 300), seed=11).float(), (1,), op)
            reduce(_base((2, 3, 50), seed=12).float(), (0, 2), op)
    finally:
        launch_observers.remove(observer)
    stages = {dict(v[2]).get("STAGE") for v in launches.values()}
    assert stages == {1, 2}
    for kernel, signature, constants, options in launches.values():
        compiled = triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                                  options=options)
        assert compiled.asm["cubin"]
