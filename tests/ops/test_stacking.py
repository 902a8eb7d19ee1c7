"""atleast_1d/2d/3d, hstack, vstack, column_stack and dstack against PyTorch in float64: values,
dtypes, gradients of a random upstream gradient, 0-d and 0-size inputs, mixed dtypes, the
calling forms (one tensor, several, a list) and PyTorch's errors."""
import pytest
import torch

import tgrad
from support.reference import run, same, uniform64

Z0 = torch.tensor(0.7, dtype=torch.float64)
V = uniform64((5,), seed=1)
M = uniform64((5, 3), seed=2)
T = uniform64((5, 2, 4), seed=3)
E = torch.zeros(0, dtype=torch.float64)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("x", [Z0, V, M, T, E, uniform64((2, 1, 3, 2), seed=4)], ids=["0d", "1d", "2d", "3d", "empty", "4d"])
def test_atleast(name, x):
    run(getattr(torch, name), getattr(tgrad, name), [x])


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_calling_forms(name):
    xs = [Z0, V, M]
    for got, ref in [(getattr(tgrad, name)(*map(tgrad.from_torch, xs)), getattr(torch, name)(*xs)),
                     (getattr(tgrad, name)(list(map(tgrad.from_torch, xs))), getattr(torch, name)(xs)),
                     (getattr(tgrad, name)([tgrad.from_torch(V)]), getattr(torch, name)([V]))]:
        assert isinstance(got, tuple) and len(got) == len(ref)
        for g, r in zip(got, ref):
            same(g, r)
    for x in (Z0, V, M, T):  # the input itself where it has the dims, else a view of it, as PyTorch
        g = tgrad.from_torch(x)
        out = getattr(tgrad, name)(g)
        assert (out is g) == (getattr(torch, name)(x) is x)
        assert out is g or out._base is g


CASES = {
    "hstack": [[V, Z0, V[:2]], [M, M[:, :1]], [T, T[:, :1]]],
    "vstack": [[V, V], [M, V[:3].reshape(1, 3)], [Z0, Z0], [T, T[:1]]],
    "row_stack": [[V, V], [M, V[:3]]],
    "column_stack": [[V, M, V], [Z0, M[:1]], [V[:1], Z0], [T, T]],
    "dstack": [[V, V], [M, M], [T, T[:, :, :1]], [M[:, :2], T[:, :, 1]], [Z0, V[:1]]],
}


@pytest.mark.parametrize("name,inputs", [(n, i) for n, cases in CASES.items() for i in cases],
                         ids=[f"{n}{k}" for n, cases in CASES.items() for k in range(len(cases))])
def test_stacks(name, inputs):
    run(lambda *a: getattr(torch, name)(a), lambda *a: getattr(tgrad, name)(a), inputs)


@pytest.mark.parametrize("name", list(CASES))
def test_stacks_promote_and_refuse(name):
    ints, floats = torch.tensor([1, 2, 3]), torch.tensor([0.5, 1.5, 2.5])
    same(getattr(tgrad, name)([tgrad.from_torch(ints), tgrad.from_torch(floats)]), getattr(torch, name)([ints, floats]))
    with pytest.raises(RuntimeError, match=f"{name.replace('row_', 'v')} expects a non-empty TensorList"):
        getattr(tgrad, name)([])
    with pytest.raises(RuntimeError):
        getattr(torch, name)([M, T[:2]])
    with pytest.raises(RuntimeError):
        getattr(tgrad, name)([tgrad.from_torch(M), tgrad.from_torch(T[:2])])
