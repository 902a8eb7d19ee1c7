"""The CPU executor's signatures (kernels/runtime/signature.py): what keys a launch's trace, which
trace serves a first sighting, and that values changing every launch (a seed, a scheduled learning
rate) add nothing to the caches."""
import pytest
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime import executor
from tgrad.kernels.runtime.launch import launch

pytestmark = [pytest.mark.usefixtures("replay_verify_mode"), pytest.mark.executor_replay]


def _cache_sizes():
    """Per kernel: signatures, first sightings remembered, plans, scalar contexts, trace bytes."""
    return {state.runner.fn.__name__: (len(state.entries), len(state.seen), len(state.plans), len(state.contexts),
                                       state.nbytes) for state in executor._states}


def test_training_with_dropout_and_a_scheduled_learning_rate_keeps_the_caches_flat():
    tgrad.manual_seed(0)
    torch.manual_seed(0)
    layer = tgrad.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.25, batch_first=True)
    opt = tgrad.optim.AdamW(layer.parameters(), lr=1e-2)
    sched = tgrad.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
    x = tgrad.tensor(torch.randn(2, 5, 8))

    def step():
        opt.zero_grad()
        layer(x).square().mean().backward()
        opt.step()
        sched.step()
    for _ in range(4):  # interpret, record, then a scalar that changed every step is a replay input
        step()
    before = _cache_sizes()
    with K.count_replays() as counts:
        for _ in range(12):
            step()
    assert _cache_sizes() == before  # fresh seeds and learning rates: no new plan, trace or byte
    assert counts["recorded"] == 0 and counts["interpreted"] == 0
    names = {name for name, sizes in before.items() if sizes[2]}
    # the kernels whose inputs change every step: dropout's seed (a scalar), the learning rate (in the
    # optimizer's constants tensor on the CPU)
    assert {"dropout_kernel", "optim_params_kernel"} <= names


@triton.jit
def _axpy(out_ptr, x_ptr, n, alpha_bits, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n  # n reaches only a mask: one trace serves every n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * alpha_bits.to(tl.float32), mask=mask)


@triton.jit
def _row_sums(out_ptr, x_ptr, n_rows, scale, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for r in range(n_rows):  # n_rows decides how many loads the trace has: keyed by its value
        acc += tl.load(x_ptr + r * BLOCK + offs)
    tl.store(out_ptr + offs, acc * tl.to_tensor(scale).to(tl.float32))  # scale == 1 is a constant on a GPU


def test_a_size_that_only_reaches_masks_replays_new_values_from_one_trace():
    x = torch.randn(32)
    with K.count_replays() as counts:
        for n, alpha in [(5, 2), (5, 2), (9, 2), (17, 3), (31, 5), (9, 3)]:
            out = torch.zeros(32)
            launch(_axpy, (1,), out, x, n, alpha, BLOCK=32)
            want = torch.zeros(32)
            want[:n] = x[:n] * alpha
            assert torch.equal(out, want)
    # (5, 2) interprets, then records; n = 9 makes n a replay input and records at once, probing
    # alpha: it only scales, so that recording is also the trace of any (n, alpha), which replays
    # every later launch (without the probe, alpha's second value would record again)
    assert counts == {"interpreted": 1, "recorded": 2, "replayed": 3}
    state = _axpy.__dict__["_tgrad_replay"]
    assert len(state.entries) == 3 and not state.pinned


def test_a_scalar_that_decides_the_trace_is_pinned_to_its_value():
    x = torch.randn(4, 8)
    with K.count_replays() as counts:
        for n_rows, scale in [(2, 1), (2, 1), (2, 2), (3, 2), (3, 5), (2, 7)]:
            out = torch.empty(8)
            launch(_row_sums, (1,), out, x, n_rows, scale, BLOCK=8)
            assert torch.allclose(out, x[:n_rows].sum(0) * scale)
    # the probe at (2, 2) finds n_rows read by the loop: keyed by its value from then on, so each
    # n_rows has its own trace without guards (not one trace whose guards fail for the other)
    assert counts == {"interpreted": 1, "recorded": 3, "replayed": 2}
    state = _row_sums.__dict__["_tgrad_replay"]
    assert state.pinned == {2} and all(v.guards is None for e in state.entries.values() for v in e.variants)


@triton.jit
def _offset_copy(out_ptr, x_ptr, shift, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.to_tensor(shift).to(tl.float32))  # shift == 1: a constant


def test_a_scalar_that_changes_every_launch_records_on_its_second_launch():
    x = torch.randn(16)
    with K.count_replays() as counts:
        for shift in range(5):
            out = torch.empty(16)
            launch(_offset_copy, (1,), out, x, shift, BLOCK=16)
            assert torch.equal(out, x + shift)
    # the second value makes the scalar a replay input; that signature recurs, so it records at once
    assert counts == {"interpreted": 1, "recorded": 1, "replayed": 3}
