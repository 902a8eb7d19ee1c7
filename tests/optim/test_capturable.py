"""Graph-safe optimizer steps (PyTorch's ``capturable=True``) and the checks made during a capture.

Capturable Adam/AdamW/RMSprop keep ``state["step"]`` as a 0-d float32 tensor on the parameter's
device and compute Adam's bias corrections in the kernel from it. Compiled (and inside ``as_cuda()``)
a second launch advances the steps and the device pointer table is uploaded once and reused; on the
CPU the one launch (the tensors as tuple arguments) advances them itself. Over several steps they match PyTorch's
non-capturable optimizer in float64 and tgrad's own host path. A capture is simulated by patching
the ``is_capturing`` the optimizers call (and, once, run for real with the CPU recorder)."""
import sys
import warnings
from contextlib import nullcontext

import pytest
import torch
import triton
from torch.utils._python_dispatch import TorchDispatchMode
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.optim as optim
from support.launches import record_launches
from support.reference import uniform64
from support.torch_audit import AtenRecorder
from tgrad import graphs
from tgrad.kernels.runtime.launch import count_launches, launch_observers
from tgrad.kernels.runtime.target import as_cuda

optimizer_module = sys.modules[optim.Optimizer.__module__]  # where step() looks up is_capturing
SHAPES = [(5, 3), (7,), (), (0,), (1, 4)]
STEPS = 4
# the CPU's launch, and the compiled configuration's (a pointer table, then the steps' advance)
KINDS = {"cpu": (nullcontext, {"optim_params_kernel": 1}, {"optim_params_kernel": 1}),
         "table": (as_cuda, {"optim_step_kernel": 1, "advance_steps_kernel": 1}, {"optim_step_kernel": 1})}


def make_params(dtype):
    """(torch leaves, tgrad leaves) with the same values; the last (3, 5) one is a transposed view."""
    tp, gp = [], []
    for i, shape in enumerate(SHAPES + [(5, 3)]):
        base = uniform64(shape, -1, 1, i).to(dtype)
        if i == len(SHAPES):
            base = base.t()
        tp.append(base.clone().requires_grad_())
        gp.append(tgrad.from_torch(base.clone()).requires_grad_())
    return tp, gp


def set_grads(tp, gp, step, dtype):
    """Random gradients, written into the tgrad gradients already there (their memory, and so the
    pointer table, stays the same from step to step, as a captured step needs)."""
    for i, (a, b) in enumerate(zip(tp, gp)):
        g = uniform64(tuple(a.shape), -1, 1, 1000 * step + i).to(dtype)
        a.grad = g.clone()
        if b.grad is None:
            b.grad = tgrad.from_torch(g.clone())
        else:
            b.grad._data.copy_(g)


def run(cls, kwargs, dtype, capturable, steps=STEPS):
    tp, gp = make_params(dtype)
    ref = getattr(torch.optim, cls.__name__)([p.detach().double().requires_grad_() for p in tp], **kwargs)
    opt = cls(gp, capturable=capturable, **kwargs)
    launches = []
    for step in range(steps):
        set_grads(tp, gp, step, dtype)
        for a, b in zip(ref.param_groups[0]["params"], tp):
            a.grad = b.grad.double()
        ref.step()
        with count_launches() as c:
            opt.step()
        launches.append(dict(c))
    return ref, opt, gp, launches


CASES = [
    (optim.Adam, dict(lr=0.05)),
    (optim.Adam, dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True)),
    (optim.Adam, dict(lr=0.01, betas=(0.0, 0.0), eps=1e-6, maximize=True)),  # beta^t with beta == 0
    (optim.AdamW, dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    (optim.RMSprop, dict(lr=0.01)),
    (optim.RMSprop, dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.1)),
]
IDS = ["adam", "adam-amsgrad-wd", "adam-beta0", "adamw-amsgrad", "rmsprop", "rmsprop-centered-momentum"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.float64, 1e-12)], ids=["f32", "f64"])
@pytest.mark.parametrize("cls,kwargs", CASES, ids=IDS)
def test_capturable_steps_match_torch_and_the_host_path(cls, kwargs, dtype, atol, kind):
    decisions, capturable_launches, host_step_launches = KINDS[kind]
    with decisions():
        ref, opt, gp, launches = run(cls, kwargs, dtype, capturable=True)
    for a, b in zip(ref.param_groups[0]["params"], gp):
        torch.testing.assert_close(b.torch().double(), a.detach(), rtol=0, atol=atol)
    assert launches == [capturable_launches] * STEPS
    for p in gp:
        step = opt.state[p]["step"]
        assert step.dtype is tgrad.float32 and step.device == p.device and step.shape == ()
        assert step.item() == STEPS  # the empty parameter's too, as in PyTorch
    # tgrad's host path (c0/c1 computed in Python, step on the host) gives the same numbers
    with decisions():
        _, host, hp, host_launches = run(cls, kwargs, dtype, capturable=False)
    assert host_launches == [host_step_launches] * STEPS
    for a, b in zip(hp, gp):
        torch.testing.assert_close(b.torch(), a.torch(), rtol=0, atol=atol / 10)
    for a, b in zip(hp, gp):
        for key, value in host.state[a].items():
            assert value.device.type == "cpu"
            torch.testing.assert_close(opt.state[b][key].torch().double(), value.torch().double(),
                                       rtol=0, atol=atol, msg=key)


@pytest.mark.usefixtures("table_launches")
def test_the_table_is_uploaded_once_and_a_repeated_step_runs_no_torch_op():
    """A capturable step's table has no per-step value: it goes to the device on the first step
    and later steps launch from it (in a CUDA graph, a host->device copy would rerun every replay)."""
    _, opt, gp, _ = run(optim.Adam, dict(lr=0.05), torch.float32, capturable=True, steps=1)
    tables = opt._tables()
    assert tables.uploads == 1
    tp, _ = make_params(torch.float32)
    set_grads(tp, gp, 5, torch.float32)

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Ops() as rec:
        opt.step()
        opt.step()
    assert tables.uploads == 1
    # only the transposed parameter's staging copies (in and back out): no allocation, no upload
    assert rec.ops == ["copy_", "copy_"] * 2
    # new gradient tensors are new pointers: one new table, then reused again
    for p in gp:
        p.grad = p.grad.clone()
    opt.step()
    opt.step()
    assert tables.uploads == 2


@pytest.fixture
def table_launches():
    """Launch as compiled (pointer tables, uploaded and cached): the CPU's launch has no table."""
    with as_cuda():
        yield


@pytest.fixture
def capturing(monkeypatch):
    """Run what follows as if a graph capture were under way (the name the optimizers call)."""
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)


def _warm(cls, **kwargs):
    p = tgrad.from_torch(uniform64((3,), -1, 1, 0).float()).requires_grad_()
    p.grad = tgrad.from_torch(uniform64((3,), -1, 1, 1).float())
    opt = cls([p], **kwargs)
    opt.step()
    return p, opt


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW, optim.RMSprop])
def test_a_capture_needs_capturable_groups(cls, monkeypatch):
    p, opt = _warm(cls, lr=0.1)
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    before = p.torch().clone()
    with pytest.raises(RuntimeError, match=rf"^Attempting CUDA graph capture of step\(\) for an instance of "
                                           rf"{cls.__name__} but param_groups' capturable is False\.$"):
        opt.step()
    assert torch.equal(p.torch(), before)
    # one capturable group is not enough: all must be
    q = tgrad.ones(2, requires_grad=True)
    q.grad = tgrad.ones(2)
    mixed = cls([{"params": [p], "capturable": True}, {"params": [q]}])
    with pytest.raises(RuntimeError, match="but param_groups' capturable is False"):
        mixed.step()


@pytest.mark.usefixtures("table_launches")
def test_capturable_steps_during_a_capture_use_the_warm_up_table(monkeypatch):
    p, opt = _warm(optim.Adam, lr=0.1, capturable=True)
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    with count_launches() as c:
        opt.step()
    assert opt._tables().uploads == 1 and dict(c) == {"optim_step_kernel": 1, "advance_steps_kernel": 1}
    assert len(opt._tables()._pinned) == 1  # the table a capture used is kept for the graph's life
    monkeypatch.undo()
    assert opt.state[p]["step"].item() == 2  # the simulated capture ran the step


def test_state_made_on_the_first_step_cannot_be_captured(capturing):
    for cls, kwargs, what in [(optim.Adam, dict(capturable=True), "exp_avg"),
                              (optim.RMSprop, dict(capturable=True), "square_avg"),
                              (optim.SGD, dict(lr=0.1, momentum=0.9), "momentum_buffer")]:
        p = tgrad.ones(3, requires_grad=True)
        p.grad = tgrad.ones(3)
        opt = cls([p], **kwargs)
        with pytest.raises(RuntimeError, match=rf"{cls.__name__} creates its state \({what}.*on the first step\(\).*"
                                               r"run at least one step\(\) before capturing \(warm-up\)"):
            opt.step()
        assert p.tolist() == [1.0, 1.0, 1.0] and len(opt.state[p]) == 0


@pytest.mark.usefixtures("table_launches")
def test_tables_a_capture_uses_are_kept(monkeypatch):
    """Gradients allocated inside a capture (zero_grad(set_to_none=True) before it) are new
    pointers: the capture uploads their table once, and keeps it, as every table it used."""
    p, opt = _warm(optim.SGD, lr=0.1, momentum=0.9)
    tables = opt._tables()
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    opt.step()  # the warm-up's tensors, but the first step's flag is off: a new table
    p.grad = p.grad.clone()  # a new gradient tensor: another
    opt.step()
    assert tables.uploads == 3 and len(tables._pinned) == 2
    monkeypatch.undo()
    old = []  # keeps the replaced gradients' memory, so that each clone is a new address
    for _ in range(tables.LIMIT + 1):  # many uncaptured tables later, the captured ones remain
        old.append(p.grad)
        p.grad = p.grad.clone()
        opt.step()
    assert len(tables._pinned) == 2 and len(tables._tables) == tables.LIMIT


def test_sgd_during_a_capture(monkeypatch):
    """With its buffer made, an SGD step reads no host value that changes per step."""
    p, opt = _warm(optim.SGD, lr=0.1, momentum=0.9, dampening=0.2)
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    expect = p.torch().double() - 0.1 * (0.9 * opt.state[p]["momentum_buffer"].torch().double()
                                         + 0.8 * p.grad.torch().double())
    opt.step()
    torch.testing.assert_close(p.torch().double(), expect, rtol=0, atol=1e-6)


def test_adagrad_during_a_capture(monkeypatch):
    p, opt = _warm(optim.Adagrad, lr=0.1)
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    opt.step()  # lr_decay = 0: nothing per step is read on the host ...
    assert opt.state[p]["step"].item() == 1  # ... and the host step counts only uncaptured steps
    monkeypatch.undo()
    _, decayed = _warm(optim.Adagrad, lr=0.1, lr_decay=0.01)
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    with pytest.raises(RuntimeError, match=r"^Adagrad with lr_decay=0.01 cannot be graph-captured"):
        decayed.step()


def test_uncaptured_capturable_step_warns_once_for_cuda_parameters_only(monkeypatch):
    p, opt = _warm(optim.Adam, capturable=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # CPU parameters: capturable is how capture is tested, no warning
        opt.step()
    # a CUDA parameter (as far as the check looks) warns, once, with PyTorch's text
    monkeypatch.setattr(type(p), "device", property(lambda self: torch.device("cuda", 0)))
    with pytest.warns(UserWarning) as record:
        opt._capture_health_check(False)
        opt._capture_health_check(False)
    assert len(record) == 1
    assert str(record[0].message) == (
        "This instance was constructed with capturable=True or some of all the param_groups came with "
        "capturable=True, but step() is running without CUDA graph capture. If you never intend to graph-capture "
        "this instance, capturable=True can impair performance, and you should set capturable=False.")


@pytest.mark.parametrize("capturable", [True, False])
def test_state_dict_round_trip_places_the_step(capturable):
    tp, gp = make_params(torch.float32)
    opt = optim.Adam(gp, lr=0.05, amsgrad=True, capturable=capturable)
    for step in range(2):
        set_grads(tp, gp, step, torch.float32)
        opt.step()
    sd = opt.state_dict()
    assert sd["param_groups"][0]["capturable"] is capturable
    fresh_params = [tgrad.from_torch(p.torch().clone()).requires_grad_() for p in gp]
    fresh = optim.Adam(fresh_params, lr=0.05, amsgrad=True, capturable=capturable)
    fresh.load_state_dict(sd)
    for p in fresh_params:
        step = fresh.state[p]["step"]
        assert step.dtype is tgrad.float32 and step.device.type == "cpu" and step.item() == 2
    for step in range(2, 4):
        set_grads(tp, gp, step, torch.float32)
        for a, b in zip(fresh_params, gp):
            a.grad = b.grad.clone()
        opt.step()
        fresh.step()
    for a, b in zip(fresh_params, gp):
        assert a.torch().tolist() == b.torch().tolist()
        assert fresh.state[a]["step"].item() == 4


def test_a_loaded_step_goes_to_the_parameters_device_only_when_capturable(monkeypatch):
    """PyTorch's policy, seen through a parameter that reports another device ("meta")."""
    p = tgrad.ones(2, requires_grad=True)
    saved = tgrad.tensor(3.0, dtype=tgrad.float64)
    monkeypatch.setattr(type(p), "device", property(lambda self: torch.device("meta")))
    on_device = optim.Optimizer._cast_state(p, "step", saved, True)._data
    on_host = optim.Optimizer._cast_state(p, "step", saved, False)._data
    assert on_device.device.type == "meta" and on_device.dtype == torch.float32
    assert on_host.device.type == "cpu" and on_host.dtype == torch.float32 and on_host.item() == 3.0


def test_a_host_step_moves_to_the_device_when_a_group_becomes_capturable(monkeypatch):
    p, opt = _warm(optim.Adam, lr=0.1)
    opt.state[p]["step"] = tgrad.tensor(1.0, dtype=tgrad.float64)  # e.g. a hand-made state
    opt.param_groups[0]["capturable"] = True
    monkeypatch.setattr(optimizer_module, "is_capturing", lambda: True)
    with pytest.raises(RuntimeError, match=r"capturable=True keeps state\['step'\] on the parameter's device"):
        opt.step()  # not during a capture: moving it is a copy the graph would replay
    monkeypatch.undo()
    opt.step()
    step = opt.state[p]["step"]
    assert step.dtype is tgrad.float32 and step.item() == 2


@pytest.mark.parametrize("cls,kwargs", [(optim.Adam, dict(lr=0.05, amsgrad=True, capturable=True)),
                                        (optim.RMSprop, dict(lr=0.01, momentum=0.9, centered=True, capturable=True)),
                                        (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                                        (optim.Adagrad, dict(lr=0.1))], ids=["adam", "rmsprop", "sgd", "adagrad"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_captured_step_replays_like_eager_steps(cls, kwargs, kind):
    """A real CPU capture (``tgrad.graphs``), PyTorch's recipe: a warm-up step, then
    ``zero_grad(set_to_none=True)`` and a capture in which the gradients are made anew (new
    addresses: a table the capture uploads) from static inputs fed by copying. Replays follow eager
    steps exactly, device step counts included."""
    with KINDS[kind][0]():
        tp, _ = make_params(torch.float32)
        grads = [[uniform64(tuple(p.shape), -1, 1, 100 * s + i).float() for i, p in enumerate(tp)] for s in range(5)]
        runs = []
        for _ in range(2):
            _, params = make_params(torch.float32)
            static = [tgrad.zeros(*p.shape) for p in params]
            opt = cls(params, **kwargs)

            def step(params=params, static=static, opt=opt):
                for p, s in zip(params, static):
                    p.grad = s * 1.0
                opt.step()

            def feed(k, static=static):
                for s, g in zip(static, grads[k]):
                    s._data.copy_(g)

            feed(0)
            step()  # warm-up: the optimizer's state
            opt.zero_grad(set_to_none=True)
            runs.append((params, opt, step, feed))
        (eager, eager_opt, eager_step, eager_feed), (graphed, graphed_opt, graphed_step, graphed_feed) = runs
        graph = graphs.Graph("cpu")
        graphed_feed(1)
        with graphs.graph(graph):
            graphed_step()  # a CPU capture also runs the step once
        eager_feed(1)
        eager_step()
        for k in range(2, 5):
            eager_feed(k)
            eager_step()
            graphed_feed(k)
            graph.replay()
    for a, b in zip(eager, graphed):
        assert a.torch().tolist() == b.torch().tolist()
    capturable = kwargs.get("capturable", False)
    if kind == "cpu":
        assert graph.launches["optim_params_kernel"] == 1 and "optim_step_kernel" not in graph.launches
    else:
        assert graph.launches["optim_step_kernel"] == 1 and graph.launches["advance_steps_kernel"] == int(capturable)
    if capturable:
        assert all(graphed_opt.state[p]["step"].item() == 5 for p in graphed)


def test_capturable_kernels_compile_for_sm90():
    """Both capturable kernels, in the configurations above and CUDA's 1K-block one."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        with as_cuda():  # CUDA's launches: the pointer table, then the steps' advance
            for dtype in (tgrad.float32, tgrad.float64):
                for cls, kwargs in [(optim.AdamW, dict(amsgrad=True)), (optim.RMSprop, dict(momentum=0.5, centered=True))]:
                    p = tgrad.ones(5, dtype=dtype, requires_grad=True)
                    p.grad = tgrad.ones(5, dtype=dtype)
                    cls([p], capturable=True, **kwargs).step()
    finally:
        launch_observers.remove(observer)
    names = sorted(k[0] for k in launches)
    assert names == ["advance_steps_kernel"] + ["optim_step_kernel"] * 4
    configs = list(launches.values())
    configs += [(k, s, {**c, "BLOCK": 1024}, o) for k, s, c, o in configs if getattr(c.get("UPDATE"), "__name__", None) == "adam"]
    for kernel, signature, constants, options in configs:
        compiled = triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                                  options=options)
        assert compiled.asm["cubin"]


def test_capturable_steps_compute_nothing_in_torch():
    tp, gp = make_params(torch.float32)
    grads = [[uniform64(tuple(p.shape), -1, 1, 10 * s + i).float() for i, p in enumerate(gp)] for s in range(3)]
    for p in gp:
        p.grad = tgrad.zeros(*p.shape)
    with AtenRecorder() as rec:
        opt = optim.Adam(gp, lr=0.05, amsgrad=True, capturable=True)
        for step_grads in grads:
            for p, g in zip(gp, step_grads):
                p.grad._data.copy_(g)
            opt.step()
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
    assert opt.state[gp[0]]["step"].item() == 3
