"""Graph capture (``tgrad.graphs``, ``tgrad.cuda.CUDAGraph``): a captured training step, replayed on
new inputs copied into the captured tensors, trains exactly as the same steps run eagerly -- and as
PyTorch trains in float64. Random draws (dropout) in a graph draw fresh numbers each replay, the
ones eager steps draw. Host reads refuse to be captured; bad class indices in a replay give NaN,
never another row's values; a failed capture leaves nothing behind. (Captures and threads:
test_graph_threads.py.)"""
from collections import Counter

import pytest
import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn as nn
from support.launches import record_launches
from support.reference import requires_cuda, uniform64
from tgrad.kernels.runtime.capture import is_capturing
from tgrad.kernels.runtime.launch import count_launches, launch_counts, launch_observers

STEPS = 5


def _batches(n, seed=0, batch=6, features=5, classes=3):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, features, generator=g, dtype=torch.float64),
             torch.randint(0, classes, (batch,), generator=g)) for _ in range(n)]


def _model(device, batch_norm=False):
    tgrad.manual_seed(0)
    # no bias before a batch norm (it would cancel: its gradient is rounding noise, which Adam amplifies)
    layers = ([nn.Linear(5, 16, bias=not batch_norm)] + ([nn.BatchNorm1d(16)] if batch_norm else [])
              + [nn.Tanh(), nn.Linear(16, 3)])
    return nn.Sequential(*layers).to(device)


def _optimizer(name, params):
    if name == "sgd":
        return tgrad.optim.SGD(params, lr=0.1, momentum=0.9)
    return tgrad.optim.Adam(params, lr=0.05, capturable=True)


def _train_eager(device, opt_name, data, batch_norm=False):
    model = _model(device, batch_norm)
    opt = _optimizer(opt_name, model.parameters())
    losses = []
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(tgrad.tensor(x.float(), device=device)),
                                           tgrad.tensor(y, device=device))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def _train_graphed(device, opt_name, data, batch_norm=False, graph=None):
    """The first batch runs eagerly (warm-up: optimizer state); the second is captured; the rest
    are replays fed by copying into the captured inputs."""
    model = _model(device, batch_norm)
    opt = _optimizer(opt_name, model.parameters())
    static_x = tgrad.zeros(data[0][0].shape, device=device)
    static_y = tgrad.zeros(data[0][1].shape, dtype=tgrad.long, device=device)

    def step():
        loss = nn.functional.cross_entropy(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    def feed(x, y):
        static_x.copy_(tgrad.tensor(x.float(), device=device))
        static_y.copy_(tgrad.tensor(y, device=device))

    losses = []
    feed(*data[0])
    opt.zero_grad(set_to_none=True)
    losses.append(step().item())
    g = graph or tgrad.graphs.Graph(device)
    feed(*data[1])
    opt.zero_grad(set_to_none=True)
    with tgrad.graphs.graph(g):
        static_loss = step()
    if device == "cuda":
        g.replay()  # a CUDA capture records without running: replay once to run the captured batch
    losses.append(static_loss.item())
    for x, y in data[2:]:
        feed(x, y)
        g.replay()
        losses.append(static_loss.item())
    return model, losses, g


def _train_torch(data, opt_name, model):
    """PyTorch in float64 from the same initial weights."""
    layers = []
    for m in model:
        if isinstance(m, nn.Linear):
            lin = torch.nn.Linear(m.in_features, m.out_features, bias=m.bias is not None).double()
            lin.weight.data.copy_(m.weight.torch().double())
            if m.bias is not None:
                lin.bias.data.copy_(m.bias.torch().double())
            layers.append(lin)
        elif isinstance(m, nn.BatchNorm1d):
            layers.append(torch.nn.BatchNorm1d(m.num_features).double())
        else:
            layers.append(torch.nn.Tanh())
    ref = torch.nn.Sequential(*layers)
    opt = (torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9) if opt_name == "sgd"
           else torch.optim.Adam(ref.parameters(), lr=0.05))
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(ref(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return ref, losses


@pytest.mark.parametrize("batch_norm", [False, True], ids=["mlp", "batchnorm"])
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_replayed_steps_train_as_eager_steps_and_as_pytorch(opt_name, batch_norm):
    data = _batches(STEPS)
    eager, eager_losses = _train_eager("cpu", opt_name, data, batch_norm)
    graphed, graphed_losses, g = _train_graphed("cpu", opt_name, data, batch_norm)
    assert graphed_losses == eager_losses  # the same kernels on the same numbers: bit for bit
    for a, b in zip(eager.state_dict().values(), graphed.state_dict().values()):
        assert torch.equal(a.torch(), b.torch())
    ref, ref_losses = _train_torch(data, opt_name, _model("cpu", batch_norm))  # from the same initial weights
    torch.testing.assert_close(torch.tensor(graphed_losses, dtype=torch.float64),
                               torch.tensor(ref_losses, dtype=torch.float64),
                               rtol=1e-4, atol=1e-5)
    for got, want in zip(graphed.state_dict().values(), ref.state_dict().values()):
        torch.testing.assert_close(got.torch().to(want.dtype), want, rtol=1e-4, atol=1e-5)


def test_replay_makes_the_captured_launches_and_counts_them():
    data = _batches(3)
    with count_launches() as eager_step:
        _train_eager("cpu", "sgd", data[:1])
    model, _, g = _train_graphed("cpu", "sgd", data)
    assert sum(g.launches.values()) > 0
    before = launch_counts.copy()
    g.replay()
    after = launch_counts.copy()
    after.subtract(before)
    assert +after == g.launches
    assert "Graph(device=cpu" in repr(g)
    # each launch replays its captured trace (none interprets or records), counted as replayed,
    # whether the replay calls the traces directly (the executor's switches on) or launch by launch
    was = tgrad.kernels.replay_verify()
    try:
        for verify in (False, True):
            tgrad.kernels.set_replay(verify=verify)
            with tgrad.kernels.count_replays() as counts:
                g.replay()
            assert dict(counts) == {"replayed": sum(g.launches.values())}
    finally:
        tgrad.kernels.set_replay(verify=was)


def test_storage_ops_between_launches_are_replayed():
    """A copy torch makes between kernels (reshape of a transposed view) reruns on replay."""
    a = tgrad.zeros(3, 4)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        out = (a.t().reshape(-1) * 2.0).sum(0, keepdim=True) + a.t().reshape(-1)
    for seed in range(2):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        a.copy_(tgrad.tensor(x.float()))
        g.replay()
        want = (x.t().reshape(-1) * 2.0).sum(0, keepdim=True) + x.t().reshape(-1)
        torch.testing.assert_close(out.torch().double(), want, rtol=1e-6, atol=1e-6)


def test_fresh_factories_and_clones_replay_in_place_with_the_captured_values():
    """A fresh tensor torch makes inside a capture (full, ones, zeros, a clone) is replayed by
    writing the captured tensor in place -- filled with the captured value, or copied from the
    clone's source -- not made again: an in-place change later in the block starts from that value
    at every replay, and a replay allocates none of them."""
    a = tgrad.zeros(4)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        c, f, z, o = a.clone(), tgrad.full((4,), 2.5), tgrad.zeros(4), tgrad.ones(4)
        f.add_(a)
        z.add_(a)
        o.mul_(a)
        c.mul_(2.0)

    class Ops(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    for seed in range(3):
        x = uniform64((4,), -1, 1, seed).float()
        a.copy_(tgrad.from_torch(x))
        ops = []
        with Ops():
            g.replay()
        assert not {"full", "ones", "zeros", "clone", "empty"} & set(ops), ops
        assert f.torch().tolist() == (2.5 + x).tolist() and z.torch().tolist() == x.tolist()
        assert o.torch().tolist() == x.tolist() and c.torch().tolist() == (2 * x).tolist()


def test_a_replay_with_out_of_range_targets_gives_nan_not_another_class():
    logits = tgrad.zeros(4, 3, requires_grad=True)
    target = tgrad.zeros(4, dtype=tgrad.long)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        loss = nn.functional.cross_entropy(logits, target)
        loss.backward()
    target.copy_(tgrad.tensor([0, 7, 1, 2]))
    g.replay()
    assert loss.isnan().item()
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):  # outside a capture it raises
        nn.functional.cross_entropy(logits, target)


def test_a_replay_with_out_of_range_embedding_indices_gives_nan_rows_and_no_stray_gradient():
    emb = nn.Embedding(5, 3)
    idx = tgrad.tensor([0, 1, 2])
    g = tgrad.graphs.Graph("cpu")
    emb.zero_grad()
    emb(idx).sum().backward()  # warm-up creates .grad: the capture accumulates into it
    with tgrad.graphs.graph(g):
        out = emb(idx)
        (out * 1.0).sum().backward()
    emb.weight.grad.zero_()
    idx.copy_(tgrad.tensor([4, 9, -3]))
    g.replay()
    rows = out.torch()
    assert torch.equal(rows[0], emb.weight.torch()[4]) and rows[1:].isnan().all()
    want = torch.zeros(5, 3)
    want[4] = 1.0
    assert torch.equal(emb.weight.grad.torch(), want)


def test_each_replay_draws_the_numbers_the_next_eager_run_would():
    tgrad.manual_seed(7)
    eager = [torch.cat([tgrad.rand(5).torch(), tgrad.randn(3).torch()]) for _ in range(4)]
    tgrad.manual_seed(7)
    g = tgrad.graphs.Graph("cpu")
    with tgrad.graphs.graph(g):
        u, n = tgrad.rand(5), tgrad.randn(3)
    drawn = [torch.cat([u.torch(), n.torch()])]  # the CPU capture ran the block once
    for _ in range(3):
        g.replay()
        drawn.append(torch.cat([u.torch(), n.torch()]))
    for a, b in zip(eager, drawn):
        assert torch.equal(a, b)
    after_replays = tgrad.rand(2).torch()  # the generator moved past the replays' draws, as eagerly
    tgrad.manual_seed(7)
    for _ in range(4):
        tgrad.rand(5), tgrad.randn(3)
    assert torch.equal(after_replays, tgrad.rand(2).torch())


def _mlp_with_dropout():
    tgrad.manual_seed(3)
    return nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Dropout(0.3), nn.Linear(32, 3))


def _resampling_layers():
    # reflect padding, conv, transposed conv, bilinear upsampling, adaptive pooling, channel dropout
    tgrad.manual_seed(5)
    return nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1, padding_mode="reflect"), nn.Dropout2d(0.3),
                         nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
                         nn.Upsample(size=(6, 5), mode="bilinear"), nn.AdaptiveAvgPool2d((3, 2)))


CAPTURED_STEPS = {  # name: (model, loss of (model, *batch), batches)
    "dropout": (_mlp_with_dropout, lambda m, x, y: nn.functional.cross_entropy(m(x), y),
                lambda: [(x.float(), y) for x, y in _batches(STEPS)]),
    "resampling": (_resampling_layers, lambda m, x: (m(x) ** 2).mean(),
                   lambda: [(uniform64((2, 2, 6, 5), seed=40 + i).float(),) for i in range(4)]),
}


@pytest.mark.parametrize("case", list(CAPTURED_STEPS))
def test_a_captured_training_step_with_random_draws_replays_as_eager_steps(case):
    make, loss_of, batches = CAPTURED_STEPS[case]
    data = batches()

    def model_and_optimizer():
        model = make()
        return model, tgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    model, opt = model_and_optimizer()
    eager_losses = []
    for batch in data:
        opt.zero_grad()
        loss = loss_of(model, *(tgrad.tensor(t) for t in batch))
        loss.backward()
        opt.step()
        eager_losses.append(loss.item())

    graphed, opt = model_and_optimizer()
    static = [tgrad.zeros(t.shape, dtype=tgrad.long if t.dtype == torch.int64 else tgrad.float32) for t in data[0]]

    def step():
        loss = loss_of(graphed, *static)
        loss.backward()
        opt.step()
        return loss
    losses = []
    for i, batch in enumerate(data):
        for s, t in zip(static, batch):
            s.copy_(tgrad.tensor(t))
        if i == 0:  # warm-up: momentum buffers
            opt.zero_grad(set_to_none=True)
            losses.append(step().item())
        elif i == 1:
            g = tgrad.graphs.Graph("cpu")
            opt.zero_grad(set_to_none=True)
            with tgrad.graphs.graph(g):
                static_loss = step()
            losses.append(static_loss.item())
        else:
            g.replay()
            losses.append(static_loss.item())
    assert losses == eager_losses
    for a, b in zip(model.parameters(), graphed.parameters()):
        assert torch.equal(a.torch(), b.torch())


class TestRefusals:
    def test_host_reads_inside_a_capture(self):
        x = tgrad.ones(3)
        g = tgrad.graphs.Graph("cpu")
        with pytest.raises(RuntimeError, match=r"reading a tensor's value on the host .* during graph capture"):
            with tgrad.graphs.graph(g):
                (x * 2.0).sum().item()
        assert not is_capturing() and not g.captured  # a failed capture leaves nothing behind
        with tgrad.graphs.graph(g):  # and the graph can capture again
            y = x * 3.0
        g.replay()
        assert y.tolist() == [3.0, 3.0, 3.0]

    def test_draws_from_another_generator_inside_a_capture(self):
        g = tgrad.graphs.Graph("cpu")
        with pytest.raises(RuntimeError, match="generator other than tgrad's default one cannot be captured"):
            with tgrad.graphs.graph(g):
                tgrad.rand(3, generator=tgrad.Generator().manual_seed(1))
        assert tgrad.ops.random.default_generator.graph_draws is None

    def test_misuse_of_the_graph_object(self):
        g = tgrad.graphs.Graph("cpu")
        with pytest.raises(RuntimeError, match="holds no capture"):
            g.replay()
        with pytest.raises(RuntimeError, match="captured no work"):
            with tgrad.graphs.graph(g):
                pass
        x = tgrad.ones(2)
        with tgrad.graphs.graph(g):
            x * 2.0
        with pytest.raises(RuntimeError, match="already holds a capture; call reset"):
            with tgrad.graphs.graph(g):
                x * 2.0
        g.reset()
        assert not g.captured
        g.capture_begin()
        with pytest.raises(RuntimeError, match="already capturing"):
            g.capture_begin()
        with pytest.raises(RuntimeError, match="cannot be replayed while it is being captured"):
            g.replay()
        x * 2.0
        g.capture_end()
        with pytest.raises(RuntimeError, match="not capturing"):
            g.capture_end()
        with pytest.raises(TypeError, match="takes a tgrad Graph"):
            tgrad.graphs.graph(object())
        with pytest.raises(ValueError, match="CPU or CUDA"):
            tgrad.graphs.Graph("meta")

    def test_cpu_work_inside_a_cuda_capture(self, monkeypatch):
        """It would run once, during the capture, and never on replay: refused. (A CUDA capture
        is simulated: the launcher consults this thread's captures under way.)"""
        from tgrad.kernels.runtime import launch as launch_mod
        x = tgrad.ones(2)
        monkeypatch.setattr(launch_mod.captures, "cuda", [Counter()])
        with pytest.raises(RuntimeError, match="CUDA graph capture cannot record .* on the CPU"):
            x * 2.0

    @pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
    def test_cuda_graphs_need_a_gpu(self):
        with pytest.raises(RuntimeError, match="CUDA graphs need a CUDA device"):
            tgrad.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match="needs a CUDA device"):
            tgrad.cuda.graph_pool_handle()


@requires_cuda
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_cuda_graph_replays_train_as_eager_steps(opt_name):
    data = _batches(STEPS)
    eager, eager_losses = _train_eager("cuda", opt_name, data)
    graphed, graphed_losses, g = _train_graphed("cuda", opt_name, data, graph=tgrad.cuda.CUDAGraph())
    torch.testing.assert_close(torch.tensor(graphed_losses), torch.tensor(eager_losses), rtol=1e-6, atol=1e-6)
    for a, b in zip(eager.state_dict().values(), graphed.state_dict().values()):
        torch.testing.assert_close(b.torch(), a.torch(), rtol=1e-6, atol=1e-6)


def test_graph_random_kernels_compile_for_sm90():
    """The graph-safe variants (key and base counter read from the state tensor) and the kernel
    that sets that state compile for a CUDA GPU too."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        x = tgrad.ones(6, 5, requires_grad=True)
        g = tgrad.graphs.Graph("cpu")
        with tgrad.graphs.graph(g):
            y = nn.functional.dropout(x, 0.4) * tgrad.rand(6, 5) + tgrad.randn(5, dtype=tgrad.float64).float()
            y.sum().backward()
            tgrad.randint(0, 9, (4,))
        g.replay()
    finally:
        launch_observers.remove(observer)
    names = {key[0] for key in launches}
    assert {"_set_state_kernel", "dropout_kernel", "_random_kernel"} <= names
    assert any(dict(v[2]).get("FROM_STATE") for v in launches.values())
    for kernel, signature, constants, options in launches.values():
        compiled = triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                                  options=options)
        assert compiled.asm["cubin"]
