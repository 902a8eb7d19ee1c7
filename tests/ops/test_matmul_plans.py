"""Eager call plans of matrix products (tgrad/ops/matmul_plans.py): a call of mm, bmm, matmul or ``@``
whose signature was seen replays what the first call decided. A planned call must give the general
path's bytes, graph and gradients (float64 against PyTorch with a random upstream gradient), and
whatever the plan does not cover (integers, empty products, no_grad vs recorded, inference
mode, hooks, version checks, graph capture, observers, verify mode, other threads) its own path."""
import threading

import pytest
import torch

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.ops.call_plans import PLANS, call_key
from tgrad.ops.matmul import Bmm, Matmul, Mm

from test_call_plans import WARM, fresh_cache  # noqa: F401  (the same table, emptied around each test)

pytestmark = pytest.mark.launch_plans


def _t(x, grad=False):
    return tgrad.tensor(x.detach().numpy()).requires_grad_(grad)


def _np(t):
    return torch.from_numpy(t.detach().numpy())


# (program, shapes of a and b, the Function a call of it applies)
_PRODUCTS = [("a @ b", (5, 3), (3, 4), Mm), ("lib.mm(a, b.t())", (5, 3), (4, 3), Mm),
             ("lib.bmm(a, b)", (2, 5, 3), (2, 3, 4), Bmm), ("lib.matmul(a, b)", (2, 2, 5, 3), (2, 3, 4), Matmul),
             ("a.transpose(-1, -2) @ b", (2, 3, 5), (3, 4), Matmul)]


@pytest.mark.executor_replay  # (plans are made once launches replay)
@pytest.mark.parametrize("program,sa,sb,cls", _PRODUCTS, ids=[p[0] for p in _PRODUCTS])
def test_planned_products_give_the_general_paths_bytes_nodes_and_gradients(program, sa, sb, cls):
    gen = torch.Generator().manual_seed(len(program))
    for k in range(WARM + 2):
        a, b = (torch.randn(*s, dtype=torch.float64, generator=gen) for s in (sa, sb))
        ta, tb, pa, pb = _t(a, True), _t(b, True), a.clone().requires_grad_(), b.clone().requires_grad_()
        got = eval(program, {"lib": tgrad, "a": ta, "b": tb})
        want = eval(program, {"lib": torch, "a": pa, "b": pb})
        g = torch.randn(want.shape, dtype=torch.float64, generator=gen)
        got.backward(_t(g))
        want.backward(g)
        assert torch.allclose(_np(got), want.detach(), rtol=1e-12, atol=1e-12)
        assert torch.allclose(_np(ta.grad), pa.grad, rtol=1e-12, atol=1e-12)
        assert torch.allclose(_np(tb.grad), pb.grad, rtol=1e-12, atol=1e-12)
        with tgrad.no_grad():
            quiet = eval(program, {"lib": tgrad, "a": ta, "b": tb})
        assert quiet.grad_fn is None and torch.equal(_np(quiet), _np(got))  # the same bytes, recorded or not
        if k == 0:
            first = (_np(got), _np(ta.grad), _np(tb.grad), got.grad_fn.name(),
                     [f.name() for f, _ in got.grad_fn.next_functions if f is not None], ta, tb, g)
    # the recorded and unrecorded signatures both have plans now: the same inputs give the first call's bytes
    assert sum(1 for key in PLANS if key[0] is cls) >= 2  # (and the backward's products)
    ta, tb = first[5].detach().requires_grad_(), first[6].detach().requires_grad_()
    with K.count_replays() as counts:
        again = eval(program, {"lib": tgrad, "a": ta, "b": tb})
        again.backward(_t(first[7]))
    assert counts["replayed"] >= 1
    assert torch.equal(_np(again), first[0])
    assert torch.equal(_np(ta.grad), first[1]) and torch.equal(_np(tb.grad), first[2])
    assert again.grad_fn.name() == first[3]
    assert [f.name() for f, _ in again.grad_fn.next_functions if f is not None] == first[4]


@pytest.mark.executor_replay
def test_a_planned_product_replays_into_a_fresh_output_with_each_calls_operands():
    for _ in range(WARM):
        _t(torch.randn(8, 8)) @ _t(torch.randn(8, 8))
    assert len(PLANS) == 1
    outs = []
    with K.count_replays() as counts, tgrad.count_launches() as launches:
        for _ in range(3):
            a, b = torch.randn(8, 8), torch.randn(8, 8)
            out = _t(a) @ _t(b)
            with _Off():
                want = _t(a) @ _t(b)  # the general path, interpreted
            assert torch.equal(_np(out), _np(want))
            outs.append(out)
    assert counts["replayed"] >= 3 and launches["matmul_kernel"] == 6
    assert len({o._data.data_ptr() for o in outs}) == 3


class _Off:
    """Replay off for a block: launches interpret."""

    def __enter__(self):
        K.set_replay(False)

    def __exit__(self, *exc):
        K.set_replay(True)


@pytest.mark.executor_replay
def test_an_aliased_product_is_its_own_signature_with_the_general_paths_bytes():
    x = _t(torch.randn(4, 4))
    y = _t(x._data.clone())
    with _Off():
        want = _np(x @ y)
    for _ in range(WARM):
        assert torch.equal(_np(x @ x), want)
    assert call_key(Mm, (x, x)) in PLANS and call_key(Mm, (x, x)) != call_key(Mm, (x, y))
    with K.count_replays() as counts:
        assert torch.equal(_np(x @ x), want)
    assert counts["replayed"] == 1


def test_integers_and_empty_products_are_not_planned():
    i = tgrad.tensor([[1, 2], [3, 4]])
    x = _t(torch.randn(4, 4))
    empty = _t(torch.randn(0, 4))
    for _ in range(WARM):
        assert torch.equal(_np(i @ i), torch.tensor([[7, 10], [15, 22]]))
        assert (empty @ x).shape == (0, 4)
    assert not [key for key in PLANS if key[0] in (Mm, Bmm, Matmul)]  # (an integer product's own ops have plans)


def test_inference_mode_and_grad_mode_take_their_own_paths():
    a, b = _t(torch.randn(3, 4)), _t(torch.randn(4, 2), True)
    for _ in range(WARM):
        a @ b
        with tgrad.no_grad():
            a @ b
    with tgrad.inference_mode():
        out = a @ b
    assert out.is_inference() and out.grad_fn is None
    assert call_key(Mm, (a, b)) is not None and (a @ b).grad_fn.name() == "MmBackward0"
    with tgrad.no_grad():
        assert (a @ b).grad_fn is None


def test_a_recorded_plan_keeps_hooks_and_version_checks():
    x = tgrad.randn(4, 3, requires_grad=True)
    w = tgrad.randn(3, 2)
    for _ in range(WARM):
        (x @ w).sum().backward()
    assert any(key[0] is Mm for key in PLANS)
    seen = []
    y = x @ w
    y.register_hook(lambda g: seen.append(g) or g * 3)
    y.sum().backward()
    assert len(seen) == 1
    x.grad = None
    (x @ w).sum().backward()
    once = _np(x.grad).clone()
    x.grad = None
    z = x @ w
    z.register_hook(lambda g: g * 3)
    z.sum().backward()
    assert torch.allclose(_np(x.grad), 3 * once, rtol=1e-6)
    z = x @ w
    w.add_(1)  # saved by MmBackward0 for x's gradient: backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_observers_captures_verify_and_replay_off_take_the_general_path():
    a, b = torch.randn(6, 5), torch.randn(5, 3)
    ta, tb = _t(a), _t(b)
    for _ in range(WARM):
        ta @ tb
    want = _np(ta @ tb)
    seen = []
    launch_observers.append(lambda kernel, grid, args, meta: seen.append(kernel.__name__))
    try:
        assert torch.equal(_np(ta @ tb), want)
    finally:
        launch_observers.pop()
    assert seen == ["matmul_kernel"]
    K.set_replay(False)
    with K.count_replays() as counts:
        assert torch.equal(_np(ta @ tb), want)
    assert counts["interpreted"] == 1
    K.set_replay(True, verify=True)
    with K.count_replays() as counts:
        assert torch.equal(_np(ta @ tb), want)
    assert counts["replayed"] == 1  # the executor's verifying path
    K.set_replay(True, verify=False)
    graph = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(graph):
        y = ta @ tb
    a2 = torch.randn(6, 5)
    ta.copy_(_t(a2))
    graph.replay()
    with _Off():
        assert torch.equal(_np(y), _np(_t(a2) @ tb))


def test_a_plan_runs_from_other_threads():
    a, b = _t(torch.randn(7, 4, dtype=torch.float64)), _t(torch.randn(4, 5, dtype=torch.float64), True)
    for _ in range(WARM):
        want = a @ b
    got = []

    def work():
        out = a @ b
        out.sum().backward()
        got.append(out)
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and all(torch.equal(_np(o), _np(want)) for o in got)
    assert all(o.grad_fn.name() == "MmBackward0" for o in got)
    assert torch.allclose(_np(b.grad), 3 * _np(a).sum(0)[:, None].expand(4, 5), rtol=1e-12)


# (input shape, bias, activation, PyTorch's form)
_LINEARS = [((5, 3), True, None, lambda x, w, b: torch.nn.functional.linear(x, w, b)),
            ((5, 3), False, None, lambda x, w, b: torch.nn.functional.linear(x, w)),
            ((2, 4, 3), True, None, lambda x, w, b: torch.nn.functional.linear(x, w, b)),
            ((3,), True, None, lambda x, w, b: torch.nn.functional.linear(x, w, b)),
            ((2, 4, 3), True, "relu", lambda x, w, b: torch.nn.functional.linear(x, w, b).relu())]


@pytest.mark.executor_replay  # (plans are made once launches replay)
@pytest.mark.parametrize("shape,has_bias,act,ref", _LINEARS, ids=[f"{s}-{b}-{a}" for s, b, a, _ in _LINEARS])
def test_planned_linear_calls_give_the_general_paths_bytes_nodes_and_gradients(shape, has_bias, act, ref):
    from tgrad.nn.functional import dense
    gen = torch.Generator().manual_seed(len(shape))
    w, b = torch.randn(4, 3, dtype=torch.float64, generator=gen), torch.randn(4, dtype=torch.float64, generator=gen)
    results = []
    for k in range(WARM + 1):
        x = torch.randn(*shape, dtype=torch.float64, generator=gen) if k < WARM else results[0][0]
        g = torch.randn(*shape[:-1], 4, dtype=torch.float64, generator=gen) if k < WARM else results[0][1]
        tx, tw, tb = _t(x, True), _t(w, True), _t(b, True) if has_bias else None
        got = dense.linear_act(tx, tw, tb, act)
        got.backward(_t(g))
        px, pw, pb = x.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
        want = ref(px, pw, pb if has_bias else None)
        want.backward(g)
        assert torch.allclose(_np(got), want.detach(), rtol=1e-12, atol=1e-12)
        for t, p in ((tx, px), (tw, pw)) + (((tb, pb),) if has_bias else ()):
            assert torch.allclose(_np(t.grad), p.grad, rtol=1e-12, atol=1e-12)
        names = [got.grad_fn.name()] + [f.name() for f, _ in got.grad_fn.next_functions if f is not None]
        results.append((x, g, _np(got), _np(tx.grad), _np(tw.grad), names))
    assert any(key[0] == ("linear", act) for key in PLANS)
    first, last = results[0], results[-1]  # the general path's call and a planned call on the same numbers
    assert all(torch.equal(u, v) for u, v in zip(first[2:5], last[2:5])) and first[5] == last[5]
    with tgrad.no_grad():
        quiet = [dense.linear_act(_t(first[0]), _t(w), _t(b) if has_bias else None, act) for _ in range(WARM)]
    assert all(q.grad_fn is None and torch.equal(_np(q), first[2]) for q in quiet)


def test_linear_calls_a_plan_does_not_cover_take_the_general_path():
    from tgrad.nn.functional import dense
    x = _t(torch.randn(6, 4))
    w, b = _t(torch.randn(3, 4)), _t(torch.randn(3))
    for _ in range(WARM):
        dense.linear_act(x, w, b, "gelu")  # saves its input: not planned
        dense.linear_act(tgrad.ones(2, 4, dtype=tgrad.int64), tgrad.ones(3, 4, dtype=tgrad.int64))
        dense.linear_act(_t(torch.randn(0, 4)), w, b)  # nothing to launch
    assert not [key for key in PLANS if isinstance(key[0], tuple) and key[0][0] == "linear"]


@pytest.mark.executor_replay
def test_a_strided_input_plans_as_its_reshape_decides():
    """A transposed 3-d input (batch_first attention) is copied to rows, a sliced 2-d one read in place."""
    from tgrad.nn.functional import dense
    base, w, b = torch.randn(5, 4, 6), torch.randn(3, 6), torch.randn(3)
    cases = [lambda t: t.transpose(0, 1), lambda t: t[1, ::2]]
    for make in cases:
        with _Off():
            want = _np(dense.linear_act(make(_t(base)), _t(w), _t(b)))
        for _ in range(WARM):
            x = make(_t(base))
            assert not x._data.is_contiguous()
            got = dense.linear_act(x, _t(w), _t(b))
            assert torch.equal(_np(got), want)
    assert len([key for key in PLANS if key[0] == ("linear", None)]) == 2
