"""broadcast_shapes and broadcast_tensors against PyTorch: shapes, views and their gradients (a
random upstream gradient summed back over the broadcast dims), 0-size and 0-d operands, and
PyTorch's errors and messages."""
import pytest
import torch

import tgrad
from support.reference import run, uniform64


@pytest.mark.parametrize("shapes", [((2, 3), (3,)), (2, (3, 1)), ((), (4,)), ((0, 1), (1, 5)), ((5, 1, 3), (4, 1), 1),
                                    ([2, 1], torch.Size([1, 3])), ()])
def test_broadcast_shapes(shapes):
    shapes = tuple(tgrad.Size(s) if isinstance(s, torch.Size) else s for s in shapes)
    got = tgrad.broadcast_shapes(*shapes)
    assert isinstance(got, tgrad.Size)
    assert tuple(got) == tuple(torch.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes,exc", [(((2, 3), (4, 3)), RuntimeError), (((2, 3), (4, 3), (5,)), RuntimeError),
                                        (((-1,),), ValueError), (((2, "a"),), TypeError)])
def test_broadcast_shapes_errors(shapes, exc):
    with pytest.raises(exc) as ref:
        torch.broadcast_shapes(*shapes)
    with pytest.raises(exc) as got:
        tgrad.broadcast_shapes(*shapes)
    if exc is not TypeError:
        assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("shapes", [[(2, 1), (3,)], [(4, 1, 3), (2, 1), ()], [(0, 3), (1, 3)], [(3,)], [(2, 3), (2, 3)]])
def test_broadcast_tensors(shapes):
    inputs = [uniform64(s, seed=k) for k, s in enumerate(shapes)]
    weights = [uniform64(torch.broadcast_shapes(*shapes), seed=10 + k) for k in range(len(shapes))]

    def total(L):  # every output, each with its own weight, so every input's gradient is checked
        return lambda *xs: sum(o * (w if L is torch else tgrad.from_torch(w)) for o, w in zip(L.broadcast_tensors(*xs), weights))
    run(total(torch), total(tgrad), inputs)
    outs = tgrad.broadcast_tensors(*map(tgrad.from_torch, inputs))
    assert isinstance(outs, tuple)
    assert all(o._base is not None or tuple(o.shape) == s for o, s in zip(outs, shapes))


def test_broadcast_tensors_errors():
    with pytest.raises(RuntimeError) as ref:
        torch.broadcast_tensors(torch.ones(2, 3), torch.ones(4, 1, 1), torch.ones(5))
    with pytest.raises(RuntimeError) as got:
        tgrad.broadcast_tensors(tgrad.ones(2, 3), tgrad.ones(4, 1, 1), tgrad.ones(5))
    assert str(got.value) == str(ref.value)
    with pytest.raises(TypeError):
        torch.broadcast_tensors(torch.ones(2), 3)
    with pytest.raises(TypeError):
        tgrad.broadcast_tensors(tgrad.ones(2), 3)
    assert tgrad.broadcast_tensors() == torch.broadcast_tensors() == ()
