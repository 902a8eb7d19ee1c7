"""Custom ``autograd.Function`` (forward/backward, ctx.save_for_backward and the saved tensors' checks,
mark_dirty / mark_non_differentiable / set_materialize_grads, once_differentiable, apply's errors).
A user's own Triton kernel inside one: test_user_triton_kernel.py.

Each Function is written once against a library (``tgrad`` or ``torch``) so the same code runs on
both and tgrad's graph, gradients and messages are compared with PyTorch's. Messages are PyTorch's
exact texts.
"""
import re

import pytest
import torch

import tgrad
from support.autograd_checks import FREED
from support.reference import assert_close, make_pair, node_signature, raises


def library_functions(lib):
    """PyTorch's documented example Functions, written against ``lib`` (tgrad or torch)."""
    seen = {}

    class MyMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            seen["forward_grad_mode"] = lib.is_grad_enabled()
            seen["forward_needs"] = ctx.needs_input_grad
            ctx.save_for_backward(x, y)
            ctx.k = k  # a non-tensor is kept on ctx
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            seen["backward_grad_mode"] = lib.is_grad_enabled()
            seen["backward_needs"] = ctx.needs_input_grad
            seen["incoming_requires_grad"] = g.requires_grad
            x, y = ctx.saved_tensors
            return g * y * ctx.k, g * x * ctx.k, None

    class Cube(lib.autograd.Function):  # backward made of differentiable ops: twice differentiable
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class DoubleInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class SortLike(lib.autograd.Function):  # (values, indices), the indices not differentiable
        @staticmethod
        def forward(ctx, x):
            idx = lib.argmax(x, dim=0, keepdim=True)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g_values, g_idx):
            seen["g_idx"] = g_idx
            return g_values * 2

    def two_outputs(materialize):
        class TwoOut(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                if not materialize:
                    ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen["g2"] = g2
                return g1 * 2 if g2 is None else g1 * 2 + g2 * 3
        return TwoOut

    return dict(MyMul=MyMul, Cube=Cube, Identity=Identity, DoubleInPlace=DoubleInPlace, SortLike=SortLike,
                TwoOut=two_outputs(True), TwoOutLazy=two_outputs(False), seen=seen)


T, R = library_functions(tgrad), library_functions(torch)


# ---------------------------------------------------------------------------------------- 31
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
def test_I31_apply_matches_torch_values_and_gradients(dtype):
    x, xr = make_pair((3, 5), dtype, seed=1)
    y, yr = make_pair((3, 5), dtype, seed=2, requires_grad=False)
    o, orr = T["MyMul"].apply(x, y, 1.5), R["MyMul"].apply(xr, yr, 1.5)
    assert_close(o, orr, dtype)
    g, gr = make_pair((3, 5), dtype, seed=3, requires_grad=False)
    o.backward(g)
    orr.backward(gr)
    assert x.grad.dtype is dtype
    assert_close(x.grad, xr.grad, dtype)
    assert y.grad is None


def test_I31_node_name_repr_and_next_functions():
    x = tgrad.ones(2, requires_grad=True)
    y = tgrad.ones(2) * 3
    o = T["MyMul"].apply(x, y, 2.0)
    assert type(o.grad_fn).__name__ == o.grad_fn.name() == "MyMulBackward"
    assert repr(o) == "tensor([6., 6.], grad_fn=<MyMulBackward>)"
    assert re.fullmatch(r"<MyMulBackward object at 0x[0-9a-f]+>", repr(o.grad_fn))
    # one entry per *tensor* argument, (None, 0) for a tensor that needs no grad: what PyTorch shows
    xr, yr = torch.ones(2, requires_grad=True), torch.ones(2) * 3
    assert node_signature(o) == node_signature(R["MyMul"].apply(xr, yr, 2.0)) == (
        "MyMulBackward", (("AccumulateGrad", 0), (None, 0)))
    assert o.grad_fn.next_functions[0][0].variable is x
    # a non-leaf input points at its producer
    z = T["MyMul"].apply(x * 2, y, 2.0)
    assert node_signature(z) == ("MyMulBackward", (("MulBackward0", 0), (None, 0)))


def test_I31_non_tensor_between_tensors_is_not_an_edge():
    def build(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, k, b):
                return a * b * k

            @staticmethod
            def backward(ctx, g):
                return g, None, g
        return F
    a, b = tgrad.ones(2, requires_grad=True), tgrad.ones(2, requires_grad=True)
    ar, br = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert node_signature(build(tgrad).apply(a, 2.0, b)) == node_signature(build(torch).apply(ar, 2.0, br)) == (
        "FBackward", (("AccumulateGrad", 0), ("AccumulateGrad", 0)))


def test_I31_grad_modes_inside_forward_and_backward():
    x, y = tgrad.ones(2, requires_grad=True), tgrad.ones(2)
    o = T["MyMul"].apply(x, y, 2.0)
    assert T["seen"]["forward_grad_mode"] is False
    o.sum().backward()
    assert T["seen"]["backward_grad_mode"] is False
    assert T["seen"]["incoming_requires_grad"] is False
    o = T["MyMul"].apply(x, y, 2.0)
    (gx,) = tgrad.autograd.grad(o.sum(), x, create_graph=True)
    assert T["seen"]["backward_grad_mode"] is True  # create_graph: backward is recorded
    assert T["seen"]["incoming_requires_grad"] is False
    assert gx.tolist() == [2.0, 2.0]


def test_I31_create_graph_through_a_custom_function():
    x = tgrad.tensor(3.0, requires_grad=True)
    (g,) = tgrad.autograd.grad(T["Cube"].apply(x), x, create_graph=True)
    assert g.item() == 27.0 and g.grad_fn is not None
    assert tgrad.autograd.grad(g, x)[0].item() == 18.0


def test_I31_keyword_arguments_count_as_forward_arguments():
    x, y = tgrad.ones(2, requires_grad=True), tgrad.ones(2)
    o = T["MyMul"].apply(x, y, k=2.0)
    assert T["seen"]["forward_needs"] == (True, False, False)
    o.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


# ---------------------------------------------------------------------------------------- 32
def test_I32_needs_input_grad_in_forward_and_backward():
    x, y = tgrad.ones(2, requires_grad=True), tgrad.ones(2)
    T["MyMul"].apply(x, y, 2.0).sum().backward()
    assert T["seen"]["forward_needs"] == T["seen"]["backward_needs"] == (True, False, False)
    with tgrad.no_grad():
        T["MyMul"].apply(x, y, 2.0)
    assert T["seen"]["forward_needs"] == (True, False, False)  # readable, as in PyTorch, without a graph


# ---------------------------------------------------------------------------------------- 33
def test_I33_save_for_backward_with_none_and_errors():
    got = {}

    class Keep(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            got["saved"] = ctx.saved_tensors
            return g * 2

    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    o = Keep.apply(a)
    saved = o.grad_fn.saved_tensors
    assert len(saved) == 2 and saved[0] is a and saved[1] is None
    o.sum().backward(retain_graph=True)
    assert got["saved"][0] is a and got["saved"][1] is None
    o.sum().backward()  # retained: a second pass works and accumulates
    assert a.grad.tolist() == [4.0, 4.0]
    with raises(RuntimeError, FREED):
        o.grad_fn.saved_tensors
    with raises(RuntimeError, FREED):
        o.sum().backward()

    class SaveInt(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, 3)
            return a

    with raises(TypeError, "save_for_backward can only save variables, but argument 1 is of type int"):
        SaveInt.apply(a)


def test_I33_saved_output_modified_in_place_is_caught():
    class Exp(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    o = Exp.apply(tgrad.ones(2, requires_grad=True))
    o.mul_(2)
    with raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [tgrad.FloatTensor [2]], which is output 0 of Exp, is at version 1; expected "
                "version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its "
                "gradient, with tgrad.autograd.set_detect_anomaly(True, check_nan=False)."):
        o.sum().backward()


# ---------------------------------------------------------------------------------------- 34
def returning(name, grads):
    """A Function of a tensor and any numbers, ``x * 2``, whose backward returns ``grads(g)``."""
    def forward(ctx, x, *rest):
        return x * 2
    return type(name, (tgrad.autograd.Function,), {"forward": staticmethod(forward),
                                                   "backward": staticmethod(lambda ctx, g: grads(g))})


@pytest.mark.parametrize("name, grads, args, message", [
    ("Bad", lambda g: g, (2.0,),
     "function BadBackward returned an incorrect number of gradients (expected 2, got 1)"),
    ("Extra", lambda g: (g, g), (),
     "function ExtraBackward returned an incorrect number of gradients (expected 1, got 2)"),
    ("Bad3", lambda g: tgrad.ones(3), (),
     "Function Bad3Backward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]"),
    ("Column", lambda g: g.reshape(2, 1), (),
     "Function ColumnBackward returned an invalid gradient at index 0 - got [2, 1] but expected shape compatible "
     "with [2]"),
    ("Scalar", lambda g: g.sum(), (),
     "Function ScalarBackward returned an invalid gradient at index 0 - got [] but expected shape compatible with [2]"),
    ("Bad4", lambda g: (g, None, g), (1.0, 2.0),
     "function Bad4Backward returned a gradient different than None at position 3, but the corresponding forward "
     "input was not a Variable"),
    ("Number", lambda g: 1.0, (), "expected Variable or None (got float)"),
])
def test_I34_bad_gradients(name, grads, args, message):
    x = tgrad.ones(2, requires_grad=True)
    with raises(RuntimeError, message):
        returning(name, grads).apply(x, *args).sum().backward()


def test_I34_message_positions_match_torch():
    """The two messages that number arguments, on PyTorch's documented example (position 2 of (x, k))."""
    class Bad4(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    expected = ("function Bad4Backward returned a gradient different than None at position 2, but the corresponding "
                "forward input was not a Variable")
    with raises(RuntimeError, expected):
        Bad4.apply(torch.ones(2, requires_grad=True), 2.0).sum().backward()
    with raises(RuntimeError, expected):
        returning("Bad4", lambda g: (g, g)).apply(tgrad.ones(2, requires_grad=True), 2.0).sum().backward()


def test_I34_accepted_gradients():
    x = tgrad.ones(2, requires_grad=True)
    returning("Trailing", lambda g: (g * 2, None, None)).apply(x).sum().backward()  # extra Nones are fine
    assert x.grad.tolist() == [2.0, 2.0]
    x.grad = None
    returning("Row", lambda g: g.reshape(1, 2) * 3).apply(x).sum().backward()  # broadcastable: summed back
    assert x.grad.shape == (2,) and x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    returning("Wide", lambda g: g.double()).apply(x).sum().backward()  # another dtype is cast to the input's
    assert x.grad.dtype is tgrad.float32 and x.grad.tolist() == [1.0, 1.0]
    y = tgrad.ones(2, requires_grad=True)
    returning("Nothing", lambda g: None).apply(y).sum().backward()  # no gradient for an input: .grad stays None
    assert y.grad is None


# ---------------------------------------------------------------------------------------- 35
def test_I35_mark_non_differentiable_output():
    x = tgrad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, idx = T["SortLike"].apply(x)
    assert idx.requires_grad is False and idx.grad_fn is None
    assert values.grad_fn.name() == "SortLikeBackward"
    values.sum().backward()
    g_idx = T["seen"]["g_idx"]
    assert g_idx.dtype is tgrad.int64 and g_idx.tolist() == [0]  # zeros of the index's dtype, as torch
    xr = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    R["SortLike"].apply(xr)[0].sum().backward()
    assert R["seen"]["g_idx"].dtype is torch.int64 and R["seen"]["g_idx"].tolist() == [0]
    assert x.grad.tolist() == xr.grad.tolist() == [2.0, 2.0, 2.0]
    with raises(RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"):
        T["SortLike"].apply(x)[1].sum().backward()


def test_I35_materialize_grads():
    x = tgrad.ones(3, requires_grad=True)
    a, _ = T["TwoOut"].apply(x)
    a.sum().backward()
    assert T["seen"]["g2"].tolist() == [0.0, 0.0, 0.0]  # the unused output's grad arrives as zeros
    a, _ = T["TwoOutLazy"].apply(x)
    a.sum().backward()
    assert T["seen"]["g2"] is None
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


# ---------------------------------------------------------------------------------------- 36
def test_I36_no_graph_under_no_grad_or_without_grad_inputs():
    x, y = tgrad.ones(2, requires_grad=True), tgrad.ones(2)
    with tgrad.no_grad():
        o = T["MyMul"].apply(x, y, 2.0)
    assert o.requires_grad is False and o.grad_fn is None and o.is_leaf
    o = T["MyMul"].apply(tgrad.ones(2), y, 2.0)
    assert o.requires_grad is False and o.grad_fn is None


def test_I36_input_returned_unchanged_is_a_new_tensor():
    x = tgrad.ones(2, requires_grad=True)
    o = T["Identity"].apply(x)
    assert o is not x and o.grad_fn.name() == "IdentityBackward"
    assert o.data_ptr() == x.data_ptr()
    o.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    with tgrad.no_grad():  # without a graph too, as PyTorch
        o = T["Identity"].apply(x)
    assert o is not x and o.requires_grad is False and o.grad_fn is None
    n = tgrad.ones(2)
    assert T["Identity"].apply(n) is not n


def test_I36_mark_dirty_returns_the_same_object_with_a_new_history():
    x, xr = make_pair((4,), tgrad.float32, seed=5)
    a, ar = x * 1, xr * 1
    o, orr = T["DoubleInPlace"].apply(a), R["DoubleInPlace"].apply(ar)
    assert o is a and a.grad_fn.name() == "DoubleInPlaceBackward" and a._version == 1
    assert_close(a, ar)
    o.sum().backward()
    orr.sum().backward()
    assert_close(x.grad, xr.grad)
    leaf = tgrad.ones(2, requires_grad=True)
    with raises(RuntimeError, "a leaf Variable that requires grad has been used in an in-place operation."):
        T["DoubleInPlace"].apply(leaf)


# ---------------------------------------------------------------------------------------- 37
def test_I37_missing_backward_and_legacy_call():
    class NoBackward(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = tgrad.ones(2, requires_grad=True)
    with raises(NotImplementedError, "You must implement either the backward or vjp method for your custom "
                "autograd.Function to use it with backward mode AD."):
        NoBackward.apply(x).sum().backward()
    with raises(RuntimeError, "Legacy autograd function with non-static forward method is deprecated. Please use "
                "new-style autograd function with static forward method. (Example: "
                "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"):
        T["MyMul"]()(x, x, 1.0)
