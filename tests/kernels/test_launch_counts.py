"""Launch economy: what a training step launches, and that the shortcuts taken to launch less give
PyTorch's results. Also: the CUDA configurations of the kernels' CPU shortcuts compile for sm_90.

Counts are asserted, never timings (those are the benchmarks' business)."""
import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn as nn
import tgrad.optim
from support.launches import record_launches
from support.reference import assert_close
from tgrad.kernels.runtime.launch import launch_observers


def _moons_like_step(lib, X, y, model, params, opt):
    """The micrograd demo's step as user code writes it (benchmarks/moons.py)."""
    scores = model(X).squeeze(1)
    loss = (1 - y * scores).relu().mean() + 1e-4 * sum((p * p).sum() for p in params)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def _models():
    gen = torch.Generator().manual_seed(0)
    X, y = torch.randn(20, 2, generator=gen), (torch.randint(0, 2, (20,), generator=gen) * 2 - 1).float()
    out = {}
    for lib in (tgrad, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(2, 16), lib.nn.ReLU(), lib.nn.Linear(16, 16), lib.nn.ReLU(),
                                  lib.nn.Linear(16, 1))
        out[lib] = [model, list(model.parameters())]
    with torch.no_grad():  # the same weights in both
        for p, q in zip(out[tgrad][1], out[torch][1]):
            q.copy_(p._data)
    for lib in out:
        out[lib].append(lib.optim.SGD(out[lib][1], lr=0.5))
    return (tgrad.from_torch(X), tgrad.from_torch(y)), (X, y), out


def test_moons_step_launches_what_the_math_needs_and_matches_pytorch():
    (X, y), (Xt, yt), models = _models()
    with tgrad.count_launches() as counts:
        loss = _moons_like_step(tgrad, X, y, *models[tgrad])
    ref = _moons_like_step(torch, Xt, yt, *models[torch])
    assert_close(loss, ref, atol=1e-6, rtol=1e-5)
    for p, q in zip(*(models[lib][1] for lib in (tgrad, torch))):
        assert_close(p, q, atol=1e-6, rtol=1e-5)
    # forward: 3 matmuls (ReLU fused into the first two), 4 for the hinge, 3 per parameter for the
    # penalty, 2 for scaling and adding it; backward: 1 per parameter for p*p, 6 for the hinge and
    # penalty chain, 5 matmuls (db beside dW), 2 ReLU', 1 per parameter to add the two gradients;
    # one optimizer launch for the group
    assert counts["optim_params_kernel"] == 1
    assert counts["matmul_kernel"] == 8
    assert "reduce_kernel" not in counts or counts["reduce_kernel"] == 7  # mean, 6 sums
    assert sum(counts.values()) <= 52


def test_sequential_linear_relu_is_fused_and_keeps_pytorchs_results():
    tgrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3), nn.ReLU())
    x = tgrad.randn(4, 5, dtype=tgrad.float64, requires_grad=True)
    model = model.double()
    with tgrad.count_launches() as counts:
        out = model(x)
    assert counts == {"matmul_kernel": 2}
    assert out.grad_fn.name() == "ReluBackward0"
    ref_model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3),
                                    torch.nn.ReLU()).double()
    with torch.no_grad():
        for p, q in zip(model.parameters(), ref_model.parameters()):
            q.copy_(p._data)
    xt = x._data.clone().requires_grad_(True)
    ref = ref_model(xt)
    assert_close(out, ref)
    g = torch.randn(4, 3, dtype=torch.float64)
    out.backward(tgrad.from_torch(g))
    ref.backward(g)
    assert_close(x.grad, xt.grad)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        assert_close(p.grad, q.grad)


def test_sequential_does_not_fuse_what_could_be_observed():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    seen = []
    model[0].register_forward_hook(lambda m, args, out: seen.append(out.grad_fn.name()))
    x = tgrad.randn(2, 3, requires_grad=True)
    with tgrad.count_launches() as counts:
        model(x)
    assert seen == ["AddmmBackward0"] and counts == {"matmul_kernel": 1, "pointwise_kernel": 1}
    inplace = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True))
    with tgrad.count_launches() as counts:
        inplace(x)
    assert counts["matmul_kernel"] == 1 and counts["pointwise_kernel"] >= 1  # the ReLU runs on its own


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_square_backward_is_one_launch_and_exact(dtype):
    p = tgrad.tensor([[-1.5, 0.0, 2.25], [3.0, -0.0, 1e-3]], dtype=dtype, requires_grad=True)
    y = p * p
    g = tgrad.tensor([[0.3, -1.0, 2.0], [0.5, 4.0, -0.25]], dtype=dtype)
    with tgrad.count_launches() as counts:
        y.backward(g)
    assert counts == {"pointwise_kernel": 1}
    pt = p._data.clone().requires_grad_(True)
    (pt * pt).backward(g._data)
    assert torch.equal(p.grad._data, pt.grad)
    # create_graph keeps PyTorch's two products, so the gradient has history
    q = tgrad.tensor([1.0, -2.0], dtype=dtype, requires_grad=True)
    (gq,) = tgrad.autograd.grad((q * q).sum(), q, create_graph=True)
    (hq,) = tgrad.autograd.grad(gq.sum(), q)
    assert torch.equal(hq._data, torch.full((2,), 2.0, dtype=dtype.torch))


def test_plain_add_and_sub_match_pytorch_bits():
    a = tgrad.tensor([1e30, -0.0, 0.1, float("inf")])
    b = tgrad.tensor([-1e30, 0.0, 0.2, 1.0])
    for op in ("__add__", "__sub__", "__rsub__"):
        assert torch.equal(getattr(a, op)(b)._data, getattr(a._data, op)(b._data)), op
    assert torch.equal((1 - a)._data, 1 - a._data)
    assert torch.equal(a.add(b, alpha=2)._data, a._data.add(b._data, alpha=2))


def test_cuda_configurations_of_cpu_shortcuts_compile_for_sm90():
    """The CPU runs take the one-program / one-tile / unmasked shortcuts; CUDA takes the general
    paths with other flag values. Each is compiled here for sm_90 from configurations recorded on
    the CPU with the flags set as a GPU run sets them."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        tgrad.manual_seed(0)
        x = tgrad.randn(64, 32, requires_grad=True)
        lin = nn.Linear(32, 16)
        loss = nn.functional.relu(lin(x)).sum() + (x * x).mean() + x[:, ::2].sum(1).sum()
        loss.backward()
        tgrad.optim.Adam(lin.parameters(), weight_decay=0.1).step()
        tgrad.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9).step()
    finally:
        launch_observers.remove(observer)
    gpu = {"ONE_PROGRAM": False, "ONE_TILE": False, "ONE_CHUNK": False, "MASKED": True, "GROUP_M": 8,
           "INTERPRETED": False}
    target = GPUTarget("cuda", 90, 32)
    seen, failures = set(), []
    for (name, _, _), (kernel, signature, constants, options) in launches.items():
        as_gpu = dict(constants, **{k: v for k, v in gpu.items() if k in constants})
        variants = [constants, as_gpu]
        if "EVEN_M" in constants:  # masked and unmasked tiles
            variants += [dict(as_gpu, EVEN_M=e, EVEN_N=e, EVEN_K=e) for e in (True, False)]
        for consts in variants:
            key = (name, repr(sorted(signature.items())), repr(sorted((k, repr(v)) for k, v in consts.items())))
            if key in seen:
                continue
            seen.add(key)
            try:
                compiled = triton.compile(ASTSource(kernel, signature, consts), target=target, options=options)
                assert compiled.asm["cubin"]
            except Exception as e:
                failures.append(f"{name} {consts}: {type(e).__name__}: {str(e)[:300]}")
    assert len(seen) > 10
    assert not failures, "\n".join(failures)


def test_cat_and_stack_of_n_inputs_are_one_launch_and_compile_for_sm90():
    """cat/stack read every input through a pointer table (kernels/indexing/concat.py): one launch for
    32 inputs, and the configurations (equal sizes, a binary search over starts, mixed dtypes)
    compile for a GPU."""
    d = tgrad.randn(64)
    ref = d.torch()
    rows = [d[i:i + 8] for i in range(32)]
    pieces = [d[:i % 5].double() if i % 3 else d[:i % 5] for i in range(32)]  # some empty, two dtypes
    mixed = [d[:3].half(), d[:2].int(), d[:4].t()]
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        with tgrad.count_launches() as counts:
            outs = tgrad.stack(rows), tgrad.cat(pieces), tgrad.cat(mixed)
    finally:
        launch_observers.remove(observer)
    assert counts == {"cat_kernel": 3}
    assert torch.equal(outs[0].torch(), torch.stack([ref[i:i + 8] for i in range(32)]))
    assert torch.equal(outs[1].torch(), torch.cat([p.torch() for p in pieces]))
    assert torch.equal(outs[2].torch(), torch.cat([ref[:3].half(), ref[:2].int(), ref[:4]]))
    target = GPUTarget("cuda", 90, 32)
    compiled = 0
    for (name, _, _), (kernel, signature, constants, options) in launches.items():
        if name == "cat_kernel":
            assert triton.compile(ASTSource(kernel, signature, constants), target=target, options=options).asm["cubin"]
            compiled += 1
    assert compiled == 3
