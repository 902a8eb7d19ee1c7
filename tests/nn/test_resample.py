"""Adaptive pools, 1-d pools, interpolate / Upsample, pixel (un)shuffle, channel shuffle, unfold /
fold and the channel dropouts against torch in float64 (outputs, grads, grad_fn names, indices,
second derivatives, strided inputs, module reprs and PyTorch's errors)."""
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import assert_close, compare, compare_second_order, raises, run, uniform64


def pair(name):
    return getattr(F, name), getattr(TF, name)


# ----------------------------------------------------------------------------- pools

POOLS = {  # name: (function, input shape, kwargs)
    "aavg2d": ("adaptive_avg_pool2d", (2, 3, 7, 9), dict(output_size=(3, 4))),
    "aavg2d_up_none": ("adaptive_avg_pool2d", (3, 5, 4), dict(output_size=(7, None))),
    "aavg1d": ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=4)),
    "amax2d": ("adaptive_max_pool2d", (2, 3, 7, 9), dict(output_size=(3, 5))),
    "amax2d_up": ("adaptive_max_pool2d", (3, 4, 3), dict(output_size=(5, 7))),
    "amax1d": ("adaptive_max_pool1d", (2, 3, 9), dict(output_size=4)),
    "max1d": ("max_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    "max1d_unbatched": ("max_pool1d", (3, 8), dict(kernel_size=2)),
    "avg1d": ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    "avg1d_ceil": ("avg_pool1d", (2, 2, 8), dict(kernel_size=3, ceil_mode=True)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", list(POOLS))
def test_pools_match_torch(case, noncontig):
    name, shape, kw = POOLS[case]
    compare(*pair(name), [shape], noncontig=noncontig, **kw)


def test_adaptive_max_indices_and_float32(device):
    x = uniform64((2, 3, 7, 9), seed=3)
    x[0, 0, 1, 2] = float("nan")
    y, idx = F.adaptive_max_pool2d(tgrad.from_torch(x.clone()).to(device), (3, 4), return_indices=True)
    yr, idxr = TF.adaptive_max_pool2d(x, (3, 4), return_indices=True)
    assert torch.equal(idx.cpu().torch(), idxr)
    assert_close(y.cpu(), yr)
    _, i1 = F.adaptive_max_pool1d(tgrad.from_torch(x[0, :, 0].clone()), 4, return_indices=True)
    assert torch.equal(i1.torch(), TF.adaptive_max_pool1d(x[0, :, 0], 4, return_indices=True)[1])
    compare(*pair("adaptive_avg_pool2d"), [(2, 3, 5, 6)], dtype=tgrad.float32, device=device, output_size=(2, 4))


@pytest.mark.parametrize("name", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_adaptive_second_derivative(name):
    ours, theirs = pair(name)
    compare_second_order(lambda x: ours(x, (2, 3)) ** 3, lambda x: theirs(x, (2, 3)) ** 3, [(1, 2, 3, 5)])


# ----------------------------------------------------------------------------- interpolate

INTERP = {  # name: (input shape, kwargs)
    "nearest_x2": ((2, 3, 4, 5), dict(scale_factor=2)),
    "nearest_size_down": ((2, 3, 7, 5), dict(size=(3, 2))),
    "nearest_fractional": ((1, 2, 4, 5), dict(scale_factor=(1.7, 0.6))),
    "nearest_exact": ((1, 2, 4, 5), dict(scale_factor=2.5, mode="nearest-exact")),
    "bilinear_x2": ((2, 3, 4, 5), dict(scale_factor=2, mode="bilinear")),
    "bilinear_align": ((2, 2, 4, 5), dict(size=(7, 4), mode="bilinear", align_corners=True)),
    "bilinear_down_up": ((1, 2, 6, 5), dict(size=(3, 11), mode="bilinear")),
    "bilinear_scales": ((1, 2, 4, 5), dict(scale_factor=(1.3, 3.1), mode="bilinear")),
    "bilinear_recompute": ((1, 2, 4, 5), dict(scale_factor=(0.6, 2.3), mode="bilinear", recompute_scale_factor=True)),
    "bilinear_align_one": ((1, 2, 4, 5), dict(size=(1, 3), mode="bilinear", align_corners=True)),
    "area": ((2, 3, 7, 5), dict(size=(3, 2), mode="area")),
    "nearest_1d": ((2, 3, 5), dict(scale_factor=3)),
    "linear_1d": ((2, 3, 5), dict(size=9, mode="linear")),
    "linear_1d_align_down": ((2, 3, 7), dict(scale_factor=0.6, mode="linear", align_corners=True)),
    "nearest_exact_1d": ((2, 3, 7), dict(size=3, mode="nearest-exact")),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", list(INTERP))
def test_interpolate_matches_torch(case, noncontig):
    shape, kw = INTERP[case]
    compare(F.interpolate, TF.interpolate, [shape], noncontig=noncontig, **kw)


def test_interpolate_float32_and_upsample_modules(device):
    compare(F.interpolate, TF.interpolate, [(2, 3, 4, 5)], dtype=tgrad.float32, device=device, scale_factor=2,
            mode="bilinear")
    for make in (lambda m: m.Upsample(scale_factor=2), lambda m: m.Upsample(size=(5, 3), mode="bilinear"),
                 lambda m: m.UpsamplingBilinear2d(scale_factor=3), lambda m: m.UpsamplingNearest2d(size=7)):
        ours, ref = make(nn), make(torch.nn)
        assert repr(ours) == repr(ref)
        compare(lambda x: ours(x), lambda x: ref(x), [(1, 2, 3, 4)])


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_interpolate_second_derivative(mode):
    compare_second_order(lambda x: F.interpolate(x, scale_factor=2, mode=mode) ** 3,
                         lambda x: TF.interpolate(x, scale_factor=2, mode=mode) ** 3, [(1, 1, 2, 3)])


def test_interpolate_errors():
    x = tgrad.ones(1, 4, 5, 5)
    with raises(ValueError, "only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with raises(ValueError, "either size or scale_factor should be defined"):
        F.interpolate(x)
    with raises(ValueError, "align_corners option can only be set with the interpolating modes: linear | bilinear | "
                            "bicubic | trilinear"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with raises(NotImplementedError, "Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(tgrad.ones(1, 4, 5), scale_factor=2, mode="bilinear")
    with raises(NotImplementedError, "Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with raises(RuntimeError, "Input and output sizes should be greater than 0, but got input (H: 5, W: 5) output "
                              "(H: 0, W: 0)"):
        F.interpolate(x, scale_factor=0.1)
    with raises(ValueError, "Input and output must have the same number of spatial dimensions, but got input with "
                            "spatial dimensions of [5] and output size of (2, 3). Please provide input tensor in (N, "
                            "C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."):
        F.interpolate(tgrad.ones(1, 4, 5), size=(2, 3))


# ----------------------------------------------------------------------------- pixel shuffle, unfold / fold

def test_pixel_shuffle_and_unshuffle_match_torch():
    compare(F.pixel_shuffle, TF.pixel_shuffle, [(2, 12, 3, 5)], upscale_factor=2)
    compare(F.pixel_shuffle, TF.pixel_shuffle, [(2, 2, 9, 3, 2)], noncontig=True, upscale_factor=3)
    compare(F.pixel_unshuffle, TF.pixel_unshuffle, [(2, 3, 4, 6)], downscale_factor=2)
    compare(F.pixel_unshuffle, TF.pixel_unshuffle, [(3, 6, 4)], noncontig=True, downscale_factor=2)
    ours, ref = nn.PixelShuffle(2), torch.nn.PixelShuffle(2)
    assert repr(ours) == repr(ref)
    compare_second_order(lambda x: F.pixel_shuffle(x, 2) ** 3, lambda x: TF.pixel_shuffle(x, 2) ** 3, [(1, 4, 2, 1)])
    with raises(RuntimeError, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                              "upscale_factor, but input.size(-3)=5 is not divisible by 4"):
        F.pixel_shuffle(tgrad.ones(1, 5, 3, 3), 2)
    with raises(RuntimeError, "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=5 "
                              "is not divisible by 2"):
        F.pixel_unshuffle(tgrad.ones(1, 4, 4, 5), 2)
    with raises(RuntimeError, "pixel_shuffle expects a positive upscale_factor, but got 0"):
        F.pixel_shuffle(tgrad.ones(1, 4, 3, 3), 0)


UNFOLD = {
    "plain": ((2, 3, 5, 6), dict(kernel_size=2)),
    "all": ((2, 3, 6, 7), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 1))),
    "unbatched": ((2, 5, 4), dict(kernel_size=3, padding=(1, 0), stride=2)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", list(UNFOLD))
def test_unfold_and_fold_match_torch(case, noncontig):
    shape, kw = UNFOLD[case]
    compare(F.unfold, TF.unfold, [shape], noncontig=noncontig, **kw)
    cols = TF.unfold(torch.zeros(shape), **kw)
    compare(F.fold, TF.fold, [tuple(cols.shape)], noncontig=noncontig, output_size=shape[-2:], **kw)


def test_unfold_fold_second_derivative_modules_and_errors():
    compare_second_order(lambda x: F.unfold(x, 2, padding=1) ** 3, lambda x: TF.unfold(x, 2, padding=1) ** 3,
                         [(1, 1, 2, 3)])
    compare_second_order(lambda x: F.fold(x, (3, 3), 2) ** 3, lambda x: TF.fold(x, (3, 3), 2) ** 3, [(1, 4, 4)])
    for make in (lambda m: m.Unfold(2, padding=1), lambda m: m.Fold((4, 4), 2)):
        assert repr(make(nn)) == repr(make(torch.nn))
    with raises(RuntimeError, "Given input with spatial size (5, 3), kernel_size=(4, 4), dilation=(1, 1), "
                              "padding=(0, 0), calculated shape of the array of sliding blocks as (2, 0), but its "
                              "components must be at least one."):
        F.unfold(tgrad.ones(1, 2, 5, 3), 4)
    with raises(RuntimeError, "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                              "got input.size(1)=7 and kernel_size=(2, 2)."):
        F.fold(tgrad.ones(2, 7, 6), (3, 4), 2)
    with raises(RuntimeError, "Given output_size=(3, 4), kernel_size=(2, 2), dilation=(1, 1), padding=(0, 0), "
                              "stride=(1, 1), expected size of input's dimension 2 to match the calculated number of "
                              "sliding blocks 2 * 3 = 6, but got input.size(2)=5."):
        F.fold(tgrad.ones(2, 8, 5), (3, 4), 2)


# ----------------------------------------------------------------------------- channel dropout

@pytest.mark.parametrize("dims", [1, 2])
def test_channel_dropout_zeroes_whole_channels(dims):
    tgrad.manual_seed(0)
    shape = (8, 16, 5) if dims == 1 else (8, 16, 3, 4)
    x = tgrad.from_torch(uniform64(shape, 0.5, 1.5)).requires_grad_()
    fn = F.dropout1d if dims == 1 else F.dropout2d
    y = fn(x, 0.25)
    assert y.grad_fn.name() == "MulBackward0"
    kept = (y.detach().torch() != 0).reshape(8, 16, -1)
    assert torch.equal(kept, kept[..., :1].expand_as(kept))  # one decision per (n, c)
    assert 0.1 < 1 - kept.double().mean() < 0.45
    scale = kept.reshape(shape).double() / 0.75
    assert_close(y, x.detach().torch() * scale)
    g = uniform64(shape, seed=4)
    y.backward(tgrad.from_torch(g.clone()))
    assert_close(x.grad, g * scale)
    m = (nn.Dropout1d if dims == 1 else nn.Dropout2d)(0.4)
    assert repr(m) == repr((torch.nn.Dropout1d if dims == 1 else torch.nn.Dropout2d)(0.4))
    m.eval()
    assert m(x) is x
    if dims == 1:  # (C, L): one decision per channel
        unbatched = fn(tgrad.ones(*shape[1:]), 0.5).torch().reshape(16, -1)
        assert torch.equal(unbatched, unbatched[:, :1].expand_as(unbatched))
    assert float(fn(tgrad.ones(*shape), 1.0).abs().sum()) == 0.0


def test_channel_dropout_errors_and_warnings():
    with raises(RuntimeError, "dropout1d: Expected 2D or 3D input, but received a 1D input. Note that dropout1d exists "
                              "to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                              "dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."):
        F.dropout1d(tgrad.ones(5), 0.5)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout2d(tgrad.ones(2, 3, 4, 4), 1.5)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        F.dropout2d(tgrad.ones(2, 3, 5), 0.5)
    assert any("Received a 3D input to dropout2d" in str(w.message) for w in seen)


def test_pool_module_reprs_and_errors():
    for make in (lambda m: m.MaxPool1d(3), lambda m: m.AvgPool1d(3, 2), lambda m: m.AdaptiveAvgPool2d((2, None)),
                 lambda m: m.AdaptiveMaxPool2d(3), lambda m: m.AdaptiveAvgPool1d(2), lambda m: m.AdaptiveMaxPool1d(4)):
        assert repr(make(nn)) == repr(make(torch.nn))
    with raises(RuntimeError, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5, 3]"):
        F.adaptive_avg_pool2d(tgrad.ones(5, 3), 2)
    with raises(RuntimeError, "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                              "but input has sizes [2, 3, 0, 4] with dimension 2 being empty"):
        F.adaptive_avg_pool2d(tgrad.ones(2, 3, 0, 4), 2)
    with raises(RuntimeError, "adaptive_avg_pool2d: output_size must be 2"):
        F.adaptive_avg_pool2d(tgrad.ones(2, 3, 4, 4), (2, 3, 4))
    with raises(RuntimeError, "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while "
                              "checking arguments for adaptive_avg_pool1d)"):
        F.adaptive_avg_pool1d(tgrad.ones(5), 2)
    with raises(RuntimeError, "max_pool1d() Invalid computed output size: 0"):
        F.max_pool1d(tgrad.ones(2, 3, 5), 7)
    with raises(RuntimeError, "max_pool1d() padding should be at most half of kernel size, but got padding=2 and "
                              "kernel_size=2"):
        F.max_pool1d(tgrad.ones(2, 3, 5), 2, padding=2)
    with raises(RuntimeError, "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 "
                              "but got size 2"):
        F.max_pool1d(tgrad.ones(2, 3, 5), (2, 2))


def test_interpolate_backward_finds_every_reader_over_many_sizes_and_scales():
    # the backward gathers over a window of candidate outputs per input: sizes and scale factors
    # drawn at random (fixed seed), every mode, gradients against torch
    rng = torch.Generator().manual_seed(7)
    for trial in range(24):
        L = int(torch.randint(1, 10, (1,), generator=rng))
        mode, align = [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True)][trial % 4]
        if trial % 3:
            kw = dict(scale_factor=float(torch.empty(1).uniform_(0.3, 4.0, generator=rng)))
            if int(L * kw["scale_factor"]) < 1:
                continue
        else:
            kw = dict(size=int(torch.randint(1, 24, (1,), generator=rng)))
        compare(F.interpolate, TF.interpolate, [(1, 2, L)], seed=trial, mode=mode, align_corners=align, **kw)


# ----------------------------------------------------------------------------- channel_shuffle

@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((1, 4, 5), 2), ((2, 6, 2, 1, 3), 6), ((3, 5, 2), 1)])
def test_channel_shuffle_matches_torch(shape, groups):
    x = uniform64(shape, seed=5)
    run(lambda x: TF.channel_shuffle(x, groups), lambda x: F.channel_shuffle(x, groups), [x])
    assert torch.equal(nn.ChannelShuffle(groups)(tgrad.from_torch(x)).torch(), torch.nn.ChannelShuffle(groups)(x))
    assert repr(nn.ChannelShuffle(groups)) == repr(torch.nn.ChannelShuffle(groups))


def test_channel_shuffle_errors_are_torchs():
    with raises(RuntimeError, "Number of channels must be divisible by groups. Got 3 channels and 2 groups."):
        F.channel_shuffle(tgrad.ones(2, 3, 4), 2)
    with raises(RuntimeError, "Number of groups to divide channels in must be positive. Value of groups:0"):
        F.channel_shuffle(tgrad.ones(2, 3, 4), 0)
    with raises(RuntimeError, "channel_shuffle expects input with > 2 dims, but got input with sizes [2, 3]"):
        F.channel_shuffle(tgrad.ones(2, 3), 3)
