"""Python numbers as operands of tensor ops: PyTorch's result dtype, and the 0-d tensor a number
becomes. An op that is not recorded reads a shared constant; a recorded one saves a tensor of its
own, so writing the saved operand (``grad_fn._saved_other``) changes no later result."""
import pytest
import torch

import tgrad

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"]
NUMBERS = [True, 3, 2.5]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("number", NUMBERS, ids=["bool", "int", "float"])
@pytest.mark.parametrize("zero_d", [False, True])
def test_result_dtype_of_a_tensor_and_a_number_is_pytorchs(dtype, number, zero_d):
    shape = () if zero_d else (3,)
    t = torch.ones(shape, dtype=getattr(torch, dtype))
    x = tgrad.ones(shape, dtype=getattr(tgrad, dtype))
    want = torch.result_type(t, number)
    assert tgrad.result_type(x, number).torch is want
    if dtype != "bool" or isinstance(number, bool) is False:
        got, ref = x * number, t * number
        assert got.dtype.torch is ref.dtype and torch.equal(torch.from_numpy(got.numpy()), ref)


def test_two_tensor_dtypes_and_a_number_promote_as_pytorch():
    a, b = tgrad.ones(3, dtype=tgrad.int32), tgrad.ones((), dtype=tgrad.float16)
    ta, tb = torch.ones(3, dtype=torch.int32), torch.ones((), dtype=torch.float16)
    for n in NUMBERS:
        assert tgrad.result_type(a + b, n).torch is torch.result_type(ta + tb, n)
    assert (a + b).dtype.torch is (ta + tb).dtype


def test_a_saved_number_operand_written_in_place_changes_no_later_result():
    x = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.5
    saved = y.grad_fn._saved_other
    assert saved.item() == 2.5
    saved.add_(100.0)  # the recorded call's own tensor
    for _ in range(4):  # unrecorded calls of the same number (the shared constant) and recorded ones
        assert torch.equal(torch.from_numpy((x.detach() * 2.5).numpy()), torch.tensor([2.5, 5.0, 7.5]))
        assert torch.equal(torch.from_numpy((x * 2.5).detach().numpy()), torch.tensor([2.5, 5.0, 7.5]))


@pytest.mark.parametrize("number", [0.0, -0.0, float("nan"), float("inf")])
def test_numbers_that_compare_oddly_keep_their_values(number):
    t = torch.tensor([1.0, -1.0, 0.0])
    x = tgrad.tensor([1.0, -1.0, 0.0])
    for _ in range(3):
        for op in (lambda a, n: a * n, lambda a, n: a + n, lambda a, n: a / n):
            got, want = op(x, number), op(t, number)
            assert torch.equal(torch.from_numpy(got.numpy()).isnan(), want.isnan())
            assert torch.equal(torch.from_numpy(got.numpy()).nan_to_num(), want.nan_to_num())
            assert torch.equal(torch.from_numpy(got.numpy()).signbit(), want.signbit())
