"""In-place ops on views, expanded and permuted tensors, and what backward saves (and reports when
changed), as in PyTorch: each program run on both libraries and compared (values, dtype, shape,
requires_grad, whether and what it raised: ``tests/support/differential.py``)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tgrad

from support.differential import grads, same

NAN, INF = float("nan"), float("inf")


def test_retain_grad_follows_an_in_place_op():
    def program(L, F):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * L.tensor([1.0, -2.0])).sum().backward()
        return y.grad, x.grad
    same(program)


@pytest.mark.parametrize("op", ["add_(1)", "mul_(2.0)", "exp_()", "clamp_(0)", "copy_(L.ones(3))", "sub_(L.ones(3))",
                                "fill_(1.0)", "zero_()", "masked_fill_(L.tensor([True, False, True]), 1.0)",
                                "__iadd__(1)"])
def test_in_place_writes_on_expanded_tensors(op):
    same(lambda L, F: eval("L.zeros(1, 3).expand(2, 3)." + op))


@pytest.mark.parametrize("case", range(4))
def test_in_place_on_a_view_of_a_permuted_base(case):
    """A pointwise result keeps its input's (permuted) layout, so the base of a view may be
    non-contiguous; an in-place op needing a gradient on such a view works as in PyTorch."""
    def program(L, F):
        x = L.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=L.float64, requires_grad=True)
        w = L.tensor([0.5, -2.0], dtype=L.float64, requires_grad=True)
        y = x.t() * 1.0
        if case == 0:
            y[1].mul_(w)
        elif case == 1:
            y[:, 0].mul_(3.0)
            y[1:].mul_(w)
        elif case == 2:
            v = y[1]
            y.mul_(2.0)
            y = v * 1.0
        else:
            y.diagonal().mul_(w)
        y.backward(L.arange(y.numel(), dtype=L.float64).reshape(y.shape) + 1)
        return y.detach(), x.grad, w.grad
    same(program)


def test_in_place_on_a_view_of_a_permuted_base_twice_differentiable():
    def program(L, F):
        x = L.tensor([[1., 2., 3.], [4., 5., 6.]], dtype=L.float64, requires_grad=True)
        y = x.t() * 1.0
        y[1].mul_(y[0])
        (g,) = L.autograd.grad(y.pow(2).sum(), x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        return g.detach(), gg
    same(program)


def test_a_view_sees_the_history_its_base_took_in_place():
    def program(L, F):
        a = L.tensor(0.25, requires_grad=True)
        b = L.tensor([0.5, 2.0])
        s, whole = b[1:], b.squeeze()
        b.fmod_(a)
        (s.sum() + whole.sum()).backward()
        return s.requires_grad, s.is_leaf, whole.requires_grad, a.grad
    same(program)


@pytest.mark.parametrize("view", ["expand0d", "expand_column", "expand_transposed"])
def test_an_expanded_view_used_after_an_in_place_op_on_its_base_sums_its_gradient(view):
    """The view's history, rebuilt after its base changed, scatters the gradient into the base: the
    elements of an expanded dim share one storage element, whose gradient is their sum."""
    def program(L, F):
        x = L.tensor([[1.0, 2.0], [3.0, -4.0]], dtype=L.float64, requires_grad=True)
        b = x * 1.0
        v = {"expand0d": lambda: b[0, 0].expand(3), "expand_column": lambda: b[:, :1].expand(2, 3),
             "expand_transposed": lambda: b.t().unsqueeze(0).expand(2, 2, 2)}[view]()
        b.mul_(3.0)
        y = v * 2.0
        y.backward(L.tensor(np.random.RandomState(0).uniform(-1, 1, size=tuple(y.shape))))
        return y.detach(), x.grad
    same(program)


def test_in_place_on_a_reshaped_copy_is_not_a_view():
    """reshape of what cannot be viewed is a copy (PyTorch's _unsafe_view, no base): an in-place op
    on it, here giving NaN, does not spill NaN into the gradient of the region it replaced."""
    def program(L, F):
        leaf = L.tensor([[[1.0, 2.25], [-0.75, 2.0]]], requires_grad=True)
        y = leaf.permute(0, 2, 1).flatten()
        y.clamp_(max=1.5)
        y.acos_()
        y.backward(L.ones(4))
        return y.detach(), leaf.grad, y._base is None
    same(program)


@pytest.mark.parametrize("expr", ["x.add_(x.t())", "x.add_(x)", "x[0].add_(x[1])", "x[:, 0].add_(x[:, 0])",
                                  "x.reshape(-1)[:2].add_(x.reshape(-1)[1:3])", "x.mul_(x.view(2, 2))", "x.copy_(x.t())",
                                  "x[0].copy_(x[0].flip(0))", "x[:1, :1].remainder_(x[:1, :1].t())"])
def test_in_place_reading_a_partly_overlapping_operand(expr):
    same(lambda L, F: (eval(expr, {"x": L.arange(4.0).reshape(2, 2)}), None)[1])
    def program(L, F):
        x = L.arange(4.0).reshape(2, 2)
        eval(expr, {"x": x})
        return x
    same(program)


@pytest.mark.parametrize("op", ["mul", "pow", "add", "div", "atan2", "hypot", "sub", "exp", "sin"])
@pytest.mark.parametrize("then", ["nothing", "add_"])
def test_what_in_place_ops_save_as_pytorch(op, then):
    """An in-place op keeps its input's old value for backward, but the written tensor saved again
    (as the other operand, or as the result) is reported when changed, as in PyTorch."""
    def program(L, F):
        x = L.tensor([0.25, 0.5], requires_grad=True)
        a = x * 1.0
        getattr(a, op + "_")(*(() if op in ("exp", "sin") else (a,)))
        if then == "add_":
            a.add_(1)
        a.sum().backward()
        return x.grad
    same(program)


@pytest.mark.parametrize("fn", ["elu", "leaky_relu", "selu", "celu"])
def test_in_place_activations_save_their_result(fn):
    def program(L, F):
        x = L.tensor([0.25, -0.5], requires_grad=True)
        a = x * 1.0
        getattr(F, fn)(a, inplace=True)
        a.add_(1)
        a.sum().backward()
        return x.grad
    same(program)


def test_pow_saves_its_result_when_the_exponent_needs_a_gradient():
    def program(L, F):
        x = L.tensor(0.25, requires_grad=True)
        e = L.tensor(0.5, requires_grad=True)
        y = x ** e
        y.mul_(2.0)
        y.backward()
        return x.grad, e.grad
    same(program)


def test_number_to_a_power_saves_its_result_and_a_lerp_weight_aliasing_the_target():
    def pow2(L, F):
        x = L.tensor(0.5, requires_grad=True)
        y = 2.0 ** x
        y.remainder_(0.3)
        y.backward()
        return x.grad
    same(pow2)

    def lerp_weight_is_target(L, F):
        e = L.tensor(2.0, dtype=L.float64, requires_grad=True)
        t = L.tensor(1.0, dtype=L.float64) * 1
        t.lerp_(e, t)
        t.backward()
        return e.grad
    same(lerp_weight_is_target)


def test_hypot_saves_its_result():
    def program(L, F):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        z = L.hypot(x, L.tensor([2.0, 1.0]))
        z.mul_(2)
        z.sum().backward()
        return x.grad
    same(program)


def test_xlogy_by_a_number_and_hypot_saves():
    def zero_upstream(L, F):  # PyTorch's x-gradient is xlogy(g, y): 0 where g is 0, even for y < 0
        x = L.tensor([0.25, 0.0], requires_grad=True)
        L.xlogy(x, L.tensor([-0.5, 2.0])).backward(L.tensor([0.0, 0.0]))
        return x.grad
    same(zero_upstream)
    for y in (NAN, 0.0, -1.0, 2.0, INF):
        same(grads(lambda L, F, x: L.xlogy(x, y), [0.0, 1.0, NAN]))
        same(grads(lambda L, F, x: L.xlogy(x, L.tensor(y, dtype=x.dtype)), [0.0, 1.0, NAN]))

    def hypot_other_changed(L, F):  # only b needs a gradient: PyTorch saves b and the result
        a, b = L.tensor([1.5, 2.0]), L.tensor([2.5, 0.7], requires_grad=True)
        z = L.hypot(a, b)
        a.abs_()
        z.sum().backward()
        return b.grad
    same(hypot_other_changed)
    same(grads(lambda L, F, x, y: L.hypot(x, y), [0.0, 3.0, INF, 1e-30], [0.0, 4.0, 1.0, 1e-30]))


@pytest.mark.parametrize("divisor_needs_grad", [False, True])
@pytest.mark.parametrize("changed", ["dividend", "divisor"])
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounded_division_saves_what_its_needed_gradients_read(divisor_needs_grad, changed, mode):
    """PyTorch's DivBackward2 saves the divisor for either gradient and the dividend only for the
    divisor's: changing the dividend in place breaks backward only when the divisor needs a gradient."""
    def program(L, F):
        a = L.tensor([1.5, 2.5], requires_grad=True)
        b = L.tensor([2.0, -3.0], requires_grad=divisor_needs_grad)
        x, d = a * 1.0, b * 1.0
        y = L.div(x, d, rounding_mode=mode)
        (x if changed == "dividend" else d).mul_(2.0)
        try:
            y.sum().backward()
        except RuntimeError as exc:
            return type(exc).__name__, y.grad_fn.name()
        return a.grad, b.grad, y.grad_fn.name()
    same(program)


def test_rounded_division_saves_its_operands():
    def program(L, F):
        a, b = L.tensor(7.0), L.tensor(2.0, requires_grad=True)
        y = L.div(a, b, rounding_mode="floor")
        a += 1
        y.backward()
        return b.grad
    same(program)


def test_only_what_a_needed_gradient_reads_is_saved():
    """fmod/remainder's input gradient is g alone, lerp's needs only the weight: changing the other
    operands in place afterwards does not break backward (PyTorch saves only what it reads)."""
    def fmod_divisor_changed(L, F):
        a, b = L.tensor([1.5, 2.0]), L.tensor([2.5, 0.7], requires_grad=True)
        y = L.fmod(b, a) + L.remainder(b, a)
        a.abs_()
        y.sum().backward()
        return b.grad
    same(fmod_divisor_changed)

    def lerp_end_changed(L, F):
        x, e = L.tensor([0.25, 0.5], requires_grad=True), L.tensor([1.0, 2.0])
        y = L.lerp(x, e, L.tensor([0.3, 0.6]))
        e.mul_(2)
        y.sum().backward()
        a = x * 1.0
        a.lerp_(a, 0.3)
        a.sum().backward()
        return x.grad
    same(lerp_end_changed)


def test_a_backward_that_raises_has_already_accumulated_the_leaves_it_reached_first():
    """PyTorch's engine runs a ready leaf's AccumulateGrad before other ready nodes: when a later
    node raises (its saved result was modified in place), that leaf's .grad is already set."""
    def program(L, F):
        x = L.tensor(0.25, requires_grad=True)
        w = L.tensor(0.5, requires_grad=True)
        earlier = w * 2.0  # w's AccumulateGrad made before the norm's node
        y = x.norm()
        y += w
        try:
            y.backward()
        except RuntimeError as exc:
            return type(exc).__name__, x.grad, w.grad, earlier.detach()
        return None, x.grad, w.grad, earlier.detach()
    same(program)


def test_retain_grad_follows_an_index_assignment():
    def program(L, F):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y[0] = 5
        (y * L.tensor([1.0, -2.0, 0.5])).sum().backward()
        return y.grad, x.grad
    same(program)


@pytest.mark.parametrize("make", ["x.split(2)", "x.chunk(2)", "x.unbind(0)", "x.split([1, 3])", "x.tensor_split(2)"])
@pytest.mark.parametrize("write", ["v.mul_(2)", "v[0].add_(1)", "v.zero_()", "v.copy_(L.zeros(v.shape))"])
@pytest.mark.parametrize("grad_mode", [True, False])
def test_in_place_on_the_views_a_multi_output_op_returns(make, write, grad_mode):
    """PyTorch refuses in-place writes to split/chunk/unbind outputs (and views of them) that
    require grad; tensor_split's outputs, and any write under no_grad, are allowed."""
    def program(L, F):
        x = L.ones(4, 2, requires_grad=True) * 1
        v = eval(make)[1]
        with L.set_grad_enabled(grad_mode):
            exec(write)
        return x.detach(), v.requires_grad
    same(program)


def test_masked_fill_on_an_expanded_tensor_warns_as_pytorch():
    for L in (torch, tgrad):
        with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
            L.zeros(1, 3).expand(2, 3).masked_fill_(L.tensor([[True, False, True]]), 1.0)


@pytest.mark.parametrize("expr", ["p.add_(-0.1, g)", "L.add(p, -0.1, g)", "p.sub_(0.5, g)", "L.sub(p, 0.5, g)",
                                  "p.addcmul_(0.5, g, g)", "L.addcmul(p, 0.5, g, g)", "p.addcdiv_(0.5, g, g)",
                                  "L.addcdiv(p, 0.5, g, g)"])
def test_deprecated_scalar_first_overloads(expr):
    """``p.data.add_(-lr, p.grad.data)`` (old tutorials): PyTorch still accepts the scalar first,
    with a deprecation warning once per process."""
    def program(L, F):
        p, g = L.ones(3, dtype=L.float64), L.tensor([2.0, -1.0, 0.5], dtype=L.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(expr), p
    same(program)
    name = expr.split("(")[0].split(".")[-1]
    tgrad.ops.common._LEGACY_WARNED.discard(name)
    with pytest.warns(UserWarning, match=f"This overload of {name} is deprecated"):
        eval(expr, {"L": tgrad, "p": tgrad.ones(3), "g": tgrad.ones(3)})


@pytest.mark.parametrize("write", ["e.fill_(0.5)", "e.zero_()", "e.masked_fill_(L.tensor([True, False, True]), 2.0)",
                                   "e.fill_(L.tensor(0.5))"])
@pytest.mark.parametrize("through", ["x", "e", "value"])
def test_backward_through_a_write_into_an_expanded_view(write, through):
    """A fill of an expanded view of a tensor with history runs, but PyTorch's backward refuses it:
    the gradient of the view's old value would go back through the view's overlapping geometry
    (its CopySlices copies into it). Without history before the write (only the value requires
    grad) there is nothing to send back that way, and backward runs. A tensor value fills no
    expanded tensor at all (found by the fuzzer)."""
    def program(L, F):
        leaf, v = L.ones(1, 3, requires_grad=True), L.tensor(2.0, requires_grad=True)
        x = leaf * 1 if through != "value" else L.zeros(1, 3)
        e = x.expand(2, 3)
        eval(write.replace("2.0)", "v)") if through == "value" else write)
        (e if through == "e" else x).sum().backward()
        return leaf.grad, v.grad, x
    same(program)


def test_backward_through_a_write_into_an_empty_expanded_view():
    """No element, no overlap: the backward runs (found by the fuzzer)."""
    def program(L, F):
        leaf = L.ones(1, 0, requires_grad=True)
        e = (leaf * 1).expand(2, 0)
        e.zero_()
        e.sum().backward()
        return leaf.grad
    same(program)


@pytest.mark.parametrize("op", ["x.gather(1, L.tensor([[1], [0]]))", "x.gather(0, L.zeros(1, 0, dtype=L.int64))",
                                "x.index_select(1, L.tensor([1]))"])
def test_gather_saves_its_input_and_index_select_does_not(op):
    """An in-place change to the input after the op: gather saved it (PyTorch's gather_backward
    reads it), so backward raises; index_select saved only its size (found by the fuzzer)."""
    def program(L, F):
        leaf = L.ones(2, 2, requires_grad=True)
        x = leaf * 1
        y = eval(op)
        x.mul_(2)
        y.sum().backward()
        return leaf.grad
    same(program)


@pytest.mark.parametrize("product", ["x @ w", "w.t() @ x", "x @ w[:, 0]", "x[0] @ w", "x[0] @ w[:, 0]",
                                     "x.unsqueeze(0) @ w", "L.mm(x, w)", "L.bmm(x[None], w[None])", "L.inner(x, w.t())"])
@pytest.mark.parametrize("w_grad", [False, True])
def test_a_product_saves_an_operand_only_for_its_partners_gradient(product, w_grad):
    """x changed in place after the product: backward needs x only for w's gradient, so it runs
    unless w requires grad, as in PyTorch (found by the fuzzer)."""
    def program(L, F):
        leaf, w = L.ones(3, 3, requires_grad=True), L.ones(3, 3, requires_grad=w_grad)
        x = leaf * 1
        y = eval(product)
        x.mul_(2)
        y.sum().backward()
        return leaf.grad, w.grad
    same(program)


@pytest.mark.parametrize("make", ["b.split(2)", "b.chunk(2)", "b.unbind(0)"])
@pytest.mark.parametrize("base_grad", [True, False])
def test_using_a_multi_output_view_after_its_base_changed_in_place(make, base_grad):
    """The base of split/chunk/unbind views changed in place: such a view gets no new history, and
    using it raises, as in PyTorch (found by the fuzzer)."""
    def program(L, F):
        leaf = L.ones(4, requires_grad=True)
        b = leaf * 1 if base_grad else L.ones(4)
        p = eval(make)[0]
        b.mul_(leaf[:1] * 2)
        (p * 3).sum().backward()
        return leaf.grad
    same(program)


@pytest.mark.parametrize("write", ["v.mul_(g)", "v.add_(g)", "v.copy_(g)", "v.mul_(n)", "v.pow_(g)"])
def test_a_multi_output_view_without_grad_refuses_a_recorded_write(write):
    """A split view of a tensor that needs no grad may not take a value that does (the write
    would be recorded), as in PyTorch (found by the fuzzer)."""
    def program(L, F):
        x, g, n = L.ones(4), L.ones(2, requires_grad=True), L.ones(2)
        v = x.split(2)[0]
        eval(write)
        return x
    same(program)
