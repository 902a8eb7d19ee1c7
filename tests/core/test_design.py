"""The core's design rules, pinned: the engine fits gradients to their input's shape, a
graph node exists only when something is recorded, built-in is a class attribute, the recorded
backward is chosen in one place, ``.grad`` never aliases a user's tensor, imports go one way and ``import tgrad`` loads only the
core."""
import ast
import pathlib
import subprocess
import sys

import pytest
import torch

import tgrad
from tgrad.autograd.function import BuiltinFunction, Node
from tgrad.ops import formula, generated, registry

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Expanded(tgrad.autograd.Function):
    """Returns a gradient of the broadcast shape (1, 3) for an input of shape (3,)... or (2, 3)."""

    @staticmethod
    def forward(ctx, x, rows):
        ctx.rows = rows
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.rows, g.shape[-1]) * 1.0, None


def test_engine_sums_a_broadcast_gradient_back_to_the_input_shape_as_pytorch():
    class TorchExpanded(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, rows):
            ctx.rows = rows
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g.expand(ctx.rows, g.shape[-1]) * 1.0, None

    x = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    xr = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    Expanded.apply(x, 4).sum().backward()
    TorchExpanded.apply(xr, 4).sum().backward()
    assert x.grad.tolist() == xr.grad.tolist() == [4.0, 4.0, 4.0]


def test_a_wrong_shaped_gradient_is_an_error_not_a_reshape():
    class Wrong(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g.reshape(3, 2)  # same numel, incompatible shape

    class WrongBuiltin(BuiltinFunction):
        node_name = "WrongBackward0"

        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g.reshape(-1)

    for fn in (Wrong, WrongBuiltin):
        x = tgrad.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[\d+(, \d+)?\] but "
                                               r"expected shape compatible with \[2, 3\]"):
            fn.apply(x).sum().backward()


def test_no_graph_node_is_made_when_nothing_is_recorded(monkeypatch):
    made = []
    original = Node.__init__

    def counting(self, *a, **k):
        made.append(type(self).__name__)
        original(self, *a, **k)

    monkeypatch.setattr(Node, "__init__", counting)
    x = tgrad.ones(4)
    (x.exp() * 2 + 1).sum()  # nothing requires grad
    w = tgrad.ones(4, requires_grad=True)
    with tgrad.no_grad():
        (w.exp() * 2).sum()
    assert made == []
    (w.exp() * 2).sum()
    assert made == ["ExpBackward0", "AccumulateGrad", "MulBackward0", "SumBackward0"]


def test_builtin_is_a_class_attribute_not_a_module_name():
    class UserFunction(tgrad.autograd.Function):  # user code, even if it lives in a tgrad-named module
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g, g  # one gradient too many: a user Function is checked

    UserFunction.__module__ = "tgrad.pretend"
    assert not UserFunction.builtin and BuiltinFunction.builtin
    x = tgrad.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        UserFunction.apply(x).sum().backward()


def test_the_recorded_backward_runs_only_under_create_graph(monkeypatch):
    calls = []
    for name in ("fused", "traced_backward"):  # how formula.derivative runs a row's derivative
        original = getattr(formula, name)
        monkeypatch.setattr(formula, name, lambda *a, _o=original, _n=name, **k: calls.append(_n) or _o(*a, **k))
    x = tgrad.tensor([0.5, 1.5], dtype=tgrad.float64, requires_grad=True)
    tgrad.autograd.grad(x.sin().sum(), x)
    assert calls == ["fused"]
    calls.clear()
    g, = tgrad.autograd.grad(x.sin().sum(), x, create_graph=True)
    assert calls == ["traced_backward"] and g.grad_fn is not None
    (gg,) = tgrad.autograd.grad(g.sum(), x)
    assert torch.allclose(gg.torch(), -torch.sin(x.detach().torch()))


def test_grad_never_aliases_a_users_tensor():
    """The engine may steal a gradient nobody else holds (no copy per step), never one the user
    still holds: ``.grad`` of an identity-like op's input is a copy of the user's upstream tensor."""
    for make in (lambda x: x + 0.0, lambda x: x * 1.0, lambda x: x.view(2, 2).reshape(4), lambda x: x.clone()):
        x = tgrad.zeros(4, requires_grad=True)
        g = tgrad.tensor([1.0, 2.0, 3.0, 4.0])
        make(x).backward(g)
        assert x.grad.data_ptr() != g.data_ptr()
        g.mul_(10.0)
        assert x.grad.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_grad_steal_still_avoids_a_copy_for_a_fresh_gradient():
    x = tgrad.ones(3, requires_grad=True)
    (x * 2.0).sum().backward()
    first = x.grad
    assert first._data._base is None and first.tolist() == [2.0, 2.0, 2.0]


def _imports(path):
    tree = ast.parse(path.read_text())
    top, nested = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (top if node.col_offset == 0 else nested).append(node)
    return top, nested


# The CPU executor and Triton's private interpreter names load on the first CPU launch, not with
# ``import tgrad``, and the private names are imported inside their version check.
LATE_BY_DESIGN = {"kernels/__init__.py", "kernels/runtime/launch.py", "kernels/runtime/triton_private.py"}


def test_library_imports_are_at_the_top_of_files():
    nested = {str(p.relative_to(ROOT)): len(_imports(p)[1])
              for folder in ("tgrad", "kernels", "nn") for p in (ROOT / folder).rglob("*.py")}
    assert {k: v for k, v in nested.items() if v and k not in LATE_BY_DESIGN} == {}


def test_kernels_import_nothing_of_tgrad_and_the_core_never_imports_nn():
    for p in (ROOT / "kernels").rglob("*.py"):
        for node in _imports(p)[0]:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(n == "tgrad" or (n.startswith("tgrad.") and not n.startswith("tgrad.kernels"))
                           for n in names), p


def test_import_tgrad_loads_neither_nn_nor_the_interpreter_and_reaches_both():
    """In a fresh interpreter: ``import tgrad`` loads no nn/optim module and not the private
    interpreter names (the CPU executor loads those on the first launch), yet, as ``import torch``
    gives ``torch.nn`` and ``torch.optim``, a ported script's ``torch.optim.SGD`` works after
    ``import tgrad as torch``."""
    code = ("import sys, tgrad as torch; "
            "print(sorted(m for m in sys.modules if m.startswith(('tgrad.nn', 'tgrad.optim')))); "
            "print('tgrad.kernels.runtime.triton_private' in sys.modules); "
            "print(torch.nn.Linear.__name__, torch.optim.SGD.__name__, torch.utils.data.DataLoader.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "False", "Linear SGD DataLoader"]


def test_every_public_op_comes_from_the_registry():
    for name, fn in registry.FUNCTIONS.items():
        assert getattr(tgrad, name) is fn, name
    for name, fn in registry.METHODS.items():
        assert tgrad.Tensor.__dict__[name] is fn, name
