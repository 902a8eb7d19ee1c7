"""Launches whose arguments hold tuples (kernels/runtime/signature.py): ``index_kernel``'s tuple of
index tensors and nested tuples of strides are keyed like top-level arguments (tensors by dtype,
their addresses replay inputs; ints as scalars), so they record on their second launch and replay
from the third, in verify mode (each replay also interpreted and the bytes compared)."""
import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime import executor
from tgrad.kernels.runtime.launch import launch

pytestmark = [pytest.mark.usefixtures("replay_verify_mode"), pytest.mark.executor_replay]


def _third_launch_replays(op, want):
    """Run ``op`` three times on fresh inputs; the third run interprets and records nothing."""
    for step in range(3):
        with K.count_replays() as counts:
            got = op(step)
        torch.testing.assert_close(torch.from_numpy(got.numpy()), want(step), rtol=0, atol=0)
    assert counts.get("interpreted", 0) == 0 and counts.get("recorded", 0) == 0 and counts["replayed"] > 0, counts
    assert not [r for r in executor.fallback_reasons if r.startswith("index_kernel: arguments")]


def _data(step, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(step), dtype=torch.float64)


def _index(step, n, size):
    return torch.randint(-size, size, (n,), generator=torch.Generator().manual_seed(100 + step))


def test_advanced_indexing_replays_on_its_third_launch():
    def op(step):
        x = tgrad.tensor(_data(step, 5, 6, 4))
        return x[tgrad.tensor(_index(step, 7, 5)), :, tgrad.tensor(_index(step, 7, 4).int())]
    _third_launch_replays(op, lambda step: _data(step, 5, 6, 4)[_index(step, 7, 5), :, _index(step, 7, 4)])


def test_index_select_and_its_backward_replay_on_their_third_launch():
    g = torch.randn(3, 6, dtype=torch.float64)

    def op(step):
        x = tgrad.tensor(_data(step, 9, 3), requires_grad=True)
        y = tgrad.index_select(x, 0, tgrad.tensor(_index(step, 6, 9) % 9))
        y.backward(tgrad.tensor(g.t().contiguous()))
        return x.grad

    def want(step):
        x = _data(step, 9, 3).requires_grad_()
        torch.index_select(x, 0, _index(step, 6, 9) % 9).backward(g.t())
        return x.grad
    _third_launch_replays(op, want)


def test_flip_replays_on_its_third_launch():
    _third_launch_replays(lambda step: tgrad.flip(tgrad.tensor(_data(step, 4, 5, 3)), (0, 2)),
                          lambda step: torch.flip(_data(step, 4, 5, 3), (0, 2)))


@triton.jit
def _weighted_sum(out_ptr, ptrs, pairs, n, N: tl.constexpr, M: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], tl.float64)
    for k in tl.static_range(N):
        acc += tl.load(ptrs[k] + offs, mask=mask, other=0).to(tl.float64)
    for k in tl.static_range(M):  # pairs[k]: (tensor, (int scale, float scale))
        acc += tl.load(pairs[k][0] + offs, mask=mask, other=0).to(tl.float64) * pairs[k][1][0] * pairs[k][1][1]
    tl.store(out_ptr + offs, acc, mask=mask)


def _weighted(ptrs, pairs, n=10):
    out = torch.zeros(16, dtype=torch.float64)
    launch(_weighted_sum, (1,), out, ptrs, pairs, n, N=len(ptrs), M=len(pairs), BLOCK=16)
    return out


@pytest.mark.parametrize("dtypes", [(), (torch.float32,), (torch.float32, torch.int64, torch.float64, torch.int8)])
def test_a_tuple_of_tensors_of_any_dtypes_and_nested_tuples_replay(dtypes):
    def inputs(step):
        g = torch.Generator().manual_seed(step)
        ptrs = tuple((torch.randn(16, generator=g) * 10).to(d) for d in dtypes)
        pairs = ((torch.randn(16, generator=g, dtype=torch.float64), (step + 2, 0.5)),
                 (torch.arange(16, dtype=torch.int32) * step, (-3, 1.5)))
        want = sum((p.double() for p in ptrs), torch.zeros(16, dtype=torch.float64))
        want = want + sum(t.double() * s * f for t, (s, f) in pairs)
        want[10:] = 0
        return ptrs, pairs, want
    for step in range(5):
        ptrs, pairs, want = inputs(step)
        with K.count_replays() as counts:
            got = _weighted(ptrs, pairs)
        torch.testing.assert_close(got, want)
    # the int scale changes every launch: a replay input (as a top-level scalar would be)
    assert counts == {"replayed": 1}, counts
    if dtypes:
        with K.count_replays() as counts:  # other dtypes inside the tuple: another signature
            torch.testing.assert_close(_weighted(tuple(p.double() for p in ptrs), pairs), want)
        assert counts == {"interpreted": 1}, counts
