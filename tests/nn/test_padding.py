"""F.pad against torch.nn.functional.pad: every mode, 1-3 padded dims, negative amounts, strided
inputs, integer tensors, second derivatives and PyTorch's errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as F
from support.reference import compare, compare_second_order, raises

CASES = {  # name: (input shape, pad)
    "1d": ((2, 3, 7), (2, 3)),
    "1d_unbatched": ((3, 6), (0, 4)),
    "2d": ((2, 3, 5, 6), (1, 2, 3, 1)),
    "2d_unbatched": ((2, 5, 4), (3, 0, 2, 4)),
    "3d": ((1, 2, 4, 5, 3), (1, 2, 2, 1, 3, 2)),
    "negative": ((2, 2, 6, 7), (-1, 2, 3, -2)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", list(CASES))
def test_pad_matches_torch(case, mode, noncontig):
    shape, pad = CASES[case]
    k = len(pad) // 2
    # torch builds circular padding from slices (a CopySlices node); tgrad has its own kernel
    name = f"CircularPad{k}DBackward0" if mode == "circular" else None
    compare(lambda x: F.pad(x, pad, mode=mode), lambda x: TF.pad(x, pad, mode=mode), [shape],
            noncontig=noncontig, name=name)


def test_constant_value_many_dims_and_float32(device):
    compare(lambda x: F.pad(x, (1, 2, 0, 1, 2, 1, 1, 1), value=-1.5),
            lambda x: TF.pad(x, (1, 2, 0, 1, 2, 1, 1, 1), value=-1.5), [(2, 3, 2, 3)], name="ViewBackward0")
    compare(lambda x: F.pad(x, (2, 2, 1, 1), mode="reflect"), lambda x: TF.pad(x, (2, 2, 1, 1), mode="reflect"),
            [(2, 3, 4, 5)], dtype=tgrad.float32, device=device)


def test_integer_input_and_empty_pad():
    x = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    got = F.pad(tgrad.from_torch(x.clone()), (1, 2), value=2.7)
    assert torch.equal(got.torch(), TF.pad(x, (1, 2), value=2.7))
    for mode in ("reflect", "replicate", "circular"):
        got = F.pad(tgrad.from_torch(x.clone()), (1, 2), mode=mode)
        assert torch.equal(got.torch(), TF.pad(x, (1, 2), mode=mode))
    assert torch.equal(F.pad(tgrad.from_torch(x.clone()), ()).torch(), x)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_second_derivative_matches_torch(mode):
    compare_second_order(lambda x: F.pad(x, (2, 1, 1, 1), mode=mode) ** 3,
                         lambda x: TF.pad(x, (2, 1, 1, 1), mode=mode) ** 3, [(1, 2, 3, 3)])


def test_errors_match_torch():
    x = tgrad.ones(1, 3, 3)
    with raises(RuntimeError, "Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with raises(RuntimeError, "Padding length should be less than or equal to two times the input dimension but got "
                              "padding length 8 and input of dimension 3"):
        F.pad(x, (1, 1) * 4)
    with raises(RuntimeError, 'Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(x, (1, 1), mode="reflect", value=2)
    with raises(RuntimeError, "Argument #4: Padding size should be less than the corresponding input dimension, but "
                              "got: padding (3, 3) at dimension 2 of input [1, 3, 3]"):
        F.pad(x, (3, 3), mode="reflect")
    with raises(RuntimeError, "Padding value causes wrapping around more than once."):
        F.pad(x, (4, 3), mode="circular")
    with raises(NotImplementedError, "Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")
    with pytest.raises(NotImplementedError, match="^Padding size 2 is not supported for 1D input tensor."):
        F.pad(tgrad.ones(3), (1, 1), mode="reflect")
    with raises(RuntimeError, "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero "
                              "dimensions for input, but got: [2, 0]"):
        F.pad(tgrad.ones(2, 0), (1, 1), mode="replicate")
    with raises(TypeError, "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type float "
                           "at pos 0"):
        F.pad(x, [1.0, 1])
    with raises(RuntimeError, "narrow(): length must be non-negative."):
        F.pad(x, (-3, -3))
