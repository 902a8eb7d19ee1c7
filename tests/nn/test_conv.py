"""conv2d, max_pool2d, avg_pool2d and batch_norm against torch.nn.functional.

Data is drawn in float64, cast to the dtype under test, and torch runs in float64 on the cast
numbers; every backward uses a random upstream gradient. Checked: outputs, grads of the input,
weight and bias, max-pool indices, running statistics after a training step, grad_fn names, and
PyTorch's error messages for bad arguments.
"""

import pytest
import torch
import torch.nn.functional as F

import tgrad
from support.reference import assert_close, make_pair, raises, uniform64, upstream
from support.reference import compare_backward as run_and_compare
from support.torch_audit import AtenRecorder
from tgrad.kernels.spatial.conv import conv2d_grad_weight
from tgrad.nn.functional.pooling import avg_pool2d, max_pool2d
from tgrad.nn.functional.normalization import batch_norm
from tgrad.nn.functional.conv import conv2d

DTYPES = [tgrad.float32, tgrad.float64]
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's, not ours


# ----------------------------------------------------------------------------- conv2d

CONV_CASES = {  # name: (input shape, weight shape, bias?, kwargs)
    "odd_sizes": ((2, 3, 7, 9), (4, 3, 3, 2), True, {}),
    "stride2_pad1": ((2, 3, 7, 9), (5, 3, 3, 3), True, dict(stride=2, padding=1)),
    "dilation2": ((2, 3, 9, 8), (4, 3, 3, 2), True, dict(dilation=2, padding=(2, 1))),
    "mixed_tuple_args": ((1, 2, 8, 9), (3, 2, 2, 3), False, dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2))),
    "groups2": ((2, 4, 6, 7), (6, 2, 3, 3), True, dict(groups=2, stride=(1, 2), padding=1)),
    "depthwise": ((2, 3, 7, 6), (6, 1, 3, 3), True, dict(groups=3, padding=1)),
    "kernel1x1": ((3, 5, 4, 5), (7, 5, 1, 1), False, {}),
    "same_even_kernel": ((2, 3, 6, 7), (4, 3, 4, 3), True, dict(padding="same")),
    "same_dilated": ((1, 2, 7, 7), (3, 2, 3, 2), True, dict(padding="same", dilation=(2, 3))),
    "valid": ((2, 2, 5, 6), (3, 2, 2, 2), True, dict(padding="valid")),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(CONV_CASES))
def test_conv2d_matches_torch(case, dtype, device):
    xs, ws, has_bias, kw = CONV_CASES[case]
    x, xr = make_pair(xs, dtype, seed=1)
    w, wr = make_pair(ws, dtype, seed=2)
    b, br = make_pair((ws[0],), dtype, seed=3) if has_bias else (None, None)
    out = conv2d(x.to(device), w.to(device), b.to(device) if has_bias else None, **kw)
    assert out.grad_fn.name() == "ConvolutionBackward0"
    ref = F.conv2d(xr, wr, br, **kw)
    run_and_compare(out, ref, [(x, xr), (w, wr)] + ([(b, br)] if has_bias else []), dtype)


def test_conv2d_strided_views_and_unbatched_input():
    # a channels-last tensor viewed as NCHW, a weight sliced with a step, a 3-d (C, H, W) input
    base, base_r = make_pair((2, 7, 9, 3), tgrad.float64, seed=4)
    wbase, wbase_r = make_pair((4, 3, 5, 2), tgrad.float64, seed=5)
    x, xr = base.permute(0, 3, 1, 2), base_r.permute(0, 3, 1, 2)
    w, wr = wbase[:, :, ::2], wbase_r[:, :, ::2]
    run_and_compare(conv2d(x, w, stride=2, padding=1), F.conv2d(xr, wr, stride=2, padding=1),
                    [(base, base_r), (wbase, wbase_r)], tgrad.float64)
    u, ur = make_pair((3, 6, 5), tgrad.float32, seed=6)
    k, kr = make_pair((2, 3, 2, 2), tgrad.float32, seed=7)
    out = conv2d(u, k, padding=1)
    assert tuple(out.shape) == (2, 7, 6)
    run_and_compare(out, F.conv2d(ur, kr, padding=1), [(u, ur), (k, kr)], tgrad.float32)


def test_conv2d_grad_fn_edges_and_empty_batch():
    x = tgrad.ones(0, 3, 5, 5, requires_grad=True)
    w = tgrad.ones(2, 3, 3, 3, requires_grad=True)
    out = conv2d(x, w)
    assert tuple(out.shape) == (0, 2, 3, 3)
    nf = out.grad_fn.next_functions
    assert len(nf) == 3 and nf[2] == (None, 0)  # bias=None is an edge to nothing, as in PyTorch
    out.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5)
    assert torch.equal(w.grad.torch(), torch.zeros(2, 3, 3, 3))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv2d_weight_grad_split_over_programs(dtype):
    # the GPU path: the pixel sum of each dW tile split over programs, partials added by reduce
    x = uniform64((3, 4, 9, 8), seed=8).to(dtype.torch)
    g = uniform64((3, 6, 5, 9), seed=9).to(dtype.torch)
    xr = x.double().requires_grad_(False)
    wr = torch.zeros(6, 2, 3, 2, dtype=torch.float64, requires_grad=True)
    F.conv2d(xr, wr, stride=(2, 1), padding=(1, 1), groups=2).backward(g.double())
    dw = conv2d_grad_weight(x, g, (6, 2, 3, 2), (2, 1), (1, 1), (1, 1), 2, splits=3)
    assert_close(dw, wr.grad)


def test_conv2d_bad_arguments():
    x, w = tgrad.ones(2, 5, 7, 9), tgrad.ones(4, 3, 3, 3)
    with raises(RuntimeError, "Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 5, 7, 9] to have "
                              "3 channels, but got 5 channels instead"):
        conv2d(x, w)
    with raises(RuntimeError, "Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight "
                              "of size [[3, 3, 3, 3]] instead"):
        conv2d(tgrad.ones(2, 6, 7, 9), tgrad.ones(3, 3, 3, 3), groups=2)
    with raises(RuntimeError, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [7, 9]"):
        conv2d(tgrad.ones(7, 9), w)
    with raises(RuntimeError, "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
                              "can't be greater than actual input size"):
        conv2d(tgrad.ones(2, 3, 2, 2), w)
    with raises(RuntimeError, "padding='same' is not supported for strided convolutions"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, stride=2, padding="same")
    with raises(RuntimeError, "Invalid padding string: 'foo'"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, padding="foo")
    with raises(RuntimeError, "Given weight of size [4, 3, 3, 3], expected bias to be 1-dimensional with 4 elements, "
                              "but got bias of size [3] instead"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, bias=tgrad.ones(3))
    with raises(RuntimeError, "Input type (tgrad.FloatTensor) and weight type (tgrad.DoubleTensor) should be the same"):
        conv2d(tgrad.ones(2, 3, 5, 5), tgrad.ones(4, 3, 3, 3, dtype=tgrad.float64))
    with raises(RuntimeError, "non-positive stride is not supported"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, stride=0)
    with raises(RuntimeError, "negative padding is not supported"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, padding=-1)
    with raises(RuntimeError, "expected stride to be a single integer value or a list of 2 values to match the "
                              "convolution dimensions, but got stride=[1, 2, 3]"):
        conv2d(tgrad.ones(2, 3, 5, 5), w, stride=(1, 2, 3))


# ----------------------------------------------------------------------------- pooling

MAX_CASES = {  # name: (input shape, kwargs)
    "overlap_pad": ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    "stride1_rect": ((2, 2, 6, 7), dict(kernel_size=(3, 2), stride=1)),
    "ceil_mode": ((1, 3, 8, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "dilation": ((2, 2, 9, 9), dict(kernel_size=2, stride=(2, 1), dilation=(2, 3), padding=1)),
    "default_stride": ((2, 3, 7, 9), dict(kernel_size=2)),  # windows tile the input: the one-tap backward
    "tiled_rect_ceil": ((2, 3, 7, 8), dict(kernel_size=(2, 3), ceil_mode=True)),  # clipped last windows
    "tiled_explicit": ((1, 2, 8, 9), dict(kernel_size=(2, 3), stride=(2, 3), padding=0, dilation=1)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(MAX_CASES))
def test_max_pool2d_matches_torch(case, dtype, device):
    shape, kw = MAX_CASES[case]
    x, xr = make_pair(shape, dtype, seed=12)
    out, idx = max_pool2d(x.to(device), return_indices=True, **kw)
    ref, ref_idx = F.max_pool2d(xr, return_indices=True, **kw)
    assert out.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert idx.dtype == tgrad.int64 and not idx.requires_grad
    assert torch.equal(idx.torch().cpu(), ref_idx)
    run_and_compare(out, ref, [(x, xr)], dtype)


def test_max_pool2d_ties_infinities_and_nan_follow_torch():
    # many ties (each window's first maximum wins), an all -inf plane (the first in-image position
    # wins) and a NaN (it propagates and takes the index); overlapping windows share gradients
    vals = uniform64((2, 2, 6, 7), seed=13).round()
    vals[1, 0] = -float("inf")
    vals[0, 1, 2, 3] = float("nan")
    x = tgrad.from_torch(vals.clone()).requires_grad_()
    xr = vals.clone().requires_grad_()
    kw = dict(kernel_size=3, stride=1, padding=1, return_indices=True)
    (out, idx), (ref, ref_idx) = max_pool2d(x, **kw), F.max_pool2d(xr, **kw)
    assert torch.equal(idx.torch(), ref_idx)
    run_and_compare(out, ref, [(x, xr)], tgrad.float64)


AVG_CASES = {
    "overlap_pad": ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    "exclude_pad": ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    "ceil_mode": ((1, 2, 8, 7), dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True)),
    "ceil_exclude_pad": ((1, 2, 8, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                            count_include_pad=False)),
    "divisor_override": ((2, 2, 6, 7), dict(kernel_size=(2, 3), stride=1, padding=(1, 1), divisor_override=5)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", list(AVG_CASES))
def test_avg_pool2d_matches_torch(case, dtype, device):
    shape, kw = AVG_CASES[case]
    x, xr = make_pair(shape, dtype, seed=14)
    out = avg_pool2d(x.to(device), **kw)
    assert out.grad_fn.name() == "AvgPool2DBackward0"
    run_and_compare(out, F.avg_pool2d(xr, **kw), [(x, xr)], dtype)


def test_pools_on_unbatched_and_strided_inputs():
    base, base_r = make_pair((5, 6, 3), tgrad.float32, seed=15)
    x, xr = base.permute(2, 0, 1), base_r.permute(2, 0, 1)  # (C, H, W), channels last in memory
    out, idx = max_pool2d(x, 2, 1, return_indices=True)
    ref, ref_idx = F.max_pool2d(xr, 2, 1, return_indices=True)
    assert tuple(idx.shape) == (3, 4, 5) and torch.equal(idx.torch(), ref_idx)
    a = avg_pool2d(x, 3, 2, 1)
    r = F.avg_pool2d(xr, 3, 2, 1)
    assert_close(a, r)
    g1, g1r = upstream(tuple(ref.shape), tgrad.float32, seed=1)
    g2, g2r = upstream(tuple(r.shape), tgrad.float32, seed=2)
    ((out * g1).sum() + (a * g2).sum()).backward()
    ((ref * g1r).sum() + (r * g2r).sum()).backward()
    assert_close(base.grad, base_r.grad)


def test_pool_bad_arguments():
    x = tgrad.ones(2, 3, 5, 5)
    with raises(RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
                              "dilation=1"):
        max_pool2d(x, 3, padding=2)
    with raises(RuntimeError, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
                              "dilation=1"):
        avg_pool2d(x, 3, padding=2)
    with raises(RuntimeError, "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"):
        max_pool2d(tgrad.ones(2, 3, 2, 2), 3)
    with raises(RuntimeError, "non-empty 3D or 4D (batch mode) tensor expected for input"):
        max_pool2d(tgrad.ones(3, 5), 3)
    with raises(RuntimeError, "stride should not be zero"):
        max_pool2d(x, 2, stride=0)
    with raises(RuntimeError, "divisor must be not zero"):
        avg_pool2d(x, 2, divisor_override=0)


# ----------------------------------------------------------------------------- batch_norm

@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)], ids=["2d", "3d", "4d"])
def test_batch_norm_matches_torch(shape, training, dtype, device):
    x, xr = make_pair(shape, dtype, seed=20)
    w, wr = make_pair((3,), dtype, seed=21)
    b, br = make_pair((3,), dtype, seed=22)
    rm0 = uniform64((3,), -1, 1, seed=23).to(dtype.torch)
    rv0 = uniform64((3,), 0.5, 2, seed=24).to(dtype.torch)
    rm, rv = tgrad.from_torch(rm0.clone().to(device)), tgrad.from_torch(rv0.clone().to(device))
    rmr, rvr = rm0.double(), rv0.double()
    out = batch_norm(x.to(device), rm, rv, w.to(device), b.to(device), training=training, momentum=0.3, eps=1e-3)
    ref = F.batch_norm(xr, rmr, rvr, wr, br, training=training, momentum=0.3, eps=1e-3)
    assert out.grad_fn.name() == "NativeBatchNormBackward0"
    run_and_compare(out, ref, [(x, xr), (w, wr), (b, br)], dtype)
    assert_close(rm.cpu(), rmr, msg="running_mean")
    assert_close(rv.cpu(), rvr, msg="running_var")


def test_batch_norm_without_affine_or_running_stats_on_strided_input():
    base, base_r = make_pair((5, 4, 3), tgrad.float64, seed=25)
    x, xr = base.transpose(0, 2), base_r.transpose(0, 2)  # (3, 4, 5): channel stride 3, batch stride 1
    out = batch_norm(x, None, None, training=True)
    nf = out.grad_fn.next_functions
    assert len(nf) == 3 and nf[1] == (None, 0) and nf[2] == (None, 0)
    run_and_compare(out, F.batch_norm(xr, None, None, training=True), [(base, base_r)], tgrad.float64)
    # eval: only the weight needs a gradient
    w, wr = make_pair((4,), tgrad.float32, seed=26)
    x2, x2r = make_pair((3, 4, 2, 2), tgrad.float32, requires_grad=False, seed=27)
    rm, rv = tgrad.zeros(4), tgrad.ones(4)
    run_and_compare(batch_norm(x2, rm, rv, w), F.batch_norm(x2r, torch.zeros(4, dtype=torch.float64),
                                                            torch.ones(4, dtype=torch.float64), wr),
                    [(w, wr)], tgrad.float32)


def test_batch_norm_bad_arguments():
    with raises(ValueError, "Expected more than 1 value per channel when training, got input size "
                            "tgrad.Size([1, 3])"):
        batch_norm(tgrad.ones(1, 3), tgrad.zeros(3), tgrad.ones(3), training=True)
    with raises(RuntimeError, "running_mean should contain 3 elements not 4"):
        batch_norm(tgrad.ones(4, 3), tgrad.zeros(4), tgrad.ones(4), training=True)
    with raises(RuntimeError, "weight should contain 3 elements not 4"):
        batch_norm(tgrad.ones(4, 3), tgrad.zeros(3), tgrad.ones(3), weight=tgrad.ones(4))
    with raises(ValueError, "running_mean and running_var must either both be None or neither be None"):
        batch_norm(tgrad.ones(4, 3), tgrad.zeros(3), None, training=True)
    with raises(RuntimeError, "running_mean must be defined in evaluation mode"):
        batch_norm(tgrad.ones(4, 3), None, None, training=False)
    with raises(TypeError, "batch_norm(): argument 'momentum' (position 7) must be float, not NoneType"):
        batch_norm(tgrad.ones(4, 3), tgrad.zeros(3), tgrad.ones(3), training=True, momentum=None)


# ----------------------------------------------------------------------------- a CNN step

def test_cnn_step_matches_torch():
    """conv -> batch_norm -> relu -> max_pool -> conv (groups) -> avg_pool, one backward: every
    parameter's gradient and the running statistics, in float32."""
    x, xr = make_pair((4, 2, 8, 8), tgrad.float32, requires_grad=False, seed=30)
    p = {name: make_pair(shape, tgrad.float32, -0.5, 0.5, seed=31 + i) for i, (name, shape) in enumerate(
        {"w1": (6, 2, 3, 3), "b1": (6,), "g": (6,), "beta": (6,), "w2": (4, 3, 2, 2), "b2": (4,)}.items())}
    rm, rv = tgrad.zeros(6), tgrad.ones(6)
    rmr, rvr = torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)

    def net(fn, x, q, rm, rv):
        h = fn.conv2d(x, q["w1"], q["b1"], padding=1)
        h = fn.batch_norm(h, rm, rv, q["g"], q["beta"], training=True).relu()
        h = fn.max_pool2d(h, 3, 2, 1)
        return fn.avg_pool2d(fn.conv2d(h, q["w2"], q["b2"], groups=2), 2, ceil_mode=True)

    import tgrad.nn.functional as ours
    out = net(ours, x, {k: v[0] for k, v in p.items()}, rm, rv)
    ref = net(F, xr, {k: v[1] for k, v in p.items()}, rmr, rvr)
    run_and_compare(out, ref, list(p.values()), tgrad.float32)
    assert_close(rm, rmr)
    assert_close(rv, rvr)


def test_torch_computes_nothing_in_a_cnn_step():
    x = tgrad.randn(4, 2, 8, 8)
    w, b = tgrad.randn(6, 2, 3, 3, requires_grad=True), tgrad.randn(6, requires_grad=True)
    g, beta = tgrad.ones(6, requires_grad=True), tgrad.zeros(6, requires_grad=True)
    rm, rv = tgrad.zeros(6), tgrad.ones(6)
    with AtenRecorder() as rec:
        h = batch_norm(conv2d(x, w, b, padding=1), rm, rv, g, beta, training=True)
        h = max_pool2d(h, 3, 2, 1)
        (avg_pool2d(h, 3, 1, 1) + batch_norm(h, rm, rv, g, beta)).sum().backward()
    assert sum(rec.ops.values()) > 0 and rec.computed() == {}
