"""Memory and graph lifetime: what backward() frees, and that training does not accumulate anything.

- After ``backward()`` without ``retain_graph`` the graph's saved tensors are released at once, even
  while the output (and so the graph's nodes) is still referenced; with ``retain_graph=True`` they
  live until the output goes. Both by reference counting alone: the collector is disabled in these
  tests, so a reference cycle anywhere in a graph would keep it alive and fail them.
- A training loop (MLP, cross-entropy, Adam) keeps the number of live tgrad Tensors and torch
  tensors (storages) exactly constant from step to step, and the process RSS flat.

The loop runs the issue's 2,000 steps (~9 launches each; about 45 s under the interpreter) and
checks the counts at every 400th step: they must be *identical* at every checkpoint (a leak of one
tensor per step would show as +400 between checkpoints), and the RSS may not grow by more than
``RSS_SLACK`` (1 MiB) over the last 1,600 steps, while a leak of one batch of activations per step
(64 x 32 floats, 8 KiB) would add 13 MiB. All of it runs with the garbage collector disabled (reference
counting only), so "flat" here means flat without any gc.collect().
"""
from __future__ import annotations

import gc
import os
import weakref
from contextlib import contextmanager

import torch

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
import tgrad.optim as optim

STEPS, EVERY = 2000, 400
RSS_SLACK = 1 << 20


@contextmanager
def no_collector():
    """Reference counting only: a cycle would keep its objects alive until a collection."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def live_counts():
    """(tgrad Tensors, torch tensors) alive now, found by walking the collector's objects (which
    does not collect)."""
    objs = gc.get_objects()
    return sum(issubclass(type(o), tgrad.Tensor) for o in objs), sum(type(o) is torch.Tensor for o in objs)


def rss_bytes():
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_backward_frees_saved_tensors_while_the_graph_is_still_referenced():
    with no_collector():
        x = tgrad.randn(5, 3, requires_grad=True)
        h = x.exp()         # ExpBackward0 saves h (its output)
        y = h.tanh()        # TanhBackward0 saves y
        z = (y * h).sum()   # MulBackward0 saves y and h
        h_ref, y_ref = weakref.ref(h), weakref.ref(y)
        node = z.grad_fn
        del h, y
        assert h_ref() is not None and y_ref() is not None  # the graph holds them for the backward
        z.backward()
        assert h_ref() is None and y_ref() is None   # freed by backward, though z and its nodes live on
        assert node is z.grad_fn and x.grad is not None


def test_retain_graph_keeps_saved_tensors_until_the_output_goes():
    with no_collector():
        x = tgrad.randn(4, requires_grad=True)
        h = x.sigmoid()
        z = (h * h).sum()
        h_ref = weakref.ref(h)
        del h
        z.backward(retain_graph=True)
        assert h_ref() is not None
        z.backward()  # the second pass works, then frees
        assert h_ref() is None
        assert torch.allclose(x.grad.torch(), 2 * 2 * (x.sigmoid() * x.sigmoid() * (1 - x.sigmoid())).torch())


def test_a_dropped_graph_is_freed_without_backward():
    with no_collector():
        x = tgrad.randn(6, 6, requires_grad=True)
        out = (x @ x).relu().softmax(-1).log().mean()
        refs = [weakref.ref(out), weakref.ref(out.grad_fn)]
        del out
        assert all(r() is None for r in refs)


def _model():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))


def test_training_keeps_live_tensors_and_memory_flat():
    model = _model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    x = tgrad.from_torch(torch.randn(64, 8, generator=gen))
    t = tgrad.from_torch(torch.randint(0, 4, (64,), generator=gen))
    counts, rss, losses = [], [], []
    with no_collector():
        for step in range(STEPS + 1):
            loss = F.cross_entropy(model(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 10 == 0:
                losses.append(loss.item())
            del loss
            if step % EVERY == 0 and step:
                counts.append(live_counts())
                rss.append(rss_bytes())
    assert len(set(counts)) == 1, f"live (tgrad, torch) tensors at every {EVERY} steps: {counts}"
    assert max(rss) - rss[0] <= RSS_SLACK, f"RSS grew by {(max(rss) - rss[0]) / 2 ** 20:.1f} MiB: {rss}"
    assert losses[-1] < losses[0]  # it did train


def test_a_leak_would_be_seen():
    """The counting itself: keeping one output per step shows as growth between checkpoints."""
    model = _model()
    x = tgrad.randn(4, 8)
    kept, counts = [], []
    with no_collector():
        for step in range(1, 3 * 5 + 1):
            kept.append(model(x).sum())
            if step % 5 == 0:
                counts.append(live_counts()[0])
    assert counts[0] < counts[1] < counts[2]
