"""conv1d, conv_transpose1d/2d and the Conv1d/Conv2d/ConvTranspose1d/2d modules (padding modes,
output_size, PyTorch state dicts) against torch in float64, with second derivatives."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import assert_close, compare, compare_second_order, raises, uniform64
from tgrad.kernels.spatial.conv import conv2d_grad_input

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's, not ours

CONV1D = {  # name: (x, w, bias, kwargs)
    "odd": ((2, 3, 9), (4, 3, 3), (4,), {}),
    "stride_pad_dil_groups": ((2, 4, 11), (6, 2, 3), (6,), dict(stride=2, padding=2, dilation=2, groups=2)),
    "same_even": ((1, 3, 8), (2, 3, 4), None, dict(padding="same")),
    "valid": ((2, 2, 5), (3, 2, 2), (3,), dict(padding="valid")),
    "unbatched": ((3, 7), (2, 3, 2), (2,), dict(stride=3, padding=1)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", list(CONV1D))
def test_conv1d_matches_torch(case, noncontig):
    xs, ws, bs, kw = CONV1D[case]
    compare(F.conv1d, TF.conv1d, [xs, ws, bs], noncontig=noncontig, **kw)


def test_conv1d_float32(device):
    compare(F.conv1d, TF.conv1d, [(2, 3, 9), (4, 3, 3), (4,)], dtype=tgrad.float32, device=device, padding=1)


CONVT = {  # name: (dims, x, w, bias, kwargs)
    "2d_plain": (2, (2, 3, 4, 5), (3, 2, 3, 3), (2,), {}),
    "2d_all": (2, (2, 4, 5, 3), (4, 3, 3, 2), (6,), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                                       groups=2, dilation=(1, 2))),
    "2d_stride2_k4": (2, (1, 2, 3, 3), (2, 3, 4, 4), None, dict(stride=2, padding=1)),
    "2d_unbatched": (2, (3, 4, 4), (3, 2, 2, 3), (2,), dict(stride=2, output_padding=1)),
    "1d_all": (1, (2, 4, 5), (4, 3, 3), (6,), dict(stride=3, padding=1, output_padding=2, groups=2, dilation=1)),
    "1d_dilated": (1, (2, 2, 6), (2, 3, 2), (3,), dict(dilation=3, padding=2)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", list(CONVT))
def test_conv_transpose_matches_torch(case, noncontig):
    dims, xs, ws, bs, kw = CONVT[case]
    ours, theirs = (F.conv_transpose1d, TF.conv_transpose1d) if dims == 1 else (F.conv_transpose2d,
                                                                                 TF.conv_transpose2d)
    compare(ours, theirs, [xs, ws, bs], noncontig=noncontig, **kw)


def test_conv_transpose2d_float32(device):
    compare(F.conv_transpose2d, TF.conv_transpose2d, [(2, 3, 4, 5), (3, 2, 3, 3), (2,)], dtype=tgrad.float32,
            device=device, stride=2, padding=1, output_padding=1)


@pytest.mark.parametrize("which", ["conv1d", "conv_transpose2d", "conv_transpose1d"])
def test_second_derivatives_match_torch(which):
    if which == "conv1d":
        compare_second_order(lambda x, w, b: F.conv1d(x, w, b, padding=1).tanh(),
                             lambda x, w, b: TF.conv1d(x, w, b, padding=1).tanh(), [(1, 2, 5), (2, 2, 2), (2,)])
    elif which == "conv_transpose2d":
        compare_second_order(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2).tanh(),
                             lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2).tanh(),
                             [(1, 2, 2, 3), (2, 1, 2, 2), (1,)])
    else:
        compare_second_order(lambda x, w: F.conv_transpose1d(x, w, padding=1, groups=2) ** 2,
                             lambda x, w: TF.conv_transpose1d(x, w, padding=1, groups=2) ** 2, [(1, 2, 4), (2, 1, 3)])


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2])
def test_conv_modules_padding_modes_match_torch(dims, mode):
    cls, tcls = (nn.Conv1d, torch.nn.Conv1d) if dims == 1 else (nn.Conv2d, torch.nn.Conv2d)
    for padding in (2, "same"):
        kw = dict(kernel_size=3 if dims == 1 else (3, 2), padding=padding, padding_mode=mode,
                  dilation=1 + (padding == 2))
        ours, ref = cls(3, 4, **kw).double(), tcls(3, 4, **kw).double()
        ours.load_state_dict({k: tgrad.from_torch(v.detach().clone()) for k, v in ref.state_dict().items()})
        assert repr(ours) == repr(ref)
        shape = (2, 3, 7) if dims == 1 else (2, 3, 6, 5)
        compare(lambda x: ours(x), lambda x: ref(x), [shape])
        assert_close(ours.weight.grad, ref.weight.grad)
        assert_close(ours.bias.grad, ref.bias.grad)


@pytest.mark.parametrize("dims", [1, 2])
def test_conv_transpose_modules_state_dict_and_output_size(dims):
    cls, tcls = (nn.ConvTranspose1d, torch.nn.ConvTranspose1d) if dims == 1 else (nn.ConvTranspose2d,
                                                                                   torch.nn.ConvTranspose2d)
    kw = dict(kernel_size=3, stride=2, padding=1, groups=2, dilation=1)
    ours, ref = cls(4, 6, **kw).double(), tcls(4, 6, **kw).double()
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    ours.load_state_dict({k: tgrad.from_torch(v.detach().clone()) for k, v in ref.state_dict().items()})
    assert repr(ours) == repr(ref)
    shape = (2, 4, 5) if dims == 1 else (2, 4, 5, 4)
    size = (10,) if dims == 1 else (10, 8)
    compare(lambda x: ours(x, output_size=size), lambda x: ref(x, output_size=size), [shape])
    assert_close(ours.weight.grad, ref.weight.grad)
    back = {k: v.torch() for k, v in ours.state_dict().items()}  # and the other way round
    ref2 = tcls(4, 6, **kw).double()
    ref2.load_state_dict(back)
    assert torch.equal(ref2.weight, ref.weight)
    with raises(ValueError, f"requested an output size of {[20] * dims}, but valid sizes range from {[9] * dims} to "
                            f"{[10] * dims} (for an input of tgrad.Size({[5] * dims}))"):
        ours(tgrad.ones((2, 4) + (5,) * dims, dtype=tgrad.float64), output_size=(20,) * dims)


def test_default_init_bounds_follow_pytorch_fan_in():
    # ConvTranspose2d's fan_in is weight.size(1) * receptive field = (out / groups) * k * k
    m = nn.ConvTranspose2d(8, 4, 3, groups=2)
    bound = 1 / (2 * 3 * 3) ** 0.5
    assert tuple(m.weight.shape) == (8, 2, 3, 3)
    assert float(m.bias.abs().max()) <= bound and float(m.weight.abs().max()) <= bound


def test_errors_match_torch():
    x1, w1 = tgrad.ones(2, 3, 5), tgrad.ones(2, 3, 2)
    with raises(RuntimeError, "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [5]"):
        F.conv1d(tgrad.ones(5), w1)
    with raises(RuntimeError, "expected stride to be a single integer value or a list of 1 values to match the "
                              "convolution dimensions, but got stride=[1, 2]"):
        F.conv1d(x1, w1, stride=(1, 2))
    with raises(RuntimeError, "Expected 4-dimensional input for 4-dimensional weight [2, 3, 2, 2], but got "
                              "3-dimensional input of size [2, 3, 5] instead"):
        F.conv1d(x1, tgrad.ones(2, 3, 2, 2))
    with raises(RuntimeError, "Calculated padded input size per channel: (5). Kernel size: (7). Kernel size can't be "
                              "greater than actual input size"):
        F.conv1d(x1, tgrad.ones(2, 3, 7))
    x2, w2 = tgrad.ones(1, 3, 4, 4), tgrad.ones(3, 2, 3, 3)
    with raises(RuntimeError, "output padding must be smaller than either stride or dilation, but got "
                              "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
                              "dilation_height: 1 dilation_width: 1"):
        F.conv_transpose2d(x2, w2, output_padding=1)
    with raises(RuntimeError, "Given transposed=1, weight of size [4, 2, 3, 3], expected input[1, 3, 4, 4] to have 4 "
                              "channels, but got 3 channels instead"):
        F.conv_transpose2d(x2, tgrad.ones(4, 2, 3, 3))
    with raises(TypeError, "conv_transpose2d(): argument 'padding' must be tuple of ints, not str"):
        F.conv_transpose2d(x2, w2, padding="same")
    with raises(RuntimeError, "Given input size per channel: (1 x 1). Calculated output size per channel: (-3 x -3). "
                              "Output size is too small"):
        F.conv_transpose2d(tgrad.ones(1, 3, 1, 1), w2, padding=3)
    with raises(ValueError, 'Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect")
    with raises(ValueError, "padding_mode must be one of {'zeros', 'replicate', 'circular', 'reflect'}, but got "
                            "padding_mode='foo'"):
        nn.Conv1d(3, 2, 3, padding_mode="foo")
    with raises(ValueError, "padding='same' is not supported for strided convolutions"):
        nn.Conv1d(3, 2, 3, padding="same", stride=2)


def test_conv_transpose_is_the_adjoint_of_conv():
    # <conv(a, w), b> == <conv_transpose(b, w), a>: the relation the implementation rests on
    a = tgrad.from_torch(uniform64((2, 3, 7, 7), seed=1))
    b = tgrad.from_torch(uniform64((2, 4, 4, 4), seed=2))
    w = tgrad.from_torch(uniform64((4, 3, 3, 2), seed=3))
    lhs = (F.conv2d(a, w, stride=2, padding=1) * b).sum()
    rhs = (F.conv_transpose2d(b, w, stride=2, padding=1, output_padding=(0, 1)) * a).sum()
    assert abs(float(lhs) - float(rhs)) < 1e-10


@pytest.mark.parametrize("gemm", [False, True])
def test_both_input_gradient_algorithms_match_torch(gemm):
    # the CPU picks matmul + col2im for one group; a GPU runs the gather kernel: both against torch
    x = uniform64((2, 3, 4, 5), seed=1)
    w = uniform64((3, 2, 3, 2), seed=2)
    b = uniform64((2,), seed=3)
    kw = dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2))
    ref = TF.conv_transpose2d(x, w, b, **kw)
    got = conv2d_grad_input(x, w, tuple(ref.shape), kw["stride"], kw["padding"], kw["dilation"], 1, b, gemm=gemm)
    assert_close(got, ref)
    ref1 = TF.conv_transpose1d(x[:, :, 0], w[:, :, 0], b, stride=2, dilation=2)
    got1 = conv2d_grad_input(x[:, :, 0], w[:, :, 0], tuple(ref1.shape), (1, 2), (0, 0), (1, 2), 1, b, gemm=gemm)
    assert_close(got1, ref1)
