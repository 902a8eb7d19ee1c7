"""The misuse catalog: every way of calling the API wrongly that we know of, one row each.

Each row says what the misuse is, the exception it raises and a pattern the message must contain:
the pattern names the problem *and* the offending values (the index, the sizes, the dtypes), so a
user can fix the call from the message alone. Where PyTorch raises for the same call, the row is
also run against torch and must raise the same exception type there (``T`` below is the module
under test: ``tgrad`` or ``torch``); rows marked tgrad-only are tgrad's own checks (checkpoints,
interpreter limits) or places where tgrad is deliberately stricter.

Every row runs under ``kernel_guard.memory_checked()``, so no kernel launched on the way to the
error may touch memory outside the tensors it was given. Rows about out-of-range *indices* also
assert that no kernel that trusts its indices ran: only the checking kernels (the bounds check,
and the embedding and cross-entropy forwards, which check in the same launch and mask every lane
whose index is out of range -- the ``1 << 40`` rows prove that mask, as an unmasked read there
would leave every tensor by terabytes).
"""
from __future__ import annotations

import io
import re
import warnings

import pytest
import torch

import tgrad
import tgrad.nn as tnn
import tgrad.optim  # noqa: F401  (rows reach it as T.optim, like torch.optim)
import tgrad.utils.data  # noqa: F401
from support.checkpoints import saved_bytes as _save_bytes
from support.kernel_guard import memory_checked
from tgrad.kernels.runtime.launch import count_launches

# kernels that address memory with index values they are given and do not check themselves
TRUSTS_INDICES = {"index_kernel", "embedding_bwd_kernel", "one_hot_kernel", "cross_entropy_bwd_kernel",
                  "max_pool_bwd_kernel"}
HUGE = 1 << 40


def ones(T, *shape, **kw):
    return T.ones(*shape, **kw)


def leaf(T, *shape):
    return T.ones(*shape, requires_grad=True)


def idx(T, values):
    return T.tensor(values, dtype=T.int64)


# ------------------------------------------------------------------------------ helpers for rows
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


def _mlp(T):
    return T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 2))


def _load_mismatched(T):
    src = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 5))
    state = dict(src.state_dict())
    state["9.extra"] = state["0.bias"]
    del state["0.bias"]
    _mlp(T).load_state_dict(state)


def _load_bytes(raw):
    return tgrad.load(io.BytesIO(raw))


def _truncated():
    raw = _save_bytes({"w": tgrad.ones(10)})
    _load_bytes(raw[:-8])


def _not_a_checkpoint():
    _load_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")


def _optim_groups_mismatch(T):
    a, b = leaf(T, 2), leaf(T, 2)
    saved = T.optim.SGD([a, b], lr=0.1).state_dict()
    T.optim.SGD([a], lr=0.1).load_state_dict(saved)


def _collate_unequal(T):
    class Ragged(T.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return T.ones(2 + i)
    next(iter(T.utils.data.DataLoader(Ragged(), batch_size=2)))


def _conv(T, x_shape, **kw):
    layer = T.nn.Conv2d(3, 4, kernel_size=kw.pop("k", 3), **kw)
    return layer(T.ones(*x_shape))


# ------------------------------------------------------------------------------ the table
# (id, call(T), exception, pattern the message contains, runs against torch too)
E, I, T_, V, A = RuntimeError, IndexError, TypeError, ValueError, AssertionError
CASES = [
    # -- tensors: shapes
    ("broadcast", lambda T: ones(T, 2, 3) + ones(T, 2, 2), E,
     r"size of tensor a \(3\) must match the size of tensor b \(2\) at non-singleton dimension 1", True),
    ("inplace-cannot-grow", lambda T: ones(T, 3).add_(ones(T, 2, 3)), E,
     r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]", True),
    ("matmul-inner", lambda T: ones(T, 2, 3) @ ones(T, 4, 5), E, r"\(2x3 and 4x5\)", True),
    ("matmul-0d", lambda T: T.tensor(1.0) @ ones(T, 3), E, r"at least 1D, but they are 0D and 1D", True),
    ("mm-3d", lambda T: T.mm(ones(T, 2, 2, 2), ones(T, 2, 2)), E, r"self must be a matrix", True),
    ("bmm-2d", lambda T: T.bmm(ones(T, 2, 2), ones(T, 2, 2)), E, r"batch1 must be a 3D tensor", True),
    ("dot-2d", lambda T: T.dot(ones(T, 2, 2), ones(T, 2, 2)), E,
     r"1D tensors expected, but got 2D and 2D tensors", True),
    ("dot-length", lambda T: T.dot(ones(T, 3), ones(T, 4)), E,
     r"expected tensor \[3\] and src \[4\].*3 and 4 elements", True),
    ("view-size", lambda T: ones(T, 2, 3).view(4, 2), E, r"shape '\[4, 2\]' is invalid for input of size 6", True),
    ("view-float-size", lambda T: ones(T, 4).view(2.5, 2), T_, r"element of type float at pos 0", True),
    ("expand-float-size", lambda T: ones(T, 4).expand(2.5, 4), T_, r"element of type float at pos 0", True),
    ("view-two-inferred", lambda T: ones(T, 2, 3).reshape(-1, -1), E, r"only one dimension can be inferred", True),
    ("view-noncontiguous", lambda T: ones(T, 2, 3).t().view(6), E, r"view size is not compatible.*Use \.reshape", True),
    ("expand", lambda T: ones(T, 2, 3).expand(3, 3), E,
     r"expanded size of the tensor \(3\) must match the existing size \(2\) at non-singleton dimension 0", True),
    ("expand-fewer-dims", lambda T: ones(T, 2, 3).expand(3), E,
     r"the number of sizes provided \(1\) must be greater or equal to the number of dimensions in the tensor \(2\)",
     True),
    ("cat-sizes", lambda T: T.cat([ones(T, 2, 3), ones(T, 2, 4)]), E,
     r"Expected size 3 but got size 4 for tensor number 1", True),
    ("cat-ndim", lambda T: T.cat([ones(T, 2, 3), ones(T, 3)]), E, r"same number of dimensions: got 2 and 1", True),
    ("cat-empty", lambda T: T.cat([]), V, r"expected a non-empty list of Tensors", True),
    ("stack-sizes", lambda T: T.stack([ones(T, 2, 3), ones(T, 3, 2)]), E,
     r"got \[2, 3\] at entry 0 and \[3, 2\] at entry 1", True),
    ("permute-count", lambda T: ones(T, 2, 3).permute(0), E,
     r"number of dims don't match in permute|permute\(sparse_coo\): number of dimensions in the tensor input does "
     r"not match the length of the desired ordering of dimensions i.e. input.dim\(\) = 2 is not equal to "
     r"len\(dims\) = 1", True),
    ("permute-duplicate", lambda T: ones(T, 2, 3).permute(1, 1), E, r"duplicate dims are not allowed", True),
    ("transpose-dim", lambda T: ones(T, 2, 3).transpose(0, 2), I,
     r"expected to be in range of \[-2, 1\], but got 2", True),
    ("sum-dim", lambda T: ones(T, 2, 3).sum(-3), I, r"expected to be in range of \[-2, 1\], but got -3", True),
    ("softmax-dim", lambda T: ones(T, 2, 3).softmax(5), I, r"expected to be in range of \[-2, 1\], but got 5", True),
    ("unsqueeze-dim", lambda T: ones(T, 2, 3).unsqueeze(4), I,
     r"expected to be in range of \[-3, 2\], but got 4", True),
    ("squeeze-dim", lambda T: ones(T, 2, 3).squeeze(2), I, r"expected to be in range of \[-2, 1\], but got 2", True),
    ("narrow-range", lambda T: ones(T, 5).narrow(0, 3, 4), E,
     r"start \(3\) \+ length \(4\) exceeds dimension size \(5\)",
     True),
    ("flatten-order", lambda T: ones(T, 2, 3, 4).flatten(2, 1), E,
     r"flatten\(\) has invalid args: start_dim cannot come after end_dim", True),
    ("split-size", lambda T: ones(T, 4).split(0), E, r"split_size can only be 0 if dimension size is 0", True),
    ("copy-shape", lambda T: ones(T, 3).copy_(ones(T, 4)), E,
     r"size of tensor a \(3\) must match the size of tensor b \(4\)", True),
    ("where-shapes", lambda T: T.where(ones(T, 3) > 0, ones(T, 3), ones(T, 2)), E,
     r"size of tensor a \(3\) must match the size of tensor b \(2\)", True),
    ("masked-fill-shape", lambda T: ones(T, 3).masked_fill(T.tensor([True, False]), 0.0), E,
     r"size of tensor a \(2\) must match the size of tensor b \(3\)", True),
    ("negative-size", lambda T: T.zeros(3, -1), E, r"negative dimension -1", True),
    ("ragged-data", lambda T: T.tensor([[1, 2], [3]]), V, r"expected sequence of length 2 at dim 1 \(got 1\)", True),
    ("transpose-0d", lambda T: T.tensor(1.0).transpose(0, 1), I, r"expected to be in range of \[-1, 0\], but got 1",
     True),
    ("dim-type", lambda T: ones(T, 2, 3).softmax(1.0), T_, r"float", True),
    ("floor-bool", lambda T: T.tensor([True]).floor(), NotImplementedError, r"\"floor(_vml_cpu)?\" not implemented for "
                                                                            r"'Bool'", True),
    ("item-many", lambda T: ones(T, 2).item(), E, r"a Tensor with 2 elements cannot be converted to Scalar", True),
    ("bool-many", lambda T: bool(ones(T, 2)), E,
     r"Boolean value of Tensor with more than one value is ambiguous", True),
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
    # -- tensors: indices (out of range: checked before any kernel uses them)
    ("index-int", lambda T: ones(T, 3)[3], I, r"index 3 is out of bounds for dimension 0 with size 3", True, "index"),
    ("index-negative", lambda T: ones(T, 3)[-4], I,
     r"index -4 is out of bounds for dimension 0 with size 3", True, "index"),
    ("index-2d", lambda T: ones(T, 2, 3)[1, 5], I,
     r"index 5 is out of bounds for dimension 1 with size 3", True, "index"),
    ("index-too-many", lambda T: ones(T, 2)[0, 0], I, r"too many indices for tensor of dimension 1", True, "index"),
    ("index-tensor", lambda T: ones(T, 3)[idx(T, [0, 5])], I, r"index 5 is out of bounds for dimension 0 with size 3",
     True, "index"),
    ("index-tensor-negative", lambda T: ones(T, 3)[idx(T, [-4])], I,
     r"index -4 is out of bounds for dimension 0 with size 3", True, "index"),
    ("index-tensor-huge", lambda T: ones(T, 3)[idx(T, [HUGE])], I,
     rf"index {HUGE} is out of bounds for dimension 0 with size 3", True, "index"),
    ("index-tensor-dim1", lambda T: ones(T, 2, 3)[:, idx(T, [1, 3])], I,
     r"index 3 is out of bounds for dimension 1 with size 3", True, "index"),
    ("index-mask-shape", lambda T: ones(T, 3)[T.tensor([True, False])], I,
     r"shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor \[3\] at index 0", True,
     "index"),
    ("setitem-index", lambda T: ones(T, 3).__setitem__(idx(T, [7]), 1.0), I,
     r"index 7 is out of bounds for dimension 0 with size 3", True, "index"),
    ("setitem-int", lambda T: ones(T, 2, 3).__setitem__((0, 3), 1.0), I,
     r"index 3 is out of bounds for dimension 1 with size 3", True, "index"),
    ("select", lambda T: ones(T, 2, 3).select(1, 3), I,
     r"select\(\): index 3 out of range for tensor of size \[2, 3\] at dimension 1", True, "index"),
    ("index-select", lambda T: T.index_select(ones(T, 4, 2), 0, idx(T, [1, 4])), I,
     r"index out of range in self \(index 4 for dimension 0 with size 4\)", True, "index"),
    ("gather-range", lambda T: T.gather(ones(T, 2, 3), 1, idx(T, [[0, 3]] * 2)), E,
     r"index 3 is out of bounds for dimension 1 with size 3", True, "index"),
    ("gather-huge", lambda T: T.gather(ones(T, 2, 3), 1, idx(T, [[0], [HUGE]])), E,
     rf"index {HUGE} is out of bounds for dimension 1 with size 3", True, "index"),
    ("scatter-add-range", lambda T: T.scatter_add(ones(T, 3), 0, idx(T, [0, 3]), ones(T, 2)), E,
     r"index 3 is out of bounds for dimension 0 with size 3", True, "index"),
    ("scatter-add-negative", lambda T: T.scatter_add(ones(T, 3), 0, idx(T, [-1]), ones(T, 1)), E,
     r"index -1 is out of bounds for dimension 0 with size 3", True, "index"),
    ("embedding-range", lambda T: T.nn.functional.embedding(idx(T, [0, 4]), ones(T, 4, 3)), I,
     r"index out of range in self \(index 4 for an embedding of 4 rows\)", True, "index"),
    ("embedding-negative", lambda T: T.nn.functional.embedding(idx(T, [-1]), ones(T, 4, 3)), I,
     r"index out of range in self \(index -1 for an embedding of 4 rows\)", True, "index"),
    ("embedding-huge", lambda T: T.nn.Embedding(4, 3)(idx(T, [[1, HUGE]])), I,
     rf"index out of range in self \(index {HUGE} for an embedding of 4 rows\)", True, "index"),
    ("ce-target-range", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 3])), I,
     r"Target 3 is out of bounds", True, "index"),
    ("ce-target-negative", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [-2, 0])), I,
     r"Target -2 is out of bounds", True, "index"),
    ("ce-target-huge", lambda T: T.nn.CrossEntropyLoss()(ones(T, 2, 3, 2), idx(T, [[0, 1], [HUGE, 0]])), I,
     rf"Target {HUGE} is out of bounds", True, "index"),
    ("nll-target-range", lambda T: T.nn.functional.nll_loss(ones(T, 2, 3), idx(T, [5, 0])), I,
     r"Target 5 is out of bounds", True, "index"),
    ("one-hot-range", lambda T: T.nn.functional.one_hot(idx(T, [0, 3]), 3), E,
     r"Class values must be smaller than num_classes\. \(got 3 with num_classes=3\)", True, "index"),
    ("one-hot-negative", lambda T: T.nn.functional.one_hot(idx(T, [-1]), 3), E,
     r"Class values must be non-negative\. \(got -1\)", True, "index"),
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
    # -- nn
    ("linear-features", lambda T: T.nn.Linear(4, 2)(ones(T, 3, 5)), E, r"\(3x5 and 4x2\)", True),
    ("linear-0d", lambda T: T.nn.Linear(4, 2)(T.tensor(1.0)), E,
     r"\(1x1 and 4x2\)|both arguments to linear need to be at least 1D",
     True),
    ("conv-channels", lambda T: _conv(T, (1, 2, 8, 8)), E,
     r"expected input\[1, 2, 8, 8\] to have 3 channels, but got 2 channels instead", True),
    ("conv-2d-input", lambda T: _conv(T, (8, 8)), E,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[8, 8\]", True),
    ("conv-kernel-too-big", lambda T: _conv(T, (1, 3, 2, 2)), E,
     r"Kernel size can't be greater than actual input size|Calculated padded input size per channel: \(2 x 2\). "
     r"Kernel size: \(3 x 3\)", True),
    ("conv-stride-zero", lambda T: _conv(T, (1, 3, 8, 8), stride=0), E, r"non-positive stride is not supported", True),
    ("layer-norm-shape", lambda T: T.nn.LayerNorm(4)(ones(T, 2, 5)), E,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\s?\[2, 5\]", True),
    ("layer-norm-weight", lambda T: T.nn.functional.layer_norm(ones(T, 2, 4), (4,), ones(T, 3)), E,
     r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] and normalized_shape = "
     r"\[4\]", True),
    ("batch-norm-channels", lambda T: T.nn.BatchNorm1d(4)(ones(T, 3, 5)), E,
     r"running_mean should contain 5 elements not 4", True),
    ("max-pool-padding", lambda T: T.nn.MaxPool2d(2, padding=2)(ones(T, 1, 1, 4, 4)), E,
     r"pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1", True),
    ("ce-batch", lambda T: T.nn.functional.cross_entropy(ones(T, 3, 4), idx(T, [0, 1])), V,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)", True),
    ("ce-smoothing", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), label_smoothing=1.5), E,
     r"label_smoothing must be between 0.0 and 1.0. Got: 1.5", True),
    ("ce-weight-shape", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), weight=ones(T, 2)), E,
     r"weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: \[2\]",
     True),
    ("ce-reduction", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), reduction="avg"), V,
     r"avg is not a valid value for reduction", True),
    ("bce-range", lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.5, 1.5]), T.tensor([0.0, 1.0])), E,
     r"all elements of input should be between 0 and 1", True),
    ("bce-logits-size", lambda T: T.nn.functional.binary_cross_entropy_with_logits(ones(T, 3), ones(T, 2)), V,
     r"Target size \((torch|tgrad)\.Size\(\[2\]\)\) must be the same as input size \((torch|tgrad)\.Size\(\[3\]\)\)",
     True),
    ("dropout-p", lambda T: T.nn.functional.dropout(ones(T, 3), p=1.5), V,
     r"dropout probability has to be between 0 and 1, but got 1.5", True),
    ("embedding-padding", lambda T: T.nn.Embedding(4, 2, padding_idx=4), A,
     r"Padding_idx must be within num_embeddings \(got padding_idx=4 for num_embeddings=4\)",
     True),
    ("sequential-index", lambda T: _mlp(T)[5], I, r"index 5 is out of range", True),
    ("module-param-type", lambda T: T.nn.Linear(2, 2).register_parameter("w", ones(T, 2)), T_,
     r"cannot assign '(torch|tgrad)\.FloatTensor' object to parameter 'w' "
     r"\((torch|tgrad)\.nn\.Parameter or None required\)",
     True),
    # -- optim
    ("sgd-negative-lr", lambda T: T.optim.SGD([leaf(T, 2)], lr=-0.1), V, r"Invalid learning rate: -0.1", True),
    ("adam-negative-lr", lambda T: T.optim.Adam([leaf(T, 2)], lr=-1e-3), V, r"Invalid learning rate: -0.001", True),
    ("adam-beta", lambda T: T.optim.Adam([leaf(T, 2)], betas=(0.9, 1.0)), V,
     r"Invalid beta parameter at index 1: 1.0", True),
    ("adam-eps", lambda T: T.optim.Adam([leaf(T, 2)], eps=-1.0), V, r"Invalid epsilon value: -1.0", True),
    ("sgd-weight-decay", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, weight_decay=-1), V,
     r"Invalid weight_decay value: -1", True),
    ("sgd-momentum", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, momentum=-0.5), V,
     r"Invalid momentum value: -0.5", True),
    ("sgd-nesterov", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, nesterov=True), V,
     r"Nesterov momentum requires a momentum and zero dampening", True),
    ("optim-empty", lambda T: T.optim.SGD([], lr=0.1), V, r"optimizer got an empty parameter list", True),
    ("optim-tensor", lambda T: T.optim.SGD(leaf(T, 2), lr=0.1), T_,
     r"params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
     r"(torch|tgrad)\.FloatTensor", True),
    ("optim-non-leaf", lambda T: T.optim.SGD([leaf(T, 2) * 2], lr=0.1), V, r"can't optimize a non-leaf Tensor", True),
    ("optim-not-tensor", lambda T: T.optim.SGD([1.0], lr=0.1), T_,
     r"optimizer can only optimize Tensors, but one of the params is builtins.float", True),
    ("optim-set", lambda T: T.optim.SGD([{"params": {leaf(T, 2)}}], lr=0.1), T_,
     r"optimizer parameters need to be organized in ordered collections", True),
    ("optim-duplicate-groups",
     lambda T: (lambda p: T.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(leaf(T, 2)),
     V, r"some parameters appear in more than one parameter group", True),
    ("optim-load-groups", _optim_groups_mismatch, V,
     r"loaded state dict contains a parameter group that doesn't match the size of optimizer's group", True),
    ("scheduler-not-optimizer", lambda T: T.optim.lr_scheduler.StepLR(_mlp(T), step_size=1), T_,
     r"Sequential is not an Optimizer", True),
    # -- checkpoints
    ("load-state-dict", _load_mismatched, E,
     r'Missing key\(s\) in state_dict: "0\.bias"\..*Unexpected key\(s\) in state_dict: "9\.extra"\..*size mismatch for '
     r"2\.weight: copying a param with shape (torch|tgrad)\.Size\(\[5, 3\]\) from checkpoint, the shape in current "
     r"model is (torch|tgrad)\.Size\(\[2, 3\]\)", True),
    ("load-truncated", lambda T: _truncated(), E,
     r"the file is truncated: tensor 'w' ends at byte 40 of the data but the "
                                                  r"data has 32 bytes", False),
    ("load-garbage", lambda T: _not_a_checkpoint(), E, r"not a valid tgrad/safetensors checkpoint \(the header is not "
                                                       r"valid JSON", False),
    ("load-missing-file", lambda T: T.load("/nonexistent/dir/ckpt.safetensors"), FileNotFoundError,
     r"No such file or directory: '/nonexistent/dir/ckpt.safetensors'", False),
    ("save-object", lambda T: tgrad.save({"model": tnn.Linear(2, 2)}, io.BytesIO()), T_,
     r"not Linear objects", False),
    ("save-key-type", lambda T: tgrad.save({frozenset([1]): tgrad.ones(1)}, io.BytesIO()), T_,
     r"dict keys must be str, int, float, bool, None or tuples of them, got frozenset", False),
    # -- data loading
    ("loader-batch-size", lambda T: T.utils.data.DataLoader([1, 2], batch_size=0), V,
     r"batch_size should be a positive integer value, but got batch_size=0", True),
    ("dataset-sizes", lambda T: T.utils.data.TensorDataset(ones(T, 3, 2), ones(T, 4)), A,
     r"Size mismatch between tensors \(first dims \[3, 4\]\)", True),
    ("random-split", lambda T: T.utils.data.random_split(range(10), [3, 3]), V,
     r"Sum of input lengths does not equal the length of the input dataset! \(lengths \[3, 3\] sum to 6, the dataset "
     r"has 10 samples\)", True),
    ("dataset-index", lambda T: T.utils.data.TensorDataset(ones(T, 3, 2))[3], I,
     r"index 3 is out of bounds for dimension 0 with size 3", True, "index"),
    ("collate-ragged", _collate_unequal, E, r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and "
                                            r"\[3\] at entry 1", True),
    ("loader-drop-last-none", lambda T: T.utils.data.DataLoader([1, 2], batch_size=None, drop_last=True), V,
     r"batch_size=None option disables auto-batching and is mutually exclusive with drop_last", True),
]


HAS_CUDA = torch.cuda.is_available()
SKIP = {"cuda": pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device"),
        "no-cuda": pytest.mark.skipif(HAS_CUDA, reason="only without a CUDA device")}


def _row(case):
    cid, call, exc, pattern, torch_too, *kind = case
    kind = kind[0] if kind else None
    return pytest.param(call, exc, pattern, torch_too, kind, id=cid, marks=[SKIP[kind]] if kind in SKIP else [])


def test_the_catalog_is_large_and_unique():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids)
    runnable_everywhere = [c for c in CASES if len(c) == 5 or c[5] not in SKIP]
    assert len(runnable_everywhere) >= 80


@pytest.mark.parametrize("call, exc, pattern, torch_too, kind", [_row(c) for c in CASES])
def test_misuse(call, exc, pattern, torch_too, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if torch_too:  # the row describes a real misuse: PyTorch refuses it the same way
            with pytest.raises(exc):
                call(torch)
        with memory_checked() as violations, count_launches() as launches:
            with pytest.raises(exc) as err:
                call(tgrad)
    message = str(err.value)
    assert re.search(pattern, message, re.S), f"message {message!r} does not match {pattern!r}"
    assert not violations
    if kind == "index":
        used = TRUSTS_INDICES & set(launches)
        assert not used, f"out-of-range indices reached {sorted(used)}"


# ------------------------------------------------------------------------------ optimizer edge cases that do not raise

def test_duplicate_parameters_in_one_group_warn_as_in_pytorch():
    for T in (torch, tgrad):
        p = leaf(T, 2)
        with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
            T.optim.SGD([p, p], lr=0.1)


def test_parameters_that_do_not_require_grad_are_left_alone():
    """Frozen parameters are a normal thing to hand an optimizer (``model.parameters()`` after
    freezing a layer): PyTorch accepts them and never updates them, and so does tgrad."""
    frozen, live = tgrad.ones(3), leaf(tgrad, 3)
    opt = tgrad.optim.SGD([frozen, live], lr=0.5)
    (live * 2).sum().backward()
    opt.step()
    assert frozen.tolist() == [1.0, 1.0, 1.0] and live.tolist() == [0.0, 0.0, 0.0]


def test_float_ops_promote_bool_and_integer_inputs_as_pytorch():
    """Not misuse, but once a kernel error: bool operands reached float formulas unconverted."""
    for op in ("exp", "sigmoid", "sqrt", "sin", "log", "tanh"):
        for make in (lambda T: T.tensor([True, False]), lambda T: T.tensor([2, 0])):
            got, want = getattr(make(tgrad), op)(), getattr(make(torch), op)()
            assert got.dtype is tgrad.float32
            torch.testing.assert_close(got.torch(), want)
    assert tgrad.arange(-2, 3).floor().tolist() == [-2, -1, 0, 1, 2]
