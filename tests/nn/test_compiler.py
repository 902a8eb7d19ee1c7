"""tgrad.compile / tgrad.compiler against torch.compile's wrapper types, argument checks and state dicts."""
import pytest
import torch

import tgrad
import tgrad.nn as gnn


def test_a_compiled_module_computes_the_same_and_names_state_as_torch():
    tgrad.manual_seed(0)
    model = gnn.Sequential(gnn.Linear(3, 4), gnn.ReLU(), gnn.Linear(4, 1))
    compiled = tgrad.compile(model)
    theirs = torch.compile(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)))
    assert isinstance(compiled, gnn.Module) and type(compiled).__name__ == type(theirs).__name__
    assert list(compiled.state_dict()) == list(theirs.state_dict())
    assert compiled._orig_mod is model
    with pytest.raises(TypeError):
        compiled[0]  # as in PyTorch: the wrapper forwards attributes, not indexing
    x = tgrad.randn(5, 3)
    assert compiled(x).tolist() == model(x).tolist()
    compiled(x).sum().backward()
    assert model[0].weight.grad is not None
    compiled.eval()
    assert not model.training
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * 4


def test_functions_and_decorator_forms():
    def double(x):
        return x * 2
    fast = tgrad.compile(double)
    assert fast.__name__ == "double" and fast(tgrad.ones(2)).tolist() == [2.0, 2.0]

    @tgrad.compile(mode="max-autotune", fullgraph=True, dynamic=False)
    def square(x):
        return x * x
    assert square(tgrad.full((2,), 3.0)).tolist() == [9.0, 9.0]
    assert tgrad.compile(double, disable=True) is double
    assert tgrad.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert tgrad.compiler.disable(double) is double


@pytest.mark.parametrize("kwargs,match", [(dict(mode="fast"), "Unrecognized mode=fast"),
                                          (dict(backend="nope"), "Invalid backend: 'nope'"),
                                          (dict(mode="default", options={"a": 1}), "Either mode or options")])
def test_bad_arguments_raise_as_torch(kwargs, match):
    with pytest.raises(RuntimeError, match=match):
        torch.compile(torch.nn.Linear(1, 1), **kwargs)
    with pytest.raises(RuntimeError, match=match):
        tgrad.compile(gnn.Linear(1, 1), **kwargs)
    with pytest.raises(AssertionError, match="A callable function is expected"):
        tgrad.compile(3)
