"""Bad input raises the right exception type with a message naming the problem, never a wrong result.

Where PyTorch's text names itself, tgrad's is the same with ``tgrad`` for ``torch``; elsewhere the
text is PyTorch's own where tgrad matches it exactly."""

import numpy as np
import pytest
import torch

import tgrad
from support.reference import raises

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


# ------------------------------------------------------------------------------ broadcasting

@pytest.mark.parametrize("op", [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / b,
    lambda a, b: tgrad.maximum(a, b), lambda a, b: a < b, lambda a, b: tgrad.where(a > 0, a, b),
], ids=["add", "mul", "sub", "div", "maximum", "lt", "where"])
def test_shapes_that_do_not_broadcast(op):
    a = tgrad.ones(2, 3, requires_grad=True)
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"):
        op(a, tgrad.ones(2, 2))


def test_broadcast_error_names_the_right_operands_and_dim():
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"):
        tgrad.ones(3) - tgrad.ones(2)
    with raises(RuntimeError, "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1"):
        tgrad.ones(2, 4, 1) * tgrad.ones(5, 3)
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"):
        tgrad.ones(2, 3) * tgrad.ones(3, 2)  # the last dim is checked first
    with raises(RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"):
        tgrad.ones(2, 2) - tgrad.ones(3)  # dims counted in the result's rank


def test_in_place_result_cannot_grow():
    with raises(RuntimeError, "output with shape [3] doesn't match the broadcast shape [2, 3]"):
        tgrad.ones(3).add_(tgrad.ones(2, 3))


# ------------------------------------------------------------------------------ matmul

@pytest.mark.parametrize("sa, sb, text", [
    ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4, 2), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
    ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
    ((2, 4, 5), (3,), "size mismatch, got input (8), mat (8x5), vec (3)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
                 "but got 3 and 4 elements respectively"),
    ((), (3,), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
def test_matmul_size_mismatch(sa, sb, text):
    with raises(RuntimeError, text):
        tgrad.ones(*sa) @ tgrad.ones(*sb)


def test_batched_matmul_inner_size_mismatch():
    with pytest.raises(RuntimeError, match=r"2x3 and 4x5|\[2, 3\] but got: \[2, 4\]"):  # both inner sizes
        tgrad.ones(2, 2, 3) @ tgrad.ones(2, 4, 5)
    with raises(RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"):
        tgrad.ones(2, 2, 3) @ tgrad.ones(3, 3, 5)


# ------------------------------------------------------------------------------ devices

@CUDA
@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a @ b.t(),
                                lambda a, b: tgrad.cat([a, b]), lambda a, b: tgrad.where(a > 0, a, b)],
                         ids=["add", "mul", "matmul", "cat", "where"])
def test_mixed_devices(op):
    with raises(RuntimeError, "Expected all tensors to be on the same device, but found at least two devices, "
                              "cuda:0 and cpu!"):
        op(tgrad.ones(2, 2, device="cuda"), tgrad.ones(2, 2))


# ------------------------------------------------------------------------------ requires_grad of integer and bool tensors

@pytest.mark.parametrize("dtype", [tgrad.int64, tgrad.int32, tgrad.bool, tgrad.uint8])
def test_integer_tensors_cannot_require_grad(dtype):
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        tgrad.tensor([1, 0], dtype=dtype, requires_grad=True)
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        tgrad.zeros(2, dtype=dtype, requires_grad=True)
    t = tgrad.tensor([1, 0], dtype=dtype)
    with raises(RuntimeError, "only Tensors of floating point dtype can require gradients"):
        t.requires_grad_()
    with raises(RuntimeError, "only Tensors of floating point and complex dtype can require gradients"):
        t.requires_grad = True
    assert not t.requires_grad


def test_float16_may_require_grad():
    assert tgrad.tensor([1.0], dtype=tgrad.float16, requires_grad=True).requires_grad


# ------------------------------------------------------------------------------ backward: non-scalar outputs, gradient shapes, outputs without grad, freed graphs

def test_non_scalar_backward_needs_a_gradient():
    x = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        tgrad.autograd.grad(x * 2, x)
    assert x.grad is None


@pytest.mark.parametrize("out_shape, grad_shape", [((3,), (2,)), ((3,), ()), ((), (1,)), ((1,), ()), ((2, 3), (3, 2))])
def test_gradient_of_the_wrong_shape(out_shape, grad_shape):
    x = tgrad.ones(*out_shape, requires_grad=True)
    shown = lambda s: f"tgrad.Size({list(s)})"  # noqa: E731
    with raises(RuntimeError, f"Mismatch in shape: grad_output[0] has a shape of {shown(grad_shape)} and output[0] "
                              f"has a shape of {shown(out_shape)}."):
        (x * 2).backward(tgrad.ones(*grad_shape))
    assert x.grad is None


def test_gradient_that_is_not_a_tensor():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError):
        (x * 2).sum().backward(1.0)


def test_backward_twice():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    z = (x * x).sum()
    z.backward()
    with raises(RuntimeError, "Trying to backward through the graph a second time (or directly access saved tensors "
                              "after they have already been freed). Saved intermediate values of the graph are freed "
                              "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
                              "backward through the graph a second time or if you need to access saved tensors after "
                              "calling backward."):
        z.backward()
    assert x.grad.tolist() == [2.0, 4.0]  # the failed call added nothing


def test_backward_of_a_tensor_without_grad():
    no_grad = "element 0 of tensors does not require grad and does not have a grad_fn"
    with raises(RuntimeError, no_grad):
        tgrad.ones(3).sum().backward()
    with raises(RuntimeError, no_grad):  # checked before the scalar check
        tgrad.ones(3).backward()
    with tgrad.no_grad():
        y = (tgrad.tensor([1.0, 2.0], requires_grad=True) * 2).sum()
    with raises(RuntimeError, no_grad):
        y.backward()


# ------------------------------------------------------------------------------ indexing

@pytest.mark.parametrize("shape, index, text", [
    ((3,), 3, "index 3 is out of bounds for dimension 0 with size 3"),
    ((3,), -4, "index -4 is out of bounds for dimension 0 with size 3"),
    ((2, 3), (1, 5), "index 5 is out of bounds for dimension 1 with size 3"),
    ((2,), (0, 0), "too many indices for tensor of dimension 1"),
])
def test_index_out_of_range(shape, index, text):
    with raises(IndexError, text):
        tgrad.ones(*shape)[index]


def test_select_out_of_range():
    with raises(IndexError, "select(): index 3 out of range for tensor of size [2, 3] at dimension 1"):
        tgrad.ones(2, 3).select(1, 3)


def test_tensor_index_out_of_range():
    with raises(IndexError, "index 5 is out of bounds for dimension 0 with size 3"):
        tgrad.ones(3)[tgrad.tensor([0, 5])]


def test_index_of_a_bad_type():
    with pytest.raises(IndexError, match="only integers, slices"):
        tgrad.ones(3)[1.5]


def test_dim_out_of_range():
    with raises(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"):
        tgrad.ones(2, 3).sum(2)
    with raises(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"):
        tgrad.ones(2, 3).transpose(0, 2)


# ------------------------------------------------------------------------------ dtypes

def test_bfloat16_ops_on_the_cpu_are_refused():
    b = tgrad.ones(3, dtype=tgrad.bfloat16)  # creating one is fine
    with pytest.raises(RuntimeError, match="bfloat16.*CPU"):
        b * 2
    with pytest.raises(RuntimeError, match="bfloat16.*CPU"):
        tgrad.ones(3) + b


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, "float32", 5, object])
@pytest.mark.parametrize("factory", ["tensor", "zeros", "ones", "full"])
def test_unsupported_dtype_is_a_type_error(factory, dtype):
    make = {"tensor": lambda: tgrad.tensor([1.0, 2.0], dtype=dtype), "zeros": lambda: tgrad.zeros(2, dtype=dtype),
            "ones": lambda: tgrad.ones(2, dtype=dtype), "full": lambda: tgrad.full((2,), 1.0, dtype=dtype)}[factory]
    with pytest.raises(TypeError, match="unsupported dtype"):
        make()


def test_unsupported_dtype_in_conversions():
    with pytest.raises(TypeError, match="unsupported dtype"):
        tgrad.ones(2).to(torch.complex64)
    with pytest.raises(TypeError, match="unsupported dtype"):
        tgrad.from_torch(torch.ones(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="unsupported dtype"):
        tgrad.tensor(np.array([1 + 2j]))
    with pytest.raises(TypeError, match="unsupported dtype"):
        tgrad.from_numpy(np.array([1.0], dtype=np.complex64))


def test_bad_data_for_tensor():
    with raises(TypeError, "new(): invalid data type 'str'"):
        tgrad.tensor("abc")
    with raises(ValueError, "expected sequence of length 2 at dim 1 (got 1)"):
        tgrad.tensor([[1, 2], [3]])


def test_bad_sizes_for_factories():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        tgrad.zeros(3, -1)
    with pytest.raises(TypeError, match="float"):
        tgrad.ones(2.5)


# ------------------------------------------------------------------------------ reshape, view, cat, stack

@pytest.mark.parametrize("shape, text", [
    ((4, 2), "shape '[4, 2]' is invalid for input of size 6"),
    ((-1, 4), "shape '[-1, 4]' is invalid for input of size 6"),
    ((-1, -1), "only one dimension can be inferred"),
    ((-2, 3), "invalid shape dimension -2 at index 0 of shape [-2, 3]"),
])
def test_reshape_to_an_invalid_size(shape, text):
    x = tgrad.ones(2, 3, requires_grad=True)
    with raises(RuntimeError, text):
        x.reshape(*shape)
    with raises(RuntimeError, text):
        x.view(shape)


def test_view_of_a_non_contiguous_tensor():
    with raises(RuntimeError, "view size is not compatible with input tensor's size and stride (at least one dimension "
                              "spans across two contiguous subspaces). Use .reshape(...) instead."):
        tgrad.ones(2, 3).t().view(6)


def test_expand_and_permute_errors():
    with raises(RuntimeError, "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
                              "dimension 0.  Target sizes: [3, 3].  Tensor sizes: [2, 3]"):
        tgrad.ones(2, 3).expand(3, 3)
    with raises(RuntimeError, "permute(): duplicate dims are not allowed."):
        tgrad.ones(2, 3).permute(0, 0)


def test_cat_of_mismatched_shapes():
    with raises(RuntimeError, "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for "
                              "tensor number 1 in the list."):
        tgrad.cat([tgrad.ones(2, 3), tgrad.ones(2, 4)], dim=0)
    with raises(RuntimeError, "Tensors must have same number of dimensions: got 2 and 1"):
        tgrad.cat([tgrad.ones(2, 3), tgrad.ones(3)])
    with raises(IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"):
        tgrad.cat([tgrad.ones(2, 3), tgrad.ones(2, 3)], dim=2)
    with raises(ValueError, "tgrad.cat(): expected a non-empty list of Tensors"):
        tgrad.cat([])
    with raises(RuntimeError, "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at "
                              "entry 1"):
        tgrad.stack([tgrad.ones(2, 3), tgrad.ones(3, 2)])


# ------------------------------------------------------------------------------ conversions

def test_conversion_errors():
    with raises(RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"):
        tgrad.ones(2).item()
    with raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
        bool(tgrad.ones(2))
    with raises(RuntimeError, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."):
        tgrad.ones(2, requires_grad=True).numpy()
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2, 3][tgrad.tensor(1.0)]
