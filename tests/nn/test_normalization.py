"""RMSNorm / rms_norm, GroupNorm / group_norm, InstanceNorm1d/2d, LocalResponseNorm against torch
with copied weights: outputs, gradients of input, weight and bias (random upstream), running
statistics, double backward and PyTorch's errors."""

import pytest
import torch

import tgrad
import tgrad.nn.functional as F
from support.modules import backward_both, copy_module, module_pair
from support.reference import assert_close, compare_second_order, make_pair, raises, run, uniform64
from tgrad.kernels.normalization import layer_norm as KLN
from tgrad.kernels.runtime.launch import count_launches


def affine(shape, seed):
    w, wr = make_pair(shape, tgrad.float64, 0.5, 1.5, seed=seed)
    b, br = make_pair(shape, tgrad.float64, -0.5, 0.5, seed=seed + 1)
    return w, wr, b, br


@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32])
def test_rms_norm(dtype):
    x, xr = make_pair((3, 2, 5, 7), dtype, seed=1)
    w, wr, _, _ = affine((5, 7), 2)
    w = w.to(dtype).detach().requires_grad_()
    out = F.rms_norm(x, (5, 7), w, eps=1e-6)
    ref = torch.nn.functional.rms_norm(xr, (5, 7), wr, eps=1e-6)
    backward_both([out], [ref])
    assert_close(x.grad, xr.grad)
    assert_close(w.grad, wr.grad, rtol=1e-4 if dtype is tgrad.float32 else None)
    y, yr = make_pair((4, 7), dtype, seed=3)  # default eps, no weight
    backward_both([F.rms_norm(y, 7)], [torch.nn.functional.rms_norm(yr, (7,))])
    assert_close(y.grad, yr.grad)


def test_rms_norm_module_and_launches():
    ref, mod = module_pair("RMSNorm", 6, eps=1e-5)
    x, xr = make_pair((5, 6), tgrad.float64, seed=4)
    with count_launches() as c:
        out = mod(x)
    assert sum(c.values()) == 1
    backward_both([out], [ref(xr)])
    assert_close(mod.weight.grad, ref.weight.grad)


@pytest.mark.parametrize("shape,groups", [((3, 6, 5), 3), ((2, 4, 3, 5), 2), ((2, 5), 5)])
def test_group_norm(shape, groups):
    x, xr = make_pair(shape, tgrad.float64, seed=5)
    w, wr, b, br = affine((shape[1],), 6)
    backward_both([F.group_norm(x, groups, w, b, 1e-4)], [torch.nn.functional.group_norm(xr, groups, wr, br, 1e-4)])
    for a, r in ((x, xr), (w, wr), (b, br)):
        assert_close(a.grad, r.grad)


def test_group_norm_module_and_double_backward():
    ref, mod = module_pair("GroupNorm", 2, 4)
    x, xr = make_pair((3, 4, 5), tgrad.float64, seed=7)
    (g,) = tgrad.autograd.grad((mod(x) ** 3).sum(), [x], create_graph=True)
    (gr,) = torch.autograd.grad((ref(xr) ** 3).sum(), [xr], create_graph=True)
    assert_close(g, gr)
    (g * g).sum().backward()
    (gr * gr).sum().backward()
    assert_close(x.grad, xr.grad)
    assert_close(mod.weight.grad, ref.weight.grad)
    assert_close(mod.bias.grad, ref.bias.grad)


@pytest.mark.parametrize("kind,shape", [("InstanceNorm1d", (3, 4, 5)), ("InstanceNorm2d", (2, 3, 4, 5)),
                                        ("InstanceNorm1d", (4, 5))])
@pytest.mark.parametrize("kw", [dict(), dict(affine=True, track_running_stats=True, momentum=0.3),
                                dict(track_running_stats=True, momentum=None)])
def test_instance_norm(kind, shape, kw):
    torch.manual_seed(0)
    C = shape[-2] if len(shape) == 2 else shape[1]
    ref = getattr(torch.nn, kind)(C, **kw).double()
    mod = getattr(tgrad.nn, kind)(C, dtype=tgrad.float64, **kw)
    copy_module(ref, mod) if kw else None
    x, xr = make_pair(shape, tgrad.float64, seed=8)
    backward_both([mod(x)], [ref(xr)])
    assert_close(x.grad, xr.grad)
    if kw:
        if kw.get("affine"):
            assert_close(mod.weight.grad, ref.weight.grad)
        mod(x)
        ref(xr)  # a second batch
        assert_close(mod.running_mean, ref.running_mean)
        assert_close(mod.running_var, ref.running_var)
        assert mod.num_batches_tracked.item() == ref.num_batches_tracked.item()
        mod.eval()
        ref.eval()
        y, yr = make_pair(shape, tgrad.float64, seed=9)
        backward_both([mod(y)], [ref(yr)])
        assert_close(y.grad, yr.grad)


def test_errors():
    with raises(ValueError, "num_channels must be divisible by num_groups"):
        tgrad.nn.GroupNorm(3, 4)
    with raises(RuntimeError, "Expected number of channels in input to be divisible by num_groups, but got input "
                              "of shape [2, 4, 3] and num_groups=3"):
        F.group_norm(tgrad.zeros(2, 4, 3), 3)
    with raises(ValueError, "expected 3D or 4D input (got 2D input)"):
        tgrad.nn.InstanceNorm2d(3)(tgrad.zeros(3, 4))
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(tgrad.zeros(2, 3), (4,))


# ----------------------------------------------------------------------------- local_response_norm

@pytest.mark.parametrize("shape,size", [((2, 5, 7), 3), ((2, 6, 3, 4), 2), ((1, 4, 2, 3, 2), 5), ((2, 3, 4), 1)])
def test_local_response_norm_matches_torch(shape, size):
    kw = dict(alpha=0.3, beta=0.6, k=1.5)
    run(lambda x: torch.nn.functional.local_response_norm(x, size, **kw),
        lambda x: F.local_response_norm(x, size, **kw), [uniform64(shape, seed=3)])
    ref, mod = torch.nn.LocalResponseNorm(size, **kw), tgrad.nn.LocalResponseNorm(size, **kw)
    assert repr(mod) == repr(ref) and list(mod.state_dict()) == []
    run(ref, mod, [uniform64(shape, seed=4)])


def test_local_response_norm_second_derivatives_and_errors():
    compare_second_order(lambda x: F.local_response_norm(x, 3, alpha=0.5),
                         lambda x: torch.nn.functional.local_response_norm(x, 3, alpha=0.5), [(2, 4, 3)])
    with raises(ValueError, "Expected 3D or higher dimensionality                          input (got 2 dimensions)"):
        F.local_response_norm(tgrad.ones(2, 3), 2)
    empty = tgrad.ones(0, 3, 2)
    assert F.local_response_norm(empty, 2) is empty


@pytest.mark.usefixtures("replay_verify_mode")
@pytest.mark.parametrize("affine_kind", ["both", "weight", "none"])
def test_layer_norm_repeated_calls_replay_from_their_own_tensors(affine_kind):
    # forward and backward launch through launch_site: repeated calls (new tensors at new addresses,
    # a transposed input among them) replay a planned site; verify mode checks each against binding
    # its arguments, the float64 reference checks the values
    for seed, transposed in [(20 + i, False) for i in range(3)] + [(30 + i, True) for i in range(3)]:
        shape = (5, 6) if transposed else (6, 5)
        x, xr = make_pair(shape, tgrad.float32, seed=seed)
        if transposed:
            x, xr = x.detach().t().requires_grad_(), xr.detach().t().requires_grad_()
        w, wr, b, br = affine((5,), seed)
        w, b = (t.to(tgrad.float32).detach().requires_grad_() for t in (w, b))
        w, wr = (w, wr) if affine_kind != "none" else (None, None)
        b, br = (b, br) if affine_kind == "both" else (None, None)
        backward_both([F.layer_norm(x, (5,), w, b, 1e-5)], [torch.nn.functional.layer_norm(xr, (5,), wr, br, 1e-5)],
                      seed=seed)
        for a, r in ((x, xr), (w, wr), (b, br)):
            if a is not None:
                assert_close(a.grad, r.grad, rtol=1e-4)
    for kernel in (KLN.layer_norm_fwd_kernel, KLN.layer_norm_bwd_kernel):
        sites = kernel.__dict__["_tgrad_replay"].sites
        assert len(sites) == 2  # a contiguous and a transposed x, not a site per call
