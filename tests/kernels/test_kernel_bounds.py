"""Kernel outputs are fully written, and nothing outside them is.

Every test here runs under ``kernel_guard`` (see its docstring): each load, store and atomic of
every interpreted launch must land on an element of a tensor the launch was given (checked lane by
lane, before the access), and the memory kernels allocate for themselves starts as 0x7F bytes, so
an element a kernel forgets to write shows up as 3.4e38 in the comparison with torch. Where a
kernel writes into a destination it is handed (pointwise ``outs``, ``matmul(out=)``, factories,
random fills, in-place ops, index put/add, optimizer steps), that destination is a strided, offset
view inside a larger buffer of 0x7F bytes (``Guard``), and the bytes around and between its
elements must be unchanged afterwards. Inputs are guarded views too, so a kernel writing into its
input would show. Shapes are odd (primes, 1, 0-d) so no block divides them. The convolution and
resampling kernels run through ``compare`` on strided inputs (every other column of a wider leaf).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as TF
import triton
import triton.language as tl

import tgrad
import tgrad.nn.functional as F
import tgrad.optim  # noqa: F401
from support.kernel_guard import (Guard, MemoryViolation, backprop, close, memory_checked, poisoned_allocations,
                                  raw_bytes)
from support.reference import compare
from tgrad.kernels import factories as KF, elementwise as M
from tgrad.kernels.random import philox as KR
from tgrad.kernels.indexing import index as KI
from tgrad.kernels.linalg import matmul as KM
from tgrad.kernels.reductions import segment
from tgrad.kernels.runtime.launch import launch
from tgrad.kernels.elementwise.pointwise import pointwise

F64 = torch.float64


@pytest.fixture(autouse=True)
def checked(request):
    """Every test: address-checked launches, poisoned allocations, and all guards intact at the end
    (except the harness's own test, which breaks these rules on purpose)."""
    guards.clear()
    if request.node.get_closest_marker("breaks_memory_rules"):
        yield
        return
    with memory_checked() as violations, poisoned_allocations():
        yield
    assert not violations
    for g in guards:
        g.check()


guards: list = []


def guard(shape, dtype=torch.float32, seed=0, fill=True, **kw) -> Guard:
    g = Guard(shape, dtype, **kw)
    if fill:
        gen = torch.Generator().manual_seed(seed)
        g.view.copy_(torch.rand(tuple(shape), generator=gen, dtype=F64) * 4 - 2)
        g.saved = g.view.clone()
    guards.append(g)
    return g


def leaf(g: Guard, requires_grad=True):
    t = tgrad.from_torch(g.view)
    return t.requires_grad_() if requires_grad else t


def ref(g: Guard):
    return g.view.to(F64).clone().requires_grad_()


def unchanged(*gs):
    for g in gs:
        assert (raw_bytes(g.view) == raw_bytes(g.saved)).all(), "a kernel wrote into its input"


# ----------------------------------------------------------------------------- the harness itself

@triton.jit
def _off_by_one_kernel(src, dst, n, BLOCK: tl.constexpr):
    """Halves n elements but masks with <= n: reads src[n] and writes dst[n], one past each end."""
    i = tl.arange(0, BLOCK)
    tl.store(dst + i, tl.load(src + i, mask=i <= n) * 0.5, mask=i <= n)


@triton.jit
def _skip_last_kernel(dst, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(dst + i, i.to(tl.float32), mask=i < n - 1)


@pytest.mark.breaks_memory_rules
def test_the_harness_catches_overruns_and_unwritten_elements():
    src, dst = guard((5,), step=1), guard((5,), fill=False, step=1)
    with memory_checked() as violations, pytest.raises(MemoryViolation, match="load of 1 lane"):
        launch(_off_by_one_kernel, (1,), src.view, dst.view, 5, BLOCK=8)
    assert len(violations) == 1
    launch(_off_by_one_kernel, (1,), src.view, dst.view, 5, BLOCK=8)  # unchecked, it writes past the end
    with pytest.raises(AssertionError, match="1 guard element"):
        dst.check()
    dst.buffer.view(torch.uint8).fill_(0x7F)
    launch(_skip_last_kernel, (1,), dst.view, 5, BLOCK=8)
    assert dst.unwritten() == 1
    guards.clear()  # these guards were damaged on purpose


# ----------------------------------------------------------------------------- pointwise and in-place

@pytest.mark.parametrize("shape, kw", [((3, 5, 7), dict(transpose=True)), ((37,), dict(step=3)), ((), {}),
                                       ((1, 4), {})], ids=["3d-transposed", "1d-step3", "0d", "size1"])
def test_pointwise_writes_exactly_its_destination(shape, kw):
    a, b = guard(shape, seed=1, **kw), guard(shape[-1:], seed=2, step=2)
    out = guard(shape, fill=False, **kw)
    pointwise(M.add, [a.view, b.view], shape, [torch.float32], params=(0.5,), outs=[out.view])
    close(out.view, a.view.to(F64) + 0.5 * b.view.to(F64))
    unchanged(a, b)


def test_in_place_ops_write_only_their_view():
    g, src = guard((4, 9), transpose=True, step=2), guard((9, 4), seed=3)
    t, expect = tgrad.from_torch(g.view), g.view.to(F64).clone()
    mask = tgrad.from_torch(g.saved > 0)
    steps = [(lambda: t.add_(tgrad.from_torch(src.view).t()), lambda e: e.add_(src.view.to(F64).t())),
             (lambda: t.mul_(3.0), lambda e: e.mul_(3.0)),
             (lambda: t.clamp_(-2.5, 2.5), lambda e: e.clamp_(-2.5, 2.5)),
             (lambda: t.masked_fill_(mask, 7.0), lambda e: e.masked_fill_(g.saved > 0, 7.0)),
             (lambda: t.__setitem__((slice(1, None), slice(None, None, 2)), -1.0), lambda e: e[1:, ::2].fill_(-1.0)),
             (lambda: t.__setitem__(tgrad.tensor([2, 0, 2]), 4.0),
              lambda e: e.index_fill_(0, torch.tensor([0, 2]), 4.0)),
             (lambda: t.sigmoid_(), lambda e: e.sigmoid_()),
             (lambda: t.copy_(tgrad.from_torch(src.view).t()), lambda e: e.copy_(src.view.t())),
             (lambda: t.zero_(), lambda e: e.zero_())]
    for step, torch_step in steps:
        step()
        torch_step(expect)
        close(g.view, expect)
    unchanged(src)


# ----------------------------------------------------------------------------- reductions, softmax, matmul

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reductions_of_a_strided_input(dtype):
    g = guard((5, 7, 3), dtype, transpose=True, step=2)
    x, xr = leaf(g), ref(g)
    for f in [lambda v: v.sum(), lambda v: v.sum(1), lambda v: v.mean((0, 2)), lambda v: v.amax(-1),
              lambda v: v.var(0), lambda v: v.prod(2), lambda v: v.logsumexp(1), lambda v: v.max(1).values,
              lambda v: v.norm()]:
        close(f(x), f(xr), dtype)
    assert torch.equal(x.argmax(1).torch(), xr.argmax(1)) and torch.equal(x.min(0).indices.torch(), xr.min(0).indices)
    backprop(x.sum(1) + x.amax(1) * x.mean(1), xr.sum(1) + xr.amax(1) * xr.mean(1), [(x, xr)], dtype)
    unchanged(g)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_forward_and_backward(dim):
    g = guard((3, 37, 5), transpose=True, step=2)
    x, xr = leaf(g), ref(g)
    y, yr = x.softmax(dim) * x.log_softmax(dim), xr.softmax(dim) * xr.log_softmax(dim)
    close(y, yr)
    backprop(y, yr, [(x, xr)])


def test_matmul_into_a_strided_destination():
    a, b, bias = guard((7, 5), seed=1, transpose=True), guard((5, 9), seed=2, step=2), guard((9,), seed=3, step=3)
    out = guard((7, 9), fill=False, transpose=True, step=2)
    KM.matmul(a.view, b.view, bias=bias.view, activation="relu", out=out.view)
    close(out.view, torch.relu(a.view.to(F64) @ b.view.to(F64) + bias.view.to(F64)))
    a3, b3 = guard((2, 3, 5), seed=4, step=2), guard((2, 5, 4), seed=5, transpose=True)
    out3 = guard((2, 3, 4), fill=False, step=3)
    KM.matmul(a3.view, b3.view, out=out3.view)
    close(out3.view, a3.view.to(F64) @ b3.view.to(F64))
    x, w = leaf(a), leaf(b)
    xr, wr = ref(a), ref(b)
    backprop(x @ w, xr @ wr, [(x, xr), (w, wr)])
    unchanged(a, b, bias, a3, b3)


# ----------------------------------------------------------------------------- factories and random

def test_factories_fill_exactly_their_destination():
    for g, run, want in [
        (guard((13,), fill=False, step=3), lambda v: KF.arange(v, 2.0, 0.5), torch.arange(2.0, 8.5, 0.5)),
        (guard((11,), fill=False, step=2), lambda v: KF.linspace(v, -1.0, 1.0, 11), torch.linspace(-1, 1, 11)),
        (guard((5, 7), fill=False, transpose=True), KF.eye, torch.eye(5, 7)),
        (guard((3, 4, 5), fill=False, transpose=True, step=2), lambda v: KF.fill(v, 2.5), torch.full((3, 4, 5), 2.5)),
        (guard((9,), torch.int64, fill=False, step=2), lambda v: KF.arange(v, -3, 2), torch.arange(-3, 15, 2)),
    ]:
        run(g.view)
        close(g.view, want.to(F64))  # torch's own linspace rounds with an fma: ~1 ulp apart


@pytest.mark.parametrize("kind", ["uniform", "normal", "randint", "bernoulli"])
def test_random_fills_write_every_element_of_a_strided_view(kind):
    fill = {"uniform": lambda o: KR.fill_uniform(o, 7, 0, -1.0, 2.0), "normal": lambda o: KR.fill_normal(o, 7, 0),
            "randint": lambda o: KR.fill_randint(o, 7, 0, 3, 10),
            "bernoulli": lambda o: KR.fill_bernoulli(o, 7, 0, 0.3)}
    dtype = {"randint": torch.int64, "bernoulli": torch.bool}.get(kind, torch.float32)
    g = guard((6, 7, 5), dtype, fill=False, transpose=True, step=2)
    fill[kind](g.view)
    assert g.unwritten() == 0
    dense = torch.zeros((6, 7, 5), dtype=dtype)
    fill[kind](dense)
    assert torch.equal(g.view, dense)  # element i gets counter i, wherever it lives


# ----------------------------------------------------------------------------- indexing

@pytest.mark.parametrize("sorted_path", [False, True], ids=["atomic", "sort-based"])
def test_index_gather_put_and_add(sorted_path, monkeypatch):
    if sorted_path:  # the sort-based path on the CPU too
        monkeypatch.setattr(segment, "deterministic", lambda device: True)
    g = guard((7, 5), transpose=True, step=2)
    x, xr = leaf(g), ref(g)
    i = [4, 0, 4, 6, 1, 4]
    y, yr = x[tgrad.tensor(i), 1:4], xr[torch.tensor(i), 1:4]
    close(y, yr)
    backprop(y, yr, [(x, xr)])  # the backward adds duplicate rows
    close(x.gather(1, tgrad.tensor([[4, 0]] * 7)), xr.gather(1, torch.tensor([[4, 0]] * 7)))
    close(x.index_select(0, tgrad.tensor([6, 6, 2])), xr.index_select(0, torch.tensor([6, 6, 2])))
    d = guard((11,), fill=True, seed=9, step=3)  # add straight into a strided destination
    vals = guard((6,), seed=10, step=2)
    expect = d.view.to(F64).index_add(0, torch.tensor(i), vals.view.to(F64))
    KI.index_op("add", d.view, vals.view, [torch.tensor(i)], (6,), [0], [vals.view.stride(0)], [[1]], [11],
                [d.view.stride(0)])
    close(d.view, expect)
    with tgrad.no_grad():
        tgrad.from_torch(d.view)[tgrad.tensor([10, 0])] = tgrad.tensor([1.0, 2.0])
    assert d.view[10].item() == 1.0 and d.view[0].item() == 2.0
    unchanged(vals)


@pytest.mark.parametrize("sorted_path", [False, True], ids=["atomic", "sort-based"])
def test_embedding_forward_and_backward(sorted_path, monkeypatch):
    if sorted_path:  # the sort-based path on the CPU too
        monkeypatch.setattr(segment, "deterministic", lambda device: True)
    g = guard((9, 13), transpose=True)
    w, wr = leaf(g), ref(g)
    idx = torch.tensor([[3, 8, 3], [0, 3, 5]])
    y, yr = F.embedding(tgrad.from_torch(idx), w, padding_idx=5), torch.nn.functional.embedding(idx, wr, padding_idx=5)
    close(y, yr)
    backprop(y, yr, [(w, wr)])


def test_cat_of_unequal_inputs_and_dtypes_reads_only_its_table():
    """cat finds each element's input by a binary search over a pointer table; the lanes past the
    output's end (masked) end the search on the padding slot past the last input, whose row lies
    beyond the table: its address was read unmasked for every source dtype but the first."""
    parts = [guard((3, 5), transpose=True), guard((2, 5), torch.float64, seed=1, step=3), guard((1, 5), seed=2)]
    y = tgrad.cat([leaf(g, requires_grad=False) for g in parts], 0)
    assert y.dtype == tgrad.float64 and y.shape == (6, 5)
    close(y, torch.cat([g.view.to(F64) for g in parts], 0), torch.float64)
    unchanged(*parts)


def test_sort_nonzero_and_one_hot():
    g = guard((5, 37), transpose=True, step=2)
    x = leaf(g, requires_grad=False)
    v, i = tgrad.sort(x, 1, descending=True)
    vr, ir = g.view.sort(dim=1, descending=True, stable=True)
    assert torch.equal(v.torch(), vr) and torch.equal(i.torch(), ir)
    assert torch.equal((x > 0.5).nonzero().torch(), (g.view > 0.5).nonzero())
    assert torch.equal(F.one_hot(tgrad.tensor([[2, 0], [1, 6]]), 7).torch(),
                       torch.nn.functional.one_hot(torch.tensor([[2, 0], [1, 6]]), 7))


# ----------------------------------------------------------------------------- nn kernels

def test_layer_norm_forward_and_backward():
    x_g, w_g, b_g = guard((5, 37), transpose=True), guard((37,), seed=1, step=2), guard((37,), seed=2, step=3)
    (x, xr), (w, wr), (b, br) = [(leaf(g), ref(g)) for g in (x_g, w_g, b_g)]
    y, yr = F.layer_norm(x, (37,), w, b), torch.nn.functional.layer_norm(xr, (37,), wr, br)
    close(y, yr)
    backprop(y, yr, [(x, xr), (w, wr), (b, br)])


@pytest.mark.parametrize("shape", [(7, 11), (3, 5, 4)], ids=["2d", "3d"])
def test_cross_entropy_forward_and_backward(shape):
    g, wg = guard(shape, transpose=True, step=2), guard((shape[1],), seed=3, step=2)
    x, xr = leaf(g), ref(g)
    gen = torch.Generator().manual_seed(0)
    t = torch.randint(0, shape[1], (shape[0],) + shape[2:], generator=gen)
    t.view(-1)[1] = -100  # ignored
    for kw in [{}, dict(label_smoothing=0.2), dict(reduction="none")]:
        x.grad, xr.grad = None, None
        y = F.cross_entropy(x, tgrad.from_torch(t), weight=tgrad.from_torch(wg.view), **kw)
        yr = torch.nn.functional.cross_entropy(xr, t, weight=wg.view.to(F64), **kw)
        close(y, yr)
        backprop(y, yr, [(x, xr)])


def test_conv_pool_and_batch_norm():
    xg, wg, bg = guard((2, 3, 9, 7), step=2), guard((4, 3, 3, 2), seed=1, transpose=True), guard((4,), seed=2)
    (x, xr), (w, wr), (b, br) = [(leaf(g), ref(g)) for g in (xg, wg, bg)]
    tf = torch.nn.functional
    y = F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    yr = tf.conv2d(xr, wr, br, stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    close(y, yr)
    y = F.max_pool2d(y, 3, stride=2, padding=1) + F.avg_pool2d(y, 2, stride=1, ceil_mode=True)[..., :3, :5]
    yr = tf.max_pool2d(yr, 3, stride=2, padding=1) + tf.avg_pool2d(yr, 2, stride=1, ceil_mode=True)[..., :3, :5]
    close(y, yr)
    rm, rv = tgrad.zeros(4), tgrad.ones(4)
    rmr, rvr = torch.zeros(4, dtype=F64), torch.ones(4, dtype=F64)
    y = F.batch_norm(y, rm, rv, training=True)
    yr = tf.batch_norm(yr, rmr, rvr, training=True)
    close(y, yr)
    close(rm, rmr)
    close(rv, rvr)
    backprop(y, yr, [(x, xr), (w, wr), (b, br)])
    unchanged(xg, wg, bg)


def test_elementwise_losses_and_dropout():
    xg, yg = guard((5, 7), transpose=True), guard((5, 7), seed=1, step=2)
    x, xr = leaf(xg), ref(xg)
    target, tr = tgrad.from_torch(yg.view), yg.view.to(F64)
    tf = torch.nn.functional
    for f, fr in [(F.mse_loss, tf.mse_loss), (F.smooth_l1_loss, tf.smooth_l1_loss),
                  (lambda a, b: F.binary_cross_entropy_with_logits(a, (b > 0).float()),
                   lambda a, b: tf.binary_cross_entropy_with_logits(a, (b > 0).to(F64)))]:
        x.grad, xr.grad = None, None
        y, yr = f(x, target), fr(xr, tr)
        close(y, yr)
        backprop(y, yr, [(x, xr)])
    y = F.dropout(x, 0.4)
    kept = y.torch() != 0
    close(y.torch()[kept], xg.view.to(F64)[kept] / 0.6)


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
                                      ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
                                      ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
                                      ("Adagrad", dict(lr=0.1))])
def test_optimizer_steps_write_only_their_parameters(name, kw):
    pg = [guard((37,), F64, seed=s, step=1) for s in (1, 2)] + [guard((3, 5), F64, seed=3, step=1)]
    params = [tgrad.nn.Parameter(tgrad.from_torch(g.view)) for g in pg]
    refs = [torch.nn.Parameter(g.view.clone()) for g in pg]
    opt, opt_r = getattr(tgrad.optim, name)(params, **kw), getattr(torch.optim, name)(refs, **kw)
    for step in range(3):
        grads = [guard(tuple(g.view.shape), F64, seed=10 * step + k, step=2) for k, g in enumerate(pg)]
        for p, r, gg in zip(params, refs, grads):
            p.grad, r.grad = tgrad.from_torch(gg.view), gg.view.clone()
        opt.step()
        opt_r.step()
        for p, r in zip(params, refs):
            close(p, r, F64)
        unchanged(*grads)


RESAMPLE = {  # name: (tgrad fn, torch fn, input shapes, kwargs)
    "conv_transpose2d": (F.conv_transpose2d, TF.conv_transpose2d, [(2, 3, 3, 5), (3, 2, 3, 2), (2,)],
                         dict(stride=2, padding=1, output_padding=1, dilation=(1, 2))),
    "conv_transpose2d_groups": (F.conv_transpose2d, TF.conv_transpose2d, [(1, 4, 3, 3), (4, 1, 2, 3), (2,)],
                                dict(stride=(2, 1), groups=2)),
    "conv_transpose1d": (F.conv_transpose1d, TF.conv_transpose1d, [(2, 3, 5), (3, 2, 3), None], dict(stride=3)),
    "conv1d": (F.conv1d, TF.conv1d, [(2, 3, 7), (4, 3, 3), (4,)], dict(stride=2, padding=1)),
    "pad_reflect": (F.pad, TF.pad, [(2, 3, 5, 7)], dict(pad=(2, 1, 3, 4), mode="reflect")),
    "pad_replicate_3d": (F.pad, TF.pad, [(1, 2, 3, 4, 5)], dict(pad=(1, 2, 0, 3, 2, 1), mode="replicate")),
    "pad_constant_crop": (F.pad, TF.pad, [(2, 3, 5)], dict(pad=(-1, 3), value=0.5)),
    "adaptive_avg": (F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, [(2, 3, 7, 5)], dict(output_size=(3, 4))),
    "adaptive_max": (F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [(2, 3, 5, 7)], dict(output_size=(4, 3))),
    "bilinear": (F.interpolate, TF.interpolate, [(2, 3, 3, 5)], dict(size=(7, 4), mode="bilinear")),
    "nearest": (F.interpolate, TF.interpolate, [(2, 3, 3, 5)], dict(scale_factor=(2.5, 0.7))),
    "unfold": (F.unfold, TF.unfold, [(2, 3, 5, 7)], dict(kernel_size=(2, 3), padding=1, stride=2)),
    "fold": (F.fold, TF.fold, [(2, 12, 12)], dict(output_size=(5, 7), kernel_size=2, stride=2, padding=1)),
    "grid_sample": (F.grid_sample, TF.grid_sample, [(2, 3, 5, 7), (2, 3, 5, 2)],
                    dict(mode="bilinear", padding_mode="reflection", align_corners=False)),
    "grid_sample_nearest": (F.grid_sample, TF.grid_sample, [(1, 2, 3, 1), (1, 7, 1, 2)],
                            dict(mode="nearest", padding_mode="zeros", align_corners=True)),
}


@pytest.mark.parametrize("case", list(RESAMPLE))
def test_conv_and_resampling_kernels(case):
    fn, ref, shapes, kw = RESAMPLE[case]
    compare(fn, ref, shapes, noncontig=True, **kw)
