"""The CPU executor (kernels/replay.py): recorded launches replay the interpreter's computation.

Every test runs its launches enough times to interpret (first sighting), record (second) and replay
(third on), in verify mode where each replay is also interpreted from the same memory and the bytes
compared, and checks the results against PyTorch or plain interpretation."""
import threading

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpreterBuilder, TensorHandle, interpreter_semantic

import tgrad
import tgrad.kernels as K
from support.kernel_guard import memory_checked
from tgrad.kernels.runtime import interpreter as I, executor as replay, triton_private
from tgrad.kernels.runtime.launch import launch

# replays are what it tests: --memory-check, which turns them off, skips it
pytestmark = [pytest.mark.usefixtures("replay_verify_mode"), pytest.mark.executor_replay]


def _counted(fn, times=4):
    with K.count_replays() as counts:
        results = [fn(k) for k in range(times)]
    return results, counts


@triton.jit
def _loop_after_store(out_ptr, n_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32))
    n = tl.load(n_ptr)  # the loop bound is loaded after the store: a guard hoisted above it
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(n):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + offs, acc)


def test_loop_bound_loaded_after_a_store_replays_and_records_a_variant_when_it_changes():
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(0))
    out = torch.empty(8)

    def step(k):
        n = torch.tensor([3 if k < 3 else 5], dtype=torch.int32)
        launch(_loop_after_store, (1,), out, n, x, BLOCK=8)
        return out.clone(), int(n)
    results, counts = _counted(step, 6)
    for r, n in results:
        # the kernel's float32 running sum against float64: a near-cancelling column is off by an ulp of its terms
        assert torch.allclose(r.double(), x[:n].double().sum(0), rtol=1e-6, atol=1e-6)
    assert counts["replayed"] >= 2 and counts["recorded"] == 2  # n = 3, then a variant for n = 5


def test_loop_bound_in_the_stored_tensor_is_not_hoisted_over_the_store():
    def step(k):
        buf = torch.tensor([7.0] * 8)  # the store writes the loop bound's own memory: 0 trips after it
        nb = buf.view(torch.int32)
        x = torch.randn(2, 8)
        launch(_loop_after_store, (1,), buf, nb, x, BLOCK=8)
        return buf.clone()
    results, counts = _counted(step, 4)
    for r in results:
        assert torch.equal(r, torch.zeros(8))  # n was read after the zeros were stored
    assert counts["replayed"] == 0  # refused (or fell back): the store reaches the guard's load
    assert any("same tensor" in reason or "writes" in reason for reason in K.fallback_reasons
               if reason.startswith("_loop_after_store"))


@triton.jit
def _gather(out_ptr, table_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    i = tl.load(idx_ptr + offs, mask=mask, other=0)
    v = tl.load(table_ptr + i, mask=mask, other=0.0)
    tl.store(out_ptr + offs, v * 2.0, mask=mask)


def test_output_aliasing_its_input_table_replays_what_the_interpreter_computes():
    def step(k):
        table = torch.arange(10, dtype=torch.float32)
        idx = torch.tensor([9, 0, 3, 3, 1, 8, 2], dtype=torch.int32)
        launch(_gather, (1,), table, table, idx, 7, BLOCK=8)  # out is the table
        return table
    results, counts = _counted(step)
    expected = torch.arange(10, dtype=torch.float32)
    expected[:7] = torch.arange(10, dtype=torch.float32)[[9, 0, 3, 3, 1, 8, 2]] * 2
    for r in results:
        assert torch.equal(r, expected)
    assert counts["replayed"] == 2


@triton.jit
def _halve_until_small(x_ptr, out_ptr, n, STORE_EACH_SWEEP: tl.constexpr, BLOCK: tl.constexpr):
    # a data-dependent while loop, one program per row (as a Jacobi eigensolver's sweeps would be)
    row = tl.program_id(0) * n
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row + offs, mask=mask, other=0.0)
    while tl.max(tl.abs(x), axis=0) > 1.0:
        x = x * 0.5
        if STORE_EACH_SWEEP:  # written back and read again: the loop's condition reads what it stored
            tl.store(out_ptr + row + offs, x, mask=mask)
            x = tl.load(out_ptr + row + offs, mask=mask, other=0.0)
    tl.store(out_ptr + row + offs, x, mask=mask)


@pytest.mark.parametrize("store_each_sweep", [False, True])
def test_a_while_loop_on_loaded_data_replays_or_interprets_with_the_right_results(store_each_sweep):
    def step(k):
        x = torch.randn(3, 5, generator=torch.Generator().manual_seed(k % 3)) * 4 ** (k % 3)
        out = torch.zeros(3, 5)
        launch(_halve_until_small, (3,), x, out, 5, STORE_EACH_SWEEP=store_each_sweep, BLOCK=8)
        expected = x.clone()
        for r in expected:
            while r.abs().max() > 1.0:
                r *= 0.5
        return out, expected
    results, counts = _counted(step, 8)
    for out, expected in results:
        assert torch.equal(out, expected)
    if store_each_sweep:  # the guards' loads follow stores to the same memory: every launch interprets
        assert counts["replayed"] == 0
        assert K.fallback_reasons["_halve_until_small: a guard reads memory an earlier store of the launch writes"]
    else:  # a variant per trip counts seen: the launches that repeat one replay
        assert counts["replayed"] >= 2


@triton.jit
def _branch_on_flag(out_ptr, flag_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if tl.load(flag_ptr) != 0:
        tl.store(out_ptr + offs, x + 1.0)
    else:
        tl.store(out_ptr + offs, x * 3.0)


def test_branch_on_a_loaded_flag_that_flips_follows_the_flag():
    x = torch.randn(16)
    out = torch.empty(16)

    def step(k):
        flag = torch.tensor([k % 3 == 2], dtype=torch.int8)
        launch(_branch_on_flag, (1,), out, flag, x, BLOCK=16)
        return out.clone(), bool(flag)
    results, counts = _counted(step, 9)
    for r, f in results:
        assert torch.equal(r, x + 1.0 if f else x * 3.0)
    assert counts["recorded"] == 2 and counts["replayed"] >= 5  # one trace per outcome of the guard


@triton.jit
def _scatter_add(out_ptr, idx_ptr, v_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    i = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.atomic_add(out_ptr + i, tl.load(v_ptr + offs, mask=mask, other=0.0), mask=mask)


def test_colliding_atomics_accumulate_every_lane():
    def step(k):
        g = torch.Generator().manual_seed(k)
        idx = torch.randint(0, 3, (13,), generator=g, dtype=torch.int32)  # many lanes per address
        v = torch.randn(13, generator=g, dtype=torch.float64)
        out = torch.zeros(3, dtype=torch.float64)
        launch(_scatter_add, (1,), out, idx, v, 13, BLOCK=16)
        return out, torch.zeros(3, dtype=torch.float64).index_add_(0, idx.long(), v)
    results, counts = _counted(step)
    for r, ref in results:
        assert torch.allclose(r, ref)
    assert counts["replayed"] == 2


@triton.jit
def _branch_on_atomic(counter_ptr, out_ptr):
    old = tl.atomic_add(counter_ptr, 1)
    if old > 0:
        tl.store(out_ptr, old)


def test_a_decision_on_an_atomics_result_is_refused_and_interprets():
    counter = torch.zeros(1, dtype=torch.int32)
    out = torch.full((1,), -1, dtype=torch.int32)
    results, counts = _counted(lambda k: launch(_branch_on_atomic, (1,), counter, out) or out.item(), 5)
    assert results == [-1, 1, 2, 3, 4]
    assert counts["replayed"] == 0 and counts["recorded"] == 0 and counts["interpreted"] == 5
    assert K.fallback_reasons["_branch_on_atomic: a Python decision on an atomic's result"] >= 1


def test_changing_learning_rate_replays_instead_of_recording_every_step():
    torch.manual_seed(0)
    w0 = torch.randn(7, 3, dtype=torch.float64)
    p, q = tgrad.tensor(w0.clone(), requires_grad=True), w0.clone().requires_grad_(True)
    opt, ref = tgrad.optim.SGD([p], lr=0.1, momentum=0.5), torch.optim.SGD([q], lr=0.1, momentum=0.5)
    with K.count_replays() as counts:
        for k in range(12):
            for o in (opt, ref):
                o.param_groups[0]["lr"] = 0.1 / (k + 1)
            (p * p).sum().backward()
            (q * q).sum().backward()
            opt.step()
            ref.step()
    assert torch.allclose(p._data, q.detach())
    launches = sum(counts.values())
    assert counts["recorded"] < launches // 3  # a new learning rate every step does not mean a new trace


def test_random_kernels_draw_fresh_numbers_each_launch_as_interpreted():
    def draws():
        tgrad.manual_seed(5)
        return [tgrad.rand(37)._data.clone() for _ in range(12)]
    with K.count_replays() as counts:
        replayed = draws()
    assert counts["replayed"] >= 2
    K.set_replay(False)
    interpreted = draws()
    for a, b in zip(replayed, interpreted):
        assert torch.equal(a, b)
    assert len({tuple(a.tolist()) for a in replayed}) == 12  # fresh numbers every launch


def test_segment_sums_with_different_duplicate_counts():
    weight = torch.randn(6, 5, dtype=torch.float64)

    def step(k):
        idx = [[0, 1, 2], [3, 3, 1], [5, 5, 5], [0, 1, 2], [2, 2, 4], [4, 4, 4]][k]
        w = tgrad.tensor(weight.clone(), requires_grad=True)
        wt = weight.clone().requires_grad_(True)
        g = torch.randn(3, 5, dtype=torch.float64)
        tgrad.nn.functional.embedding(tgrad.tensor(idx), w).backward(tgrad.tensor(g))
        torch.nn.functional.embedding(torch.tensor(idx), wt).backward(g)
        return w.grad._data, wt.grad
    results, counts = _counted(step, 6)
    for r, ref in results:
        assert torch.allclose(r, ref)
    assert counts["replayed"] > 0


def test_a_failing_guard_records_a_variant_and_bounded_variants_then_interpret():
    x = torch.randn(3 * 8)
    out = torch.empty(8)
    with K.count_replays() as counts:
        for k in range(2 * replay.MAX_VARIANTS + 4):
            n = torch.tensor([k % (replay.MAX_VARIANTS + 2)], dtype=torch.int32)  # more outcomes than variants
            launch(_loop_after_store, (1,), out, n, x.repeat(4), BLOCK=8)
            assert torch.allclose(out, x.repeat(4).view(-1, 8)[:int(n)].sum(0))
    assert counts["recorded"] == replay.MAX_VARIANTS
    assert K.fallback_reasons["_loop_after_store: guards keep failing"] > 0


def test_memory_checker_disables_replay_while_active():
    x = tgrad.randn(5, 4)
    for _ in range(3):
        (x * 2).sum()  # recorded and replayed
    with K.count_replays() as counts, memory_checked() as violations:
        for _ in range(3):
            (x * 2).sum()
    assert counts["replayed"] == 0 and counts["interpreted"] > 0 and not violations
    with K.count_replays() as counts:
        (x * 2).sum()
    assert counts["replayed"] > 0


def test_verify_mode_catches_a_replay_that_differs():
    x = tgrad.randn(9)
    for _ in range(3):
        x + 1
    state = next(s for s in replay._states if s.runner.fn.__name__ == "pointwise_kernel")
    variants = [v for e in state.entries.values() for v in e.variants]
    saved = [v.run for v in variants]
    try:
        for v in variants:  # a fault injected from outside: every replay stores nothing
            v.run = lambda A: None
        with pytest.raises(K.ReplayMismatch, match="pointwise_kernel"):
            x + 1
    finally:
        for v, run in zip(variants, saved):
            v.run = run


def test_threads_replay_concurrently_with_the_right_results():
    xs = [torch.randn(50, dtype=torch.float64) for _ in range(4)]
    errors = []

    def work(x):
        try:
            t = tgrad.tensor(x)
            for _ in range(20):
                assert torch.allclose((t * 3 + 1).exp()._data, (x * 3 + 1).exp())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_captured_graph_replays_without_interpreting():
    tgrad.manual_seed(0)
    model = tgrad.nn.Sequential(tgrad.nn.Linear(3, 5), tgrad.nn.ReLU(), tgrad.nn.Linear(5, 1))
    x = tgrad.randn(7, 3)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        y = model(x).sum()
    expected = model(x).sum().item()
    with K.count_replays() as counts:
        g.replay()
    assert counts["interpreted"] == 0 and counts["replayed"] > 0
    assert y.item() == pytest.approx(expected)


def test_unsupported_triton_version_is_a_clear_error(monkeypatch):
    import importlib
    monkeypatch.setattr(triton, "__version__", "9.9.0")
    with pytest.raises(RuntimeError, match=r"tested with Triton 3\.9.*installed Triton is 9\.9\.0"):
        importlib.reload(triton_private)
    monkeypatch.undo()
    importlib.reload(triton_private)


def test_counts_are_readable_and_replays_are_still_counted_as_launches():
    x = tgrad.randn(4, 6)
    with tgrad.count_launches() as launches, K.count_replays() as counts:
        for _ in range(4):
            x.relu()
    assert sum(launches.values()) == 4 == sum(counts.values())
    assert counts == {"interpreted": 1, "recorded": 1, "replayed": 2}
    assert np.all(x.relu()._data.numpy() == np.maximum(x._data.numpy(), 0))


def test_a_patched_builder_class_also_disables_replay(monkeypatch):
    x = tgrad.randn(6)
    for _ in range(3):
        x * 3
    seen = []
    original = InterpreterBuilder.create_masked_store

    def counting_store(self, ptrs, value, mask, cache_policy):
        seen.append(ptrs.data.size)
        return original(self, ptrs, value, mask, cache_policy)
    monkeypatch.setattr(InterpreterBuilder, "create_masked_store", counting_store)
    with K.count_replays() as counts:
        y = x * 3
    assert counts == {"interpreted": 1} and seen
    assert torch.equal(y._data, x._data * 3)


@pytest.mark.parametrize("where", ["instance", "class"])
def test_a_patched_masked_load_makes_a_planned_add_interpret(where):
    # the call plans' replay (SitePlan.bound, which verify mode leaves) asks the builder as every
    # other replay does
    K.set_replay(verify=False)  # (the fixture restores it)
    a, b = tgrad.randn(32), tgrad.randn(32)
    for _ in range(4):
        a + b
    seen = []
    original = InterpreterBuilder.create_masked_load

    def counting_load(*args):
        seen.append(1)
        return original(*args) if where == "class" else original(triton_private.interpreter_builder, *args)
    target = InterpreterBuilder if where == "class" else triton_private.interpreter_builder
    target.create_masked_load = counting_load
    try:
        with K.count_replays() as counts:
            y = a + b
    finally:  # (not monkeypatch: its undo leaves a bound method on the instance)
        if where == "class":
            target.create_masked_load = original
        else:
            delattr(target, "create_masked_load")
    assert counts == {"interpreted": 1} and len(seen) == 2
    assert torch.equal(y._data, a._data + b._data)
    with K.count_replays() as counts:
        a + b
    assert counts == {"replayed": 1}


@triton.jit
def _unmasked_twice(out_ptr, x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


@pytest.mark.parametrize("name", ["create_masked_load", "create_masked_store"])
def test_a_patched_method_an_unmasked_load_calls_makes_it_interpret(name, monkeypatch):
    # tl.load without a mask is the builder's create_load, which calls create_masked_load (and a
    # store create_masked_store): patching either must reach the launch
    x, out = torch.randn(8), torch.empty(8)
    for _ in range(3):
        launch(_unmasked_twice, (1,), out, x, BLOCK=8)
    seen = []
    original = getattr(InterpreterBuilder, name)

    def counting(*args):
        seen.append(1)
        return original(*args)
    monkeypatch.setattr(InterpreterBuilder, name, counting)
    x.copy_(torch.randn(8))
    with K.count_replays() as counts:
        launch(_unmasked_twice, (1,), out, x, BLOCK=8)
    assert torch.equal(out, 2 * x) and counts == {"interpreted": 1} and seen



def test_the_lean_broadcast_gives_tritons_operands_and_is_undone_after_the_launch():
    # kernels/interpreter.py shortcuts the semantic's broadcast_impl_value for same-shape blocks
    # and scalar splats; each case must give the types and values Triton's own gives

    def block(shape, dtype=tl.float32):
        data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 2.5
        return tl.tensor(TensorHandle(data, dtype), tl.block_type(dtype, list(shape)))

    def scalar(value, dtype):
        return tl.tensor(TensorHandle(np.array([value], dtype=np.float64 if dtype == tl.float64 else np.int32),
                                      dtype), dtype)
    cases = [(block((4, 8)), block((4, 8))), (block((4, 1)), block((1, 8))), (block((8,)), block((4, 8))),
             (block((4, 8)), scalar(3, tl.int32)), (scalar(1.5, tl.float64), block((2, 4))),
             (block((2, 1)), scalar(-0.0, tl.float64)), (scalar(2, tl.int32), scalar(1.5, tl.float64))]
    with I._interpreting():
        assert vars(interpreter_semantic)["broadcast_impl_value"] is I._broadcast_value
        for lhs, rhs in cases:
            got = I._broadcast_value(lhs, rhs)
            want = I._broadcast_impl_value(interpreter_semantic, lhs, rhs)
            for g, w in zip(got, want):
                assert g.type == w.type and g.dtype == w.dtype
                assert g.handle.data.dtype == w.handle.data.dtype
                assert np.array_equal(np.signbit(g.handle.data), np.signbit(w.handle.data))
                assert np.array_equal(g.handle.data, w.handle.data)
    assert "broadcast_impl_value" not in vars(interpreter_semantic)  # compiled kernels see Triton's own
