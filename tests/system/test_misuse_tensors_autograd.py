"""The misuse catalog, tensors and autograd: devices, dtypes, in place on leaves, backward, grad,
hooks, saved tensors and custom Functions.
One row per misuse; the runner and what a row asserts: support/misuse.py."""
import pytest
import torch

import tgrad
from support.misuse import E, I, PARAMS, T_, V, check_misuse, idx, leaf, ones, rows


def _backward_twice(T):
    x = leaf(T, 2)
    z = (x * x).sum()
    z.backward()
    z.backward()


def _saved_modified(T):
    x = leaf(T, 2)
    y = x * 2
    z = y * y
    y.add_(1)
    z.sum().backward()


def _hook_changes_size(T):
    x = leaf(T, 3)
    y = x * 2

    def doubled(g):
        return T.cat([g, g])
    y.register_hook(doubled)
    y.sum().backward()


def _custom_wrong_count(T):
    class BadCount(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g
    BadCount.apply(leaf(T, 2), leaf(T, 2)).sum().backward()


def _custom_wrong_shape(T):
    class BadShape(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return T.ones(3)
    BadShape.apply(leaf(T, 2)).sum().backward()


def _grad_unused(T):
    x, w = leaf(T, 2), leaf(T, 2)
    T.autograd.grad((x * 2).sum(), [x, w])


def _inference_then_inplace(T):
    with T.inference_mode():
        t = T.ones(2)
    t.add_(1)


# (id, call(T), exception, pattern the message contains, runs against torch too[, kind])
CASES = [
    # -- tensors: devices
    ("device-meta", lambda T: tgrad.ones(2, device="meta") + 1, E,
     r"tgrad runs on 'cpu' and 'cuda' devices, not 'meta'",
     False),
    ("device-bogus", lambda T: T.ones(2, device="bogus"), E,
     r"Expected one of cpu, cuda, .* device string: bogus", True),
    ("device-cuda-missing", lambda T: tgrad.ones(2, device="cuda"), AssertionError, r"not compiled with CUDA enabled",
     False,
     "no-cuda"),
    ("device-mixed-add", lambda T: ones(T, 2, device="cuda") + ones(T, 2), E,
     r"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu", True, "cuda"),
    ("device-mixed-matmul", lambda T: ones(T, 2, 2, device="cuda") @ ones(T, 2, 2), E,
     r"Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu", True, "cuda"),
    ("device-mixed-cat", lambda T: T.cat([ones(T, 2, device="cuda"), ones(T, 2)]), E,
     r"Expected all tensors to be on the same device", True, "cuda"),
    ("device-mixed-embedding", lambda T: T.nn.functional.embedding(idx(T, [0]), ones(T, 4, 2, device="cuda")), E,
     r"Expected all tensors to be on the same device", True, "cuda"),
    ("device-mixed-ce", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3, device="cuda"), idx(T, [0, 1])), E,
     r"Expected all tensors to be on the same device", True, "cuda"),
    # -- tensors: dtypes
    ("int-requires-grad", lambda T: T.tensor([1, 2], requires_grad=True), E,
     r"Only Tensors of floating point and complex dtype can require gradients", True),
    ("int-requires-grad_", lambda T: T.arange(3).requires_grad_(), E,
     r"only Tensors of floating point dtype can require gradients", True),
    ("mm-dtypes", lambda T: T.mm(ones(T, 2, 2), ones(T, 2, 2, dtype=T.float64)), E,
     r"expected m1 and m2 to have the same dtype, but got: float != double", True),
    ("linear-dtypes", lambda T: T.nn.functional.linear(ones(T, 2, 3), ones(T, 4, 3, dtype=T.float64)), E,
     r"expected m1 and m2 to have the same dtype, but got: float != double", True),
    ("masked-fill-float-mask", lambda T: ones(T, 3).masked_fill(ones(T, 3), 0.0), E,
     r"masked_fill_ only supports boolean masks, but got mask with dtype float", True),
    ("where-float-cond", lambda T: T.where(ones(T, 3), ones(T, 3), ones(T, 3)), E,
     r"where expected condition to be a boolean tensor, but got a tensor with dtype Float", True),
    ("float-index", lambda T: ones(T, 3)[ones(T, 2)], I,
     r"tensors used as indices must be long, int, byte or bool tensors", True),
    ("float-scalar-index", lambda T: ones(T, 3)[1.5], I, r"only integers, slices", True),
    ("gather-float-index", lambda T: T.gather(ones(T, 3), 0, T.tensor([0.0])), E,
     r"gather\(\): Expected dtype int(32/int)?64 for index", True),
    ("embedding-float-index", lambda T: T.nn.functional.embedding(ones(T, 2), ones(T, 4, 3)), E,
     r"'indices' to have one of the following scalar types: Long, Int; but got .*Float", True),
    ("ce-int32-target", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), T.tensor([0, 1], dtype=T.int32)), E,
     r"expected .*Long.* but got .*Int", True),
    ("one-hot-float", lambda T: T.nn.functional.one_hot(ones(T, 2)), E,
     r"one_hot is only applicable to index tensor", True),
    ("complex-dtype", lambda T: T.zeros(2, dtype=torch.complex64), T_, r"unsupported dtype: torch.complex64", False),
    ("bfloat16-on-cpu", lambda T: ones(T, 3, dtype=T.bfloat16) * 2, E, r"bfloat16.*CPU", False),
    ("int-neg-power", lambda T: T.arange(3) ** -1, E, r"Integers to negative integer powers are not allowed", True),
    ("grad-assign-dtype", lambda T: setattr(leaf(T, 2), "grad", ones(T, 2, dtype=T.float64)), E,
     r"gradient with dtype 'double' to a tensor with grad_dtype 'Float'", True),
    # -- tensors: in place on leaves
    ("leaf-add_", lambda T: leaf(T, 2).add_(1), E,
     r"a leaf Variable that requires grad is being used in an in-place", True),
    ("leaf-zero_", lambda T: leaf(T, 2).zero_(), E,
     r"a leaf Variable that requires grad is being used in an in-place", True),
    ("leaf-iadd", lambda T: leaf(T, 2).__iadd__(1), E, r"a leaf Variable that requires grad", True),
    ("leaf-setitem", lambda T: leaf(T, 2).__setitem__(0, 5.0), E,
     r"a view of a leaf Variable that requires grad is being used in an in-place", True),
    ("leaf-view-mul_", lambda T: leaf(T, 2, 2).view(4).mul_(2), E,
     r"a view of a leaf Variable that requires grad", True),
    ("leaf-relu_", lambda T: T.nn.functional.relu(leaf(T, 2), inplace=True), E, r"a leaf Variable that requires grad",
     True),
    ("inference-inplace", _inference_then_inplace, E,
     r"Inplace update to inference tensor outside InferenceMode", True),
    # -- autograd
    ("backward-twice", _backward_twice, E, r"Trying to backward through the graph a second time", True),
    ("backward-non-scalar", lambda T: (leaf(T, 3) * 2).backward(), E,
     r"grad can be implicitly created only for scalar outputs", True),
    ("backward-grad-shape", lambda T: (leaf(T, 3) * 2).backward(ones(T, 2)), E,
     r"grad_output\[0\] has a shape of (torch|tgrad)\.Size\(\[2\]\) and output\[0\] has a shape of "
     r"(torch|tgrad)\.Size\(\[3\]\)", True),
    ("backward-grad-float", lambda T: (leaf(T, 3) * 2).sum().backward(1.0), T_, r"float", True),
    ("backward-no-grad", lambda T: ones(T, 3).sum().backward(), E,
     r"element 0 of tensors does not require grad and does not have a grad_fn", True),
    ("backward-inputs-empty", lambda T: (leaf(T, 2) * 2).sum().backward(inputs=[]), E,
     r"`inputs` argument to `backward\(\)` cannot be empty", True),
    ("grad-unused", _grad_unused, E, r"Tensor at index 1 appears to not have been used in the graph", True),
    ("grad-no-requires", lambda T: T.autograd.grad((leaf(T, 2) * 2).sum(), [ones(T, 2)]), E,
     r"One of the differentiated Tensors does not require grad", True),
    ("grad-count", lambda T: T.autograd.grad([(leaf(T, 2) * 2).sum()] * 2, [leaf(T, 1)],
                                             grad_outputs=[T.tensor(1.0)]), E,
     r"got 2 tensors and 1 gradients", True),
    ("grad-materialize", lambda T: T.autograd.grad((leaf(T, 2) * 2).sum(), [leaf(T, 2)], allow_unused=False,
                                                   materialize_grads=True), V,
     r"Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False", True),
    ("saved-modified", _saved_modified, E,
     r"modified by an inplace operation: \[(torch|tgrad)\.FloatTensor \[2\]\], which is output 0 of "
     r"Add(Backward0)?, is at version 1; expected version 0", True),
    ("retain-grad-no-grad", lambda T: ones(T, 2).retain_grad(), E,
     r"can't retain_grad on Tensor that has requires_grad=False",
     True),
    ("hook-no-grad", lambda T: ones(T, 2).register_hook(lambda g: g), E,
     r"cannot register a hook on a tensor that doesn't require gradient", True),
    ("hook-size", _hook_changes_size, E, r"hook 'doubled' has changed the size of value", True),
    ("grad-assign-size", lambda T: setattr(leaf(T, 2), "grad", ones(T, 3)), E,
     r"assign a gradient of size '\[3\]' to a tensor of size '\[2\]'", True),
    ("grad-assign-type", lambda T: setattr(leaf(T, 2), "grad", 1.0), T_,
     r"assigned grad expected to be a Tensor or None but got grad of type float", True),
    ("nonleaf-requires-grad-false", lambda T: (leaf(T, 2) * 2).requires_grad_(False), E,
     r"you can only change requires_grad flags of leaf variables", True),
    ("detach_-view", lambda T: ones(T, 4).view(2, 2).detach_(), E, r"Can't detach views in-place", True),
    ("custom-count", _custom_wrong_count, E, r"function BadCountBackward returned an incorrect number of gradients "
                                             r"\(expected 2, got 1\)", True),
    ("custom-shape", _custom_wrong_shape, E, r"Function BadShapeBackward returned an invalid gradient at index 0 - got "
                                             r"\[3\] but expected shape compatible with \[2\]", True),
]


@pytest.mark.parametrize(PARAMS, rows(CASES))
def test_misuse(call, exc, pattern, torch_too, kind):
    check_misuse(call, exc, pattern, torch_too, kind)
