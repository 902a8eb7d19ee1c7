"""Eager call plans (tgrad/ops/call_plans.py): an unrecorded table-row call whose signature was seen
replays what the first call decided. Every result is compared with PyTorch after the plan exists,
and every way a later call can differ from the planned one (strides, dtypes, aliasing, a number's
value, the default dtype, grad mode, an observer, replay off) must take its own path."""
import pytest
import torch

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.ops.call_plans import PLANS

pytestmark = pytest.mark.launch_plans

WARM = 5  # interpreted, recorded, replayed (the executor plans the site), planned, planned


@pytest.fixture(autouse=True)
def fresh_cache(empty_trace_cache):
    enabled, verify = K.replay_enabled(), K.replay_verify()
    K.set_replay(True, verify=False)
    K.clear_replay_cache()
    PLANS.clear()
    yield
    K.set_replay(enabled, verify=verify)


def _t(x):
    return tgrad.tensor(x.numpy())


def _same(got, want):
    assert got.dtype.torch == want.dtype and tuple(got.shape) == tuple(want.shape)
    assert torch.equal(torch.from_numpy(got.numpy()), want)


@pytest.mark.executor_replay
def test_a_planned_call_replays_with_each_calls_tensors():
    for k in range(WARM):
        a, b = torch.randn(32), torch.randn(32)
        _same(_t(a) + _t(b), a + b)
    assert len(PLANS) == 1
    results = []
    with K.count_replays() as counts, tgrad.count_launches() as launches:
        for k in range(3):
            a, b = torch.randn(32), torch.randn(32)
            got = _t(a) + _t(b)
            _same(got, a + b)
            results.append(got)
    assert counts["replayed"] == 3 and counts["recorded"] == 0 and launches["pointwise_kernel"] == 3
    assert len({r._data.data_ptr() for r in results}) == 3  # a fresh output each call
    assert all(r.grad_fn is None and not r.requires_grad for r in results)


def test_other_strides_dtypes_broadcasts_and_aliasing_are_other_signatures():
    a = torch.randn(6, 4, dtype=torch.float64)
    b = torch.randn(4, 6, dtype=torch.float64)
    c = torch.randn(4, dtype=torch.float32)
    ta, tb, tc = _t(a), _t(b), _t(c)
    cases = [(ta, ta, a, a), (ta, tb.t(), a, b.t()), (ta, tc, a, c), (tc, tc[:2].repeat(2), c, c[:2].repeat(2)),
             (tb.t(), tb.t(), b.t(), b.t())]
    for _ in range(WARM):
        for x, y, u, v in cases:
            _same(x * y, u * v)
            _same(x + y, u + v)
            _same(tgrad.maximum(x, y), torch.maximum(u, v))
    out = ta + tb.t()
    assert out._data.stride() == (a + b.t()).stride()


def test_number_operands_plan_per_value_and_keep_signed_zero():
    x = torch.tensor([-0.0, 1.5, -2.25, 3.0])
    tx = _t(x)
    for _ in range(WARM):
        for n in (8, 9, 2.5, 0.0, -0.0, True):
            _same(tx + n, x + n)
            _same(tx * n, x * n)
        for n in (8, 2.5, 0.0, -0.0):
            _same(tx - n, x - n)
    i = torch.tensor([3, -4, 5])
    ti = _t(i)
    for _ in range(WARM):
        _same(ti + 8, i + 8)
        _same(ti // 2, i // 2)


def test_the_default_dtype_is_not_planned():
    i = torch.tensor([1, 2, 3])
    ti = _t(i)
    for _ in range(WARM):
        _same(ti * 2.5, i * 2.5)
        _same(ti / 4, i / 4)
    old = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _same(ti * 2.5, i * 2.5)
        _same(ti / 4, i / 4)
    finally:
        tgrad.set_default_dtype(old)
        torch.set_default_dtype(old.torch)


def test_recorded_calls_build_their_node_after_a_plan_exists():
    a, b = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    ta, tb = _t(a), _t(b)
    for _ in range(WARM):
        ta + tb
    ta.requires_grad_()
    out = ta * tb
    assert out.grad_fn is not None and out.grad_fn.name() == "MulBackward0"
    out.sum().backward()
    _same(ta.grad, b)
    with tgrad.no_grad():
        for _ in range(WARM):
            quiet = ta * tb
    assert quiet.grad_fn is None and not quiet.requires_grad
    view = ta[1:4]  # a view of a tensor that requires grad: recorded
    assert (view * tb[1:4]).grad_fn is not None


def test_inference_mode_results_are_inference_tensors():
    a = _t(torch.randn(4))
    for _ in range(WARM):
        a.neg()
    with tgrad.inference_mode():
        out = a.neg()
    assert out.is_inference() and not a.neg().is_inference()


def test_observers_captures_and_replay_off_take_the_general_path():
    x = torch.randn(8)
    tx = _t(x)
    for _ in range(WARM):
        tx.neg()
    seen = []
    launch_observers.append(lambda kernel, grid, args, meta: seen.append(kernel.__name__))
    try:
        _same(tx.neg(), -x)
    finally:
        launch_observers.pop()
    assert seen == ["pointwise_kernel"]
    K.set_replay(False)
    with K.count_replays() as counts:
        _same(tx.neg(), -x)
    assert counts["interpreted"] == 1
    K.set_replay(True)
    graph = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(graph):
        y = tx.neg()
    x.copy_(torch.randn(8))
    tx.copy_(_t(x))
    graph.replay()
    _same(y, -x)


@pytest.mark.executor_replay
def test_a_plan_whose_trace_left_the_cache_launches_again():
    a, b = torch.randn(7), torch.randn(7)
    ta, tb = _t(a), _t(b)
    for _ in range(WARM):
        ta - tb
    K.clear_replay_cache()  # the plan's signature is gone: its call binds again (the trace from disk)
    for _ in range(WARM):
        _same(ta - tb, a - b)
    with K.count_replays() as counts:
        _same(ta - tb, a - b)
    assert counts["replayed"] == 1


@pytest.mark.executor_replay
def test_verify_mode_verifies_planned_calls():
    x = _t(torch.randn(5, 3))
    for _ in range(WARM):
        x.exp()
    K.set_replay(verify=True)
    with K.count_replays() as counts:
        for _ in range(2):
            x.exp()
    assert counts["replayed"] == 2  # the executor's verifying path, not the plan's direct replay


def _leaf(x, lib):
    return (tgrad.tensor(x.numpy()) if lib is tgrad else x.clone()).requires_grad_()


@pytest.mark.executor_replay  # (plans are made once launches replay)
@pytest.mark.parametrize("program", ["x * y + x", "(x * x).relu() - y", "1 - y * x", "x.sigmoid() * 2.5 + y.exp()",
                                     "tgrad_or_torch.maximum(x, y) / (y * y + 1)"])
def test_recorded_calls_after_a_plan_give_pytorchs_graph_and_gradients(program):
    for k in range(WARM + 2):
        a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
        got, want = [], []
        for lib, out in ((tgrad, got), (torch, want)):
            x, y = _leaf(a, lib), _leaf(b, lib)
            z = eval(program, {"tgrad_or_torch": lib, "x": x, "y": y})
            g, = (tgrad if lib is tgrad else torch).autograd.grad(z.sum(), (x,), create_graph=True)
            gx, gy = (tgrad if lib is tgrad else torch).autograd.grad(g.pow(2).sum(), (x, y), allow_unused=True)
            out += [z, g, gx, gy, z.grad_fn.name(), [None if f is None else f.name() for f, _ in z.grad_fn.next_functions]]
        for u, v in zip(got[:4], want[:4]):
            if v is None:
                assert u is None
            else:
                assert torch.allclose(torch.from_numpy(u.detach().numpy()), v.detach(), rtol=1e-12, atol=1e-12)
        assert got[4:] == want[4:]
    assert any(len(key) > 10 for key in PLANS)  # recorded calls were planned (their keys carry needs)


def test_a_recorded_plan_saves_versions_and_keeps_hooks():
    x = tgrad.randn(5, requires_grad=True)
    for _ in range(WARM):
        (x * x).sum().backward()
    y = x.detach().requires_grad_()
    for _ in range(WARM):
        w = y * 2.0
    base = tgrad.randn(5)
    z = y * base
    base.add_(1)  # saved by MulBackward0 for y's gradient: backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    seen = []
    h = y * base
    h.register_hook(lambda g: seen.append(g) or g * 3)
    (h * 1.0).sum().backward()
    assert len(seen) == 1 and torch.equal(torch.from_numpy(y.grad.numpy()), 3 * base._data)
    assert w.grad_fn.name() == "MulBackward0" and w.grad_fn._saved_self is None  # a number operand: nothing to save


def test_an_input_returned_as_a_leaf_keeps_its_accumulator():
    x = tgrad.ones(3, requires_grad=True)
    zero = tgrad.zeros(3)
    for _ in range(WARM):
        out = x + zero
    assert out.grad_fn.next_functions[0][0] is (x + zero).grad_fn.next_functions[0][0]  # one AccumulateGrad
    out.sum().backward()
    assert torch.equal(torch.from_numpy(x.grad.numpy()), torch.ones(3))


_REDUCTIONS = ["x.sum()", "x.mean()", "x.sum(1)", "x.mean((0, 2), keepdim=True)", "x.sum(dim=-1, dtype=lib.float32)",
               "x.transpose(0, 2).mean(1)", "x[:, ::2].sum((0, 1))"]


@pytest.mark.executor_replay  # (plans are made once launches replay)
@pytest.mark.parametrize("program", _REDUCTIONS)
def test_sum_and_mean_plans_give_pytorchs_results_nodes_and_gradients(program):
    for k in range(WARM + 2):
        a = torch.randn(3, 4, 5, dtype=torch.float64)
        got, want = [], []
        for lib, out in ((tgrad, got), (torch, want)):
            x = _leaf(a, lib)
            z = eval(program, {"lib": lib, "x": x})
            g, = lib.autograd.grad((z * z).sum(), (x,), create_graph=True)
            gg, = lib.autograd.grad(g.pow(2).sum(), (x,))
            with lib.no_grad():
                quiet = eval(program, {"lib": lib, "x": x})
            out += [z, g, gg, quiet, z.grad_fn.name(), quiet.requires_grad, z.dtype.is_floating_point]
        for u, v in zip(got[:4], want[:4]):
            assert tuple(u.shape) == tuple(v.shape) and u.dtype.torch == v.dtype
            assert torch.allclose(torch.from_numpy(u.detach().numpy()), v.detach(), rtol=1e-5, atol=1e-5)  # (float32 sums)
        assert got[4:] == want[4:]
    names = {key[0].__name__ for key in PLANS}
    assert names & {"Sum", "SumDim", "Mean", "MeanDim"}  # the reductions themselves were planned


@pytest.mark.executor_replay
def test_a_planned_reduction_replays_into_a_fresh_output_and_follows_the_split_decision(monkeypatch):
    from tgrad.kernels.reductions import reduce as reduce_mod
    x = _t(torch.randn(6, 8, generator=torch.Generator().manual_seed(0)))
    for _ in range(WARM):
        x.sum(0)
    assert any(key[0].__name__ == "SumDim" for key in PLANS)
    with K.count_replays() as counts, tgrad.count_launches() as launches:
        outs = [x.sum(0) for _ in range(3)]
    assert counts["replayed"] == 3 and counts["recorded"] == 0 and launches["reduce_kernel"] == 3
    assert len({o._data.data_ptr() for o in outs}) == 3
    # a plan asks the column-split decision on each call, as reduce() does: two launches when split
    monkeypatch.setattr(reduce_mod, "_splits", lambda op, *_: 2 if op in reduce_mod.SPLITTABLE else 1)
    with tgrad.count_launches() as launches:
        got = x.sum(0)
    assert launches["reduce_kernel"] == 2
    # split in two, the float32 sum rounds otherwise than torch's: float64 at float32's tolerance
    assert torch.allclose(torch.from_numpy(got.numpy()).double(), torch.from_numpy(x.numpy()).double().sum(0),
                          rtol=1e-6, atol=1e-6)


@pytest.mark.executor_replay
def test_comparisons_plan_per_signature_and_give_pytorchs_results():
    a, i = torch.randn(4, 5), torch.randint(-3, 3, (4, 5))
    ta, ti = _t(a), _t(i)
    for _ in range(WARM):
        for x, u in ((ta, a), (ti, i)):
            _same(x > 0, u > 0)
            _same(0 < x, 0 < u)
            _same(x <= 1, u <= 1)
            _same(x.ge(x[0]), u.ge(u[0]))
            _same(x.t() != x.t()[:, :1], u.t() != u.t()[:, :1])
            _same((x > 0) == (x < 1), (u > 0) == (u < 1))
        _same(ta.requires_grad_() > 0.5, a > 0.5)
        ta.requires_grad_(False)
    assert sum(not isinstance(key[0], type) for key in PLANS) >= 10  # keyed by the comparison's formula


@pytest.mark.executor_replay
def test_a_comparison_whose_compute_dtype_the_default_dtype_decides_is_not_planned():
    i = torch.tensor([16777217, 3])
    ti = _t(i)
    for _ in range(WARM):
        _same(ti > 16777216.5, i > 16777216.5)  # compared in float32: 16777217 rounds to 16777216
    assert not PLANS
    old = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _same(ti > 16777216.5, i > 16777216.5)  # in float64: True
    finally:
        tgrad.set_default_dtype(old)
        torch.set_default_dtype(old.torch)


@pytest.mark.executor_replay
def test_integer_and_bool_zeros_are_planned_float_zeros_are_not():
    x = torch.tensor([-0.0, 1.5, -2.25])
    tx = _t(x)
    for _ in range(WARM):
        for n in (0, False):
            _same(tx + n, x + n)
            _same(n + tx, n + x)
            _same(tx * n, x * n)
        for n in (0.0, -0.0):
            _same(tx + n, x + n)
    keys = [key for key in PLANS if key[0].__name__ in ("Add", "Mul")]
    assert {key[6] for key in keys if len(key) == 7} >= {0, False}  # (the number's value ends the key)
    assert all(key[5] is not float or key[6] != 0 for key in keys if len(key) == 7)
