"""detach / .data / requires_grad_ (the grad modes: test_modes.py), in-place ops on leaves and their
views, and the version counters that catch a saved tensor modified in place.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on the
prefix."""
import tgrad
from support.autograd_checks import (LEAF_INPLACE, VIEW_OF_LEAF_INPLACE, leaf, modified_inplace, raises,
                                     vals)


# ============================================================================ detach, .data (grad modes: tests/core/test_modes.py)

def test_detach_is_a_leaf_sharing_storage_and_version():
    x = leaf([1., 2.])
    y = x * 2
    d = y.detach()
    assert d.is_leaf and d.requires_grad is False and d.data_ptr() == y.data_ptr()
    d.zero_()
    assert y._version == 1 and vals(y) == [0., 0.]


def test_inplace_through_detach_is_caught_by_backward():
    x = leaf([1., 2.])
    y = x.exp()
    y.detach().zero_()
    with raises(RuntimeError, modified_inplace("[2]", "Exp", 1)):
        y.sum().backward()


def test_data_does_not_share_the_version_counter():
    x = leaf([1., 2.])
    y = x.exp()
    assert y.data.requires_grad is False
    y.data.zero_()
    assert y._version == 0
    y.sum().backward()  # silently wrong, as in PyTorch
    assert vals(x.grad) == [0., 0.]


def test_assigning_data_replaces_the_contents():
    x = leaf([1., 2.])
    x.data = tgrad.tensor([5., 6., 7.])
    assert repr(x) == "tensor([5., 6., 7.], requires_grad=True)" and x.is_leaf


def test_detach_in_place():
    y = leaf([1., 2.]) * 2
    assert y.detach_() is y
    assert (y.grad_fn, y.requires_grad, y.is_leaf) == (None, False, True)
    v = (leaf([1., 2.]) * 2).view(2)
    with raises(RuntimeError, prefix="Can't detach views in-place. Use detach() instead."):
        v.detach_()


def test_requires_grad_():
    t = tgrad.ones(2)
    assert t.requires_grad_() is t and t.requires_grad
    y = leaf([1., 2.]) * 2
    msg = ("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
           "subgraph that doesn't require differentiation use var_no_grad = var.detach().")
    with raises(RuntimeError, msg):
        y.requires_grad_(False)
    with raises(RuntimeError, msg):
        y.requires_grad = False
    assert y.requires_grad_(True) is y and y.grad_fn.name() == "MulBackward0"
    n = y.detach().requires_grad_()
    assert n.is_leaf and n.requires_grad


# ============================================================================ in-place and versions

def test_inplace_on_a_leaf_that_requires_grad():
    x = leaf([1., 2.])
    for op in (lambda: x.add_(1), lambda: x.zero_()):
        with raises(RuntimeError, LEAF_INPLACE):
            op()
    with raises(RuntimeError, LEAF_INPLACE):
        x += 1


def test_inplace_on_a_view_of_such_a_leaf():
    x = leaf([1., 2.])

    def setitem():
        x[0] = 5.
    for op in (setitem, lambda: x[0].mul_(2), lambda: x.view(2).mul_(2)):
        with raises(RuntimeError, VIEW_OF_LEAF_INPLACE):
            op()
    assert vals(x) == [1., 2.]


def test_inplace_on_a_non_leaf_rebases_its_history():
    x = leaf([1., 2.])
    y = (x * 2).add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    z = x * 2
    z[0] = 0
    assert repr(z) == "tensor([0., 4.], grad_fn=<CopySlices>)"
    z.sum().backward()
    assert vals(x.grad) == [0., 2.]


def test_version_counter():
    t = tgrad.zeros(2)
    seen = [t._version]
    t.add_(1)
    seen.append(t._version)
    t[0] = 3
    seen.append(t._version)
    t.mul_(2)
    seen.append(t._version)
    assert seen == [0, 1, 2, 3]


def test_modified_saved_tensor_is_caught_naming_its_shape_and_version():
    for shape, tag, writes in [((2,), "[2]", 1), ((2,), "[2]", 2), ((2, 2), "[2, 2]", 1)]:
        x = tgrad.ones(*shape, requires_grad=True)
        y = x * 2
        z = y * y
        for _ in range(writes):
            y.add_(1)
        with raises(RuntimeError, modified_inplace(tag, "Add", writes)):
            z.sum().backward()


def test_saved_output_names_its_producer():
    x = leaf([1., 2.])
    y = x.sigmoid()
    y.mul_(2)
    with raises(RuntimeError, modified_inplace("[2]", "Sigmoid", 1)):
        y.sum().backward()


def test_inplace_on_a_tensor_nothing_saved_is_fine():
    x = leaf([1., 2.])
    y = x * 2
    z = y + y
    w = y * 3  # MulBackward0 keeps only the constant
    y.add_(1)
    (z.sum() + w.sum()).backward()
    assert vals(x.grad) == [10., 10.]
