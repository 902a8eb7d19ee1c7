"""The grad modes (``no_grad``, ``enable_grad``, ``set_grad_enabled``), ``inference_mode`` and
``is_inference()``, and anomaly mode, checked against PyTorch.

Messages are PyTorch's exact texts with ``tgrad`` where PyTorch names itself; warnings match on
the prefix.
"""
import math
import warnings

import pytest
import torch

import tgrad
from support.reference import raises
from tgrad.nn import functional as F

SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
         "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use "
         "it in autograd, or use `tgrad.no_grad()` instead of `tgrad.inference_mode()`.")
INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a "
           "normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.")
REQUIRES_GRAD = "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
ENABLED = ("Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled for "
           "debugging.")


@pytest.fixture(autouse=True)
def modes_restored():
    """Every test leaves grad, inference and anomaly modes as it found them."""
    yield
    assert tgrad.is_grad_enabled() and not tgrad.is_inference_mode_enabled()
    assert not tgrad.autograd.is_anomaly_enabled() and tgrad.autograd.is_anomaly_check_nan_enabled()


# ------------------------------------------------------------------------ no_grad, enable_grad, set_grad_enabled
def test_no_grad():
    x = tgrad.tensor([1., 2.], requires_grad=True)
    with tgrad.no_grad():
        y = x * 2
        assert tgrad.is_grad_enabled() is False
        with tgrad.enable_grad():
            z = x * 2
        f = tgrad.ones(2, requires_grad=True)
    assert (y.requires_grad, y.grad_fn, y.is_leaf) == (False, None, True)
    assert z.requires_grad and f.requires_grad and tgrad.is_grad_enabled()


def test_no_grad_decorator_and_set_grad_enabled():
    x = tgrad.tensor([1., 2.], requires_grad=True)

    @tgrad.no_grad()
    def doubled(t):
        return t * 2
    assert doubled(x).requires_grad is False and tgrad.is_grad_enabled()
    with tgrad.set_grad_enabled(False):
        assert (x * 2).requires_grad is False
    assert (x * 2).requires_grad is True
    tgrad.set_grad_enabled(False)
    try:
        assert (x * 2).requires_grad is False
    finally:
        tgrad.set_grad_enabled(True)
    assert (x * 2).requires_grad is True


def test_inplace_on_a_leaf_under_no_grad_and_backward_inside_no_grad():
    w = tgrad.tensor([1., 2.], requires_grad=True)
    with tgrad.no_grad():
        w.add_(1)
        w.mul_(2)
        w[0] = 7.
    assert w.tolist() == [7., 6.] and w.is_leaf and w.requires_grad
    z = (w * w).sum()
    with tgrad.no_grad():
        z.backward()
    assert w.grad.tolist() == [14., 12.]


# ------------------------------------------------------------------------ 24: inference_mode
def test_E24_results_inside_are_inference_tensors():
    x = tgrad.ones(2, 3, requires_grad=True)
    n = tgrad.ones(3)
    with tgrad.inference_mode():
        assert tgrad.is_inference_mode_enabled() and not tgrad.is_grad_enabled()
        made = dict(ones=tgrad.ones(2), zeros=tgrad.zeros(2, 2), randn=tgrad.randn(3), arange=tgrad.arange(4),
                    tensor=tgrad.tensor([1.0, 2.0]), full=tgrad.full((2,), 3.0), zeros_like=tgrad.zeros_like(x))
        results = dict(mul=x * 2, add=n + 1, matmul=x @ n, sum=x.sum(), softmax=x.softmax(-1), exp=n.exp(),
                       clone=n.clone())
        leaf = tgrad.ones(2, requires_grad=True)  # still honoured, as PyTorch
    assert tgrad.is_grad_enabled() and not tgrad.is_inference_mode_enabled()
    for name, t in {**made, **results}.items():
        assert t.is_inference(), name
        assert t.requires_grad is False and t.grad_fn is None, name
    assert leaf.is_inference() and leaf.requires_grad
    assert not x.is_inference() and not n.is_inference() and not (x * 2).is_inference()


def test_E24_views_follow_their_storage_not_the_mode():
    n = tgrad.ones(3)
    with tgrad.inference_mode():
        a = tgrad.ones(2, 3)
        normal_views = (n[0], n.detach(), n.view(3, 1), n.data)  # views of a normal tensor stay normal
    assert not any(v.is_inference() for v in normal_views)
    assert a[0].is_inference() and a.detach().is_inference() and a.t().is_inference() and a.view(6).is_inference()
    assert a.data.is_inference()
    assert not (a + 1).is_inference() and not a.clone().is_inference()  # computed outside: normal
    n2 = tgrad.ones(3)
    nr = torch.ones(3)
    with tgrad.inference_mode(), torch.inference_mode():
        ar = torch.ones(2, 3)
        assert [v.is_inference() for v in (n2[0], n2.detach())] == [v.is_inference() for v in (nr[0], nr.detach())]
    assert [ar[0].is_inference(), ar.detach().is_inference(), (ar + 1).is_inference()] == [
        a[0].is_inference(), a.detach().is_inference(), (a + 1).is_inference()]


def test_E24_errors_outside_the_mode():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.inference_mode():
        a = tgrad.ones(2)
    with raises(RuntimeError, SAVED):
        a * x  # Mul saves both operands
    r = a + x  # Add saves nothing: allowed, a normal result
    assert (a * 3).tolist() == [3.0, 3.0]  # no autograd involved: allowed
    assert r.grad_fn.name() == "AddBackward0" and not r.is_inference()
    for write in (lambda: a.add_(1), lambda: a.zero_(), lambda: a.__setitem__(0, 5.0), lambda: a[0].mul_(2)):
        with raises(RuntimeError, INPLACE):
            write()
    with raises(RuntimeError, REQUIRES_GRAD):
        a.requires_grad_()
    with raises(RuntimeError, REQUIRES_GRAD):
        a.requires_grad = True
    assert a.requires_grad_(False) is a
    c = a.clone()  # the workaround the messages give
    assert not c.is_inference() and c.requires_grad_().requires_grad
    (c * x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_E24_custom_function_saving_an_inference_tensor():
    class Scale(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            return g, None

    with tgrad.inference_mode():
        w = tgrad.ones(2)
    with raises(RuntimeError, SAVED):
        Scale.apply(tgrad.ones(2, requires_grad=True), w)


def test_E24_in_place_inside_the_mode():
    x = tgrad.ones(2, requires_grad=True)
    n = tgrad.ones(2)
    with tgrad.inference_mode():
        a = tgrad.ones(2)
        a.add_(1)  # an inference tensor may change inside the mode
        n.add_(1)  # so may a normal one, which stays normal and counts a version
        with tgrad.enable_grad():  # autograd's leaf check does not run in inference mode
            x.mul_(2)
    assert a.tolist() == [2.0, 2.0] and not n.is_inference() and n._version == 1
    assert x.is_leaf and x.requires_grad and x.tolist() == [2.0, 2.0]


def test_E24_nesting_with_grad_modes():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.inference_mode():
        with tgrad.enable_grad():  # grad mode on, but still no graph
            assert tgrad.is_grad_enabled() and tgrad.is_inference_mode_enabled()
            y = x * 2
            assert y.requires_grad is False and y.grad_fn is None and y.is_inference()
        with tgrad.no_grad():
            assert not tgrad.is_grad_enabled() and tgrad.is_inference_mode_enabled()
            assert tgrad.ones(1).is_inference()
        with tgrad.inference_mode(False):  # off for the block: grad mode back on, normal tensors
            assert tgrad.is_grad_enabled() and not tgrad.is_inference_mode_enabled()
            z = x * 2
            assert not z.is_inference() and z.grad_fn.name() == "MulBackward0"
        assert tgrad.is_inference_mode_enabled() and not tgrad.is_grad_enabled()
    with tgrad.no_grad():
        with tgrad.inference_mode():
            assert not tgrad.is_grad_enabled() and tgrad.is_inference_mode_enabled()
        assert not tgrad.is_grad_enabled() and not tgrad.is_inference_mode_enabled()


def test_E24_decorators_and_exceptions():
    x = tgrad.ones(2, requires_grad=True)

    @tgrad.inference_mode()
    def called(t):
        return t * 2, tgrad.is_inference_mode_enabled()

    @tgrad.inference_mode
    def bare(t):
        return t * 2

    y, inside = called(x)
    assert inside and y.is_inference() and not y.requires_grad
    assert bare(x).is_inference() and bare.__name__ == "bare"
    with pytest.raises(ValueError):
        with tgrad.inference_mode():
            raise ValueError
    assert not tgrad.is_inference_mode_enabled() and tgrad.is_grad_enabled()
    assert tgrad.autograd.inference_mode is tgrad.inference_mode
    assert tgrad.autograd.is_inference_mode_enabled is tgrad.is_inference_mode_enabled


# ------------------------------------------------------------------------------ anomaly mode
def test_anomaly_switches():
    assert not tgrad.autograd.is_anomaly_enabled() and tgrad.is_anomaly_enabled is tgrad.autograd.is_anomaly_enabled
    tgrad.autograd.set_detect_anomaly(True)  # a plain call switches at once
    assert tgrad.autograd.is_anomaly_enabled() and tgrad.autograd.is_anomaly_check_nan_enabled()
    tgrad.autograd.set_detect_anomaly(False)
    assert not tgrad.autograd.is_anomaly_enabled()
    with tgrad.autograd.set_detect_anomaly(True, check_nan=False):
        assert tgrad.autograd.is_anomaly_enabled() and not tgrad.autograd.is_anomaly_check_nan_enabled()
    assert not tgrad.autograd.is_anomaly_enabled() and tgrad.autograd.is_anomaly_check_nan_enabled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyError):
            with tgrad.autograd.detect_anomaly():
                assert tgrad.autograd.is_anomaly_enabled()
                raise KeyError
    assert [str(w.message) for w in caught] == [ENABLED]

    @tgrad.autograd.detect_anomaly(check_nan=False)
    def inside():
        return tgrad.autograd.is_anomaly_enabled(), tgrad.autograd.is_anomaly_check_nan_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert inside() == (True, False)


def test_anomaly_records_the_forward_stack_only_when_enabled():
    x = tgrad.ones(2, requires_grad=True)
    assert "traceback_" not in (x * 2).grad_fn.metadata
    with tgrad.autograd.set_detect_anomaly(True):
        y = x * 2  # THIS LINE
        z = F.relu(y)
    stack = y.grad_fn.metadata["traceback_"]
    assert stack[-1].startswith(f'  File "{__file__}"') and "y = x * 2  # THIS LINE" in stack[-1]
    # tgrad's own frames are trimmed: the last one shown is the user's call
    assert "z = F.relu(y)" in z.grad_fn.metadata["traceback_"][-1]
    with tgrad.autograd.set_detect_anomaly(True), tgrad.no_grad():
        assert (x * 2).grad_fn is None  # no graph, nothing recorded


def _nan_in_sqrt(lib):
    x = lib.tensor([0.0, 1.0], requires_grad=True)
    return x, (x.sqrt() * lib.tensor([0.0, 1.0])).sum()  # d sqrt(0) = inf, times 0: NaN


def test_anomaly_nan_raises_naming_the_node_and_its_forward_call():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tgrad.autograd.detect_anomaly():
            x, loss = _nan_in_sqrt(tgrad)
            with raises(RuntimeError, "Function 'SqrtBackward0' returned nan values in its 0th output."):
                loss.backward()
        with torch.autograd.detect_anomaly():
            _, ref = _nan_in_sqrt(torch)
            with raises(RuntimeError, "Function 'SqrtBackward0' returned nan values in its 0th output."):
                ref.backward()
    texts = [str(w.message) for w in caught if str(w.message).startswith("Error detected in SqrtBackward0")]
    ours, theirs = texts[0], texts[1]
    head = "Error detected in SqrtBackward0. Traceback of forward call that caused the error:\n"
    assert ours.startswith(head) and theirs.startswith(head)
    assert "return x, (x.sqrt() * lib.tensor([0.0, 1.0])).sum()" in ours  # where the forward ran
    assert x.grad is None


def test_anomaly_nan_check_can_be_off_and_is_off_by_default():
    x, loss = _nan_in_sqrt(tgrad)
    loss.backward()  # without anomaly mode a NaN passes silently, as in PyTorch
    assert [math.isnan(v) for v in x.grad.tolist()] == [True, False]
    x, loss = _nan_in_sqrt(tgrad)
    with tgrad.autograd.set_detect_anomaly(True, check_nan=False):
        loss.backward()
    assert [math.isnan(v) for v in x.grad.tolist()] == [True, False]


def test_anomaly_nan_in_a_later_output_of_a_custom_function():
    def build(lib):
        class Pair(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return g, g * float("nan")
        return Pair

    for lib in (tgrad, torch):
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        with lib.autograd.set_detect_anomaly(True), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = build(lib).apply(a, b).sum()
            with raises(RuntimeError, "Function 'PairBackward' returned nan values in its 1th output."):
                out.backward()


def test_anomaly_any_backward_error_shows_the_forward_call():
    class Boom(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = tgrad.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        untracked = Boom.apply(x).sum()  # built before anomaly mode: nothing recorded
        with tgrad.autograd.set_detect_anomaly(True):
            tracked = Boom.apply(x).sum()  # BOOM CALL
            with raises(ValueError, "boom"):
                tracked.backward()
            with raises(ValueError, "boom"):
                untracked.backward()
    texts = [str(w.message) for w in caught]
    assert texts[0].startswith("Error detected in BoomBackward. Traceback of forward call that caused the error:\n")
    assert "tracked = Boom.apply(x).sum()  # BOOM CALL" in texts[0]
    assert texts[1] == ("Error detected in BoomBackward. No forward pass information available. Enable detect "
                        "anomaly during forward pass for more information.")


def test_anomaly_finds_the_op_behind_an_in_place_error():
    """The version error's hint: with anomaly mode on, the version error comes with where the node that
    saved the modified tensor was created."""
    x = tgrad.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught, tgrad.autograd.set_detect_anomaly(True, check_nan=False):
        warnings.simplefilter("always")
        y = x * 2
        z = y * y  # SAVES Y
        y.add_(1)
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            z.sum().backward()
    (text,) = [str(w.message) for w in caught]
    assert text.startswith("Error detected in MulBackward0.") and "z = y * y  # SAVES Y" in text
