"""``launch_site`` (kernels/launch.py): a call site seen before replays from its tensors' addresses.

The pointwise kernel launches through it, so these tests use tgrad ops against PyTorch with
verify mode off (verify mode takes the general path, and there checks that a site's plan gives
the replay inputs binding gives), plus a small kernel for the contract's edges."""
import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime import executor as replay
from tgrad.kernels.runtime.launch import launch_observers, launch_site
from tgrad.kernels.runtime.sites import SitePlan
from tgrad.kernels.elementwise.pointwise import pointwise_kernel


@pytest.fixture(autouse=True)
def fresh_cache(empty_trace_cache):
    enabled, verify = K.replay_enabled(), K.replay_verify()
    K.set_replay(True, verify=False)
    K.clear_replay_cache()
    yield
    K.set_replay(enabled, verify=verify)


def _t(x):
    return tgrad.tensor(x.numpy())


@pytest.mark.executor_replay
def test_a_site_replays_after_recording_with_each_calls_own_tensors():
    with K.count_replays() as counts:
        for k in range(5):
            a, b = torch.randn(7, 5, dtype=torch.float64), torch.randn(7, 5, dtype=torch.float64)
            got = (_t(a) * _t(b)).numpy()
            assert torch.equal(torch.from_numpy(got), a * b)
    assert counts["replayed"] >= 3 and counts["recorded"] == 1


@pytest.mark.parametrize("aliased_first", [True, False])
def test_the_same_tensor_twice_is_another_site_than_two_tensors(aliased_first):
    a, b = torch.randn(9, dtype=torch.float64), torch.randn(9, dtype=torch.float64)
    ta, tb = _t(a), _t(b)
    calls = [(ta, ta, a * a), (ta, tb, a * b)]
    for _ in range(4):
        for x, y, want in calls if aliased_first else calls[::-1]:
            assert torch.equal(torch.from_numpy((x * y).numpy()), want)


def test_broadcast_and_strided_inputs_through_a_planned_site():
    for _ in range(4):
        a = torch.randn(6, 4, dtype=torch.float64)
        b = torch.randn(4, dtype=torch.float64)
        c = torch.randn(4, 6, dtype=torch.float64)
        got = (_t(a) + _t(b)) * _t(c).t()
        assert torch.equal(torch.from_numpy(got.numpy()), (a + b) * c.t())


def test_params_that_change_replay_as_inputs():
    x = torch.randn(11, dtype=torch.float64)
    tx = _t(x)
    for k in range(6):
        slope = 0.01 * (k + 1)
        got = tgrad.nn.functional.leaky_relu(tx, slope)
        assert torch.equal(torch.from_numpy(got.numpy()), torch.nn.functional.leaky_relu(x, slope))


@pytest.mark.executor_replay
def test_verify_mode_checks_planned_sites_against_binding():
    x = _t(torch.randn(5, 3))
    for _ in range(4):
        x.exp()  # planned with verify off
    K.set_replay(verify=True)
    with K.count_replays() as counts:
        for _ in range(3):
            x.exp()
    assert counts["replayed"] == 3  # the general path (which compares the plan), each replay verified


def test_replay_off_and_observers_take_the_general_path():
    x = torch.randn(8)
    tx = _t(x)
    for _ in range(4):
        tx.neg()
    K.set_replay(False)
    with K.count_replays() as counts:
        assert torch.equal(torch.from_numpy(tx.neg().numpy()), -x)
    assert counts["interpreted"] == 1
    K.set_replay(True)
    seen = []
    launch_observers.append(lambda kernel, grid, args, meta: seen.append(kernel.__name__))
    try:
        assert torch.equal(torch.from_numpy(tx.neg().numpy()), -x)
    finally:
        launch_observers.pop()
    assert seen == ["pointwise_kernel"]


@triton.jit
def _twice(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_a_tensor_argument_the_site_did_not_name_is_never_planned():
    x, out = torch.randn(6), torch.empty(6)
    for _ in range(4):
        hidden = x.clone()  # an argument that is not one of the site's tensors
        built = []
        launch_site(_twice, ("twice", 6), [out, x], lambda: built.append(1) or ((1,), (out, hidden, 6), {"BLOCK": 8}))
        assert built == [1] and torch.equal(out, 2 * x)
    assert not _twice.__dict__["_tgrad_replay"].sites


@pytest.mark.executor_replay
@pytest.mark.cpu_launch_decisions
def test_a_planned_site_replays_without_building():
    x, out = torch.randn(6), torch.empty(6)
    builds = []

    def build():
        builds.append(1)
        return (1,), (out, x, 6), {"BLOCK": 8}
    for _ in range(5):
        x.copy_(torch.randn(6))
        launch_site(_twice, ("twice", 6), [out, x], build)
        assert torch.equal(out, 2 * x)
    assert len(builds) == 3  # first sighting, recording, the first replay (which plans the site)
    assert replay.run_site(_twice, ("twice", 6), [out, x], build) and len(builds) == 3  # replayed, not built


@pytest.mark.executor_replay
@pytest.mark.cpu_launch_decisions
def test_verify_mode_catches_a_plan_that_binding_disagrees_with():
    x, y = _t(torch.randn(6)), _t(torch.randn(6))
    for _ in range(4):
        x + y  # plans the site
    state = pointwise_kernel.__dict__["_tgrad_replay"]
    (site, plan), = state.sites.items()
    shuffled = tuple((s, (i + 1) % 3) for s, i in plan.slots)  # addresses shuffled
    state.sites[site] = SitePlan(plan.key, plan.A, shuffled, plan.entry, state, site)
    K.set_replay(verify=True)
    try:
        with pytest.raises(replay.ReplayMismatch, match="launch_site plan"):
            x + y
    finally:
        K.clear_replay_cache()


@pytest.mark.executor_replay
@pytest.mark.launch_plans
def test_a_planned_site_whose_trace_left_the_cache_binds_again():
    a, b = torch.randn(6, 4, dtype=torch.float64), torch.randn(6, 4, dtype=torch.float64)
    ta, tb = _t(a), _t(b)
    for _ in range(4):
        ta + tb  # plans the site
    state = pointwise_kernel.__dict__["_tgrad_replay"]
    assert state.sites
    state.entries.clear()  # evicted (the plan still names the old entry)
    with K.count_replays() as counts:
        got = ta + tb
    assert torch.equal(torch.from_numpy(got.numpy()), a + b)
    assert counts["replayed"] == 0 and not state.sites  # the stale plan is dropped, the launch bound


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "permuted", "broadcast", "sliced"])
def test_fresh_outputs_of_a_planned_site_have_pytorchs_layout(layout):
    make = {"contiguous": lambda x: x, "transposed": lambda x: x.transpose(0, 2),
            "permuted": lambda x: x.permute(1, 2, 0), "broadcast": lambda x: x[:1],
            "sliced": lambda x: x[:, ::2]}[layout]
    for _ in range(4):  # the first calls decide the site, the later ones allocate from its plan
        a = make(torch.randn(3, 4, 5, dtype=torch.float64))
        b = make(torch.randn(3, 4, 5, dtype=torch.float64))
        ta, tb = tgrad.from_torch(a), tgrad.from_torch(b)  # the same layouts
        got, want = ta * tb, a * b
        assert got.stride() == want.stride() and torch.equal(torch.from_numpy(got.numpy()), want)
        got, want = ta.exp(), a.exp()
        assert got.stride() == want.stride()
        torch.testing.assert_close(torch.from_numpy(got.numpy()), want)
