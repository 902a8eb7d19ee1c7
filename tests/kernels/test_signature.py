"""The CPU executor's signatures (kernels/runtime/signature.py): what keys a launch's trace, and that
values changing every launch (a seed, a scheduled learning rate) add nothing to the caches."""
import torch

import tgrad
import tgrad.kernels as K
from tgrad.kernels.runtime import executor


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
    assert {"dropout_kernel", "optim_step_kernel"} <= names  # the kernels whose scalars change every step
