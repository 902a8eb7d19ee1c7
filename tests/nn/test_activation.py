"""PyTorch names a toy-network script reaches for (activation modules, shrink/threshold
functionals, composed torch/Tensor functions, tgrad.linalg) against PyTorch in float64: values,
dtypes, gradients for a random upstream gradient, odd, 0-d and 0-size shapes, reprs and errors."""
import math

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import run, same, uniform64

NAN, INF = float("nan"), float("inf")


SPECIAL = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 6.0, 0.25, -3.0, 7.0], dtype=torch.float64)
X = torch.cat([uniform64((31,), -4, 4, 1), SPECIAL]).reshape(4, 11)
X_NOSPECIAL = uniform64((3, 5, 7), -4, 4, 2)


# ----------------------------------------------------------------------------- nn activation modules

# CELU uses alphas exact in float32: PyTorch computes CeluBackward0/1 with 1/alpha rounded to float32 (derivatives.yaml
# alpha.toFloat()), off by ~1e-8 in float64 for an alpha like 0.7; tgrad keeps float64
MODULES = [("ReLU6", (), {}), ("ReLU6", (), dict(inplace=True)), ("SELU", (), {}), ("SELU", (True,), {}),
           ("CELU", (), {}), ("CELU", (0.5,), {}), ("CELU", (0.25,), dict(inplace=True)), ("Hardtanh", (), {}),
           ("Hardtanh", (-0.5, 2.0), {}), ("Hardtanh", (-2.0, 0.25, True), {}), ("Hardsigmoid", (), {}),
           ("Hardsigmoid", (True,), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}),
           ("Threshold", (0.25, -7.0), {}), ("Threshold", (-1.0, 3), dict(inplace=True)),
           ("Hardshrink", (), {}), ("Hardshrink", (1.0,), {}), ("Softshrink", (), {}), ("Softshrink", (0.0,), {}),
           ("Softshrink", (1.5,), {})]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
@pytest.mark.parametrize("shape", [(3, 5, 7), (), (0, 4)])
def test_activation_modules(name, args, kwargs, shape):
    x = X_NOSPECIAL.reshape(-1)[:math.prod(shape)].reshape(shape).clone()
    mg, mt = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mg) == repr(mt)
    # in-place modules act on a non-leaf (x * 1), as in a network
    run(lambda a: mt(a * 1), lambda a: mg(a * 1), [x])


@pytest.mark.parametrize("name,args", [("ReLU6", ()), ("Hardtanh", (-0.5, 2.0)), ("Threshold", (0.25, -7.0)),
                                       ("Threshold", (-1.0, 0.5)), ("Hardshrink", ()), ("Softshrink", ()),
                                       ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("SELU", ()),
                                       ("CELU", (0.5,)), ("Hardsigmoid", ())])
def test_activation_special_values(name, args):
    x = X
    x = X
    if name not in ("Threshold", "LogSigmoid", "Tanhshrink"):
        # PyTorch's own gradient at NaN there depends on the element's position (its vectorized
        # loop and scalar tail disagree: the shrinks give 0 in the loop, g in the tail, as tgrad)
        same(getattr(nn, name)(*args)(tgrad.from_torch(X)), getattr(torch.nn, name)(*args)(X))
        x = torch.nan_to_num(X, nan=0.3)
    if name == "Softsign":  # left alone: tgrad's softsign gradient is 0 at +-inf, PyTorch's (composed) NaN
        x = torch.nan_to_num(x, posinf=9.0, neginf=-9.0)
    run(getattr(torch.nn, name)(*args), getattr(nn, name)(*args), [x])


@pytest.mark.parametrize("inplace", [False, True])
def test_threshold_functional(inplace):
    for th, val in [(0.5, 2.0), (-INF, 1.0), (0.0, NAN), (1.0, INF)]:
        run(lambda a: TF.threshold(a * 1, th, val, inplace), lambda a: F.threshold(a * 1, th, val, inplace), [X])
        run(lambda a: TF.threshold_(a * 1, th, val), lambda a: F.threshold_(a * 1, th, val), [X])
    xi = torch.tensor([[1, 2, 3], [-4, 0, 9]])
    same(F.threshold(tgrad.from_torch(xi), 1.5, 2.5), TF.threshold(xi, 1.5, 2.5))
    same(F.threshold(tgrad.from_torch(xi), 1, 0), TF.threshold(xi, 1, 0))
    y = tgrad.from_torch(X.clone())
    assert F.threshold_(y, 0.0, 1.0) is y and F.threshold(y, 0.0, 1.0, True) is y


def test_threshold_inplace_on_leaf_refused():
    leaf = tgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.threshold_(leaf, 0.0, 1.0)


def test_shrink_functionals_and_errors():
    x = torch.nan_to_num(X, nan=0.3)  # (PyTorch's hardshrink gradient at NaN: see above)
    run(lambda a: TF.hardshrink(a, 0.3), lambda a: F.hardshrink(a, 0.3), [x])
    run(lambda a: torch.hardshrink(a, 0.3), lambda a: tgrad.hardshrink(a, 0.3), [x])
    run(lambda a: a.hardshrink(), lambda a: a.hardshrink(), [x])
    run(lambda a: TF.softshrink(a, 0.3), lambda a: F.softshrink(a, 0.3), [x])
    run(lambda a: TF.softshrink(a, 0.3), lambda a: F.softshrink(a, 0.3), [X.reshape(-1)[:0]])
    run(lambda a: TF.hardshrink(a), lambda a: F.hardshrink(a), [torch.tensor(0.4, dtype=torch.float64)])
    with pytest.raises(RuntimeError, match="lambda"):
        F.softshrink(tgrad.ones(3), -1.0)
    xi = tgrad.tensor([1, 2])
    with pytest.raises(NotImplementedError, match="Long"):
        F.softshrink(xi, 0.5)
    with pytest.raises(NotImplementedError, match="Long"):
        F.hardshrink(xi, 0.5)
    with pytest.raises(TypeError):
        F.threshold([1.0], 0.0, 1.0)


def test_hardtanh_module_arguments():
    with pytest.raises(AssertionError, match="max_val"):
        nn.Hardtanh(1.0, 1.0)
    with pytest.warns(FutureWarning, match="min_value"):
        m = nn.Hardtanh(min_value=-0.5)
    assert repr(m) == repr(torch.nn.Hardtanh(-0.5))


@pytest.mark.parametrize("kwargs", [{}, dict(dim=0), dict(dim=-1, eps=0.5)])
def test_cosine_similarity_module(kwargs):
    a, b = uniform64((3, 5, 4), seed=3), uniform64((3, 5, 4), seed=4)
    mt, mg = torch.nn.CosineSimilarity(**kwargs), nn.CosineSimilarity(**kwargs)
    assert repr(mt) == repr(mg)
    run(mt, mg, [a, b], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kwargs", [{}, dict(p=1.0), dict(p=3.0, keepdim=True), dict(eps=0.1)])
def test_pairwise_distance_module(kwargs):
    a, b = uniform64((6, 5), seed=5), uniform64((6, 5), seed=6)
    mt, mg = torch.nn.PairwiseDistance(**kwargs), nn.PairwiseDistance(**kwargs)
    assert repr(mt) == repr(mg)
    run(mt, mg, [a, b], rtol=1e-8, atol=1e-10)
    assert mg.norm == mt.norm and mg.keepdim == mt.keepdim


def test_node_names():
    xr = torch.tensor([1.0, -2.0, 0.2], dtype=torch.float64, requires_grad=True)
    x = tgrad.from_torch(xr.detach().clone()).requires_grad_()
    for fr, fg in [(lambda a: TF.threshold(a, 0.0, 5.0), lambda a: F.threshold(a, 0.0, 5.0)),
                   (TF.hardshrink, F.hardshrink), (TF.softshrink, F.softshrink), (torch.hardshrink, tgrad.hardshrink)]:
        assert type(fg(x).grad_fn).__name__ == type(fr(xr).grad_fn).__name__
    y = F.threshold(x * 1, 0.0, 5.0)
    g, = tgrad.autograd.grad(y, x, tgrad.ones(3, dtype=tgrad.float64, requires_grad=True), create_graph=True)
    yr = TF.threshold(xr * 1, 0.0, 5.0)
    gr, = torch.autograd.grad(yr, xr, torch.ones(3, dtype=torch.float64, requires_grad=True), create_graph=True)
    same(g, gr)
    assert g.requires_grad == gr.requires_grad
