"""nn.utils.parametrize, parametrizations.weight_norm / spectral_norm and the hook-based weight_norm
against PyTorch on copied weights, in float64: state-dict keys, values, gradients, errors."""
import pickle
import warnings

import pytest
import torch

import tgrad
import tgrad.nn as gnn
from tgrad.nn.utils import parametrizations as GP, parametrize as gparam
from torch.nn.utils import parametrizations as TP, parametrize as tparam


def _g(t):
    return tgrad.tensor(t.detach().numpy())


def _copy_weights(ours, theirs):
    with tgrad.no_grad():
        for (name, p), (tname, q) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert name == tname
            p.copy_(_g(q))


def _linear_pair(n_in=5, n_out=4):
    torch.manual_seed(0)
    theirs = torch.nn.Linear(n_in, n_out).double()
    ours = gnn.Linear(n_in, n_out).double()
    _copy_weights(ours, theirs)
    return ours, theirs


def _close(a, b):
    torch.testing.assert_close(a.torch() if isinstance(a, tgrad.Tensor) else a, b.detach(), rtol=1e-10, atol=1e-12)


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _forward_and_grads(ours, theirs, x):
    y_o, y_t = ours(_g(x)), theirs(x)
    _close(y_o, y_t)
    up = torch.randn(y_t.shape, dtype=torch.float64)
    y_o.backward(_g(up))
    y_t.backward(up)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        _close(p.grad, q.grad)


def test_a_custom_parametrization_behaves_as_pytorchs():
    ours, theirs = _linear_pair(4, 4)
    gparam.register_parametrization(ours, "weight", _symmetric(tgrad))
    tparam.register_parametrization(theirs, "weight", _symmetric(torch))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert gparam.type_before_parametrizations(ours) is gnn.Linear
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert gparam.is_parametrized(ours) and gparam.is_parametrized(ours, "weight")
    assert not gparam.is_parametrized(ours, "bias")
    _close(ours.weight, theirs.weight)
    _forward_and_grads(ours, theirs, torch.randn(3, 4, dtype=torch.float64))
    new = torch.randn(4, 4, dtype=torch.float64)
    ours.weight, theirs.weight = _g(new), new  # runs right_inverse
    _close(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    with gparam.cached():
        assert ours.weight is ours.weight
    assert ours.weight is not ours.weight
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(ours)
    gparam.remove_parametrizations(ours, "weight")
    tparam.remove_parametrizations(theirs, "weight")
    assert type(ours) is gnn.Linear and list(ours.state_dict()) == list(theirs.state_dict())
    assert isinstance(ours.weight, gnn.Parameter)
    _close(ours.weight, theirs.weight)


def test_parametrization_errors_match():
    for lib, param, ours in ((torch, tparam, _linear_pair()[1]), (tgrad, gparam, _linear_pair()[0])):
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
            param.register_parametrization(ours, "nope", _symmetric(lib))

        class Shrink(lib.nn.Module):
            def forward(self, X):
                return X[:1]
        with pytest.raises(ValueError, match="may not change the shape"):
            param.register_parametrization(ours, "weight", Shrink())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            param.remove_parametrizations(ours, "weight")
        assert type(ours).__name__ == "Linear"


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches(dim):
    ours, theirs = _linear_pair()
    GP.weight_norm(ours, dim=dim)
    TP.weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        _close(ours.state_dict()[k], v)
    _forward_and_grads(ours, theirs, torch.randn(3, 5, dtype=torch.float64))


@pytest.mark.parametrize("make,dim", [(lambda lib: lib.nn.Linear(5, 4), None),
                                      (lambda lib: lib.nn.Conv2d(2, 3, 3), None),
                                      (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), None),
                                      (lambda lib: lib.nn.Linear(5, 4), 1)])
def test_spectral_norm_matches_with_the_same_power_vectors(make, dim):
    torch.manual_seed(1)
    theirs, ours = make(torch).double(), make(tgrad).double()
    _copy_weights(ours, theirs)
    TP.spectral_norm(theirs, dim=dim)
    GP.spectral_norm(ours, dim=dim)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: _g(v) for k, v in theirs.state_dict().items()})
    x = torch.randn((2, 5) if isinstance(theirs, torch.nn.Linear) else (1, 2, 6, 6), dtype=torch.float64)
    _forward_and_grads(ours, theirs, x)  # training: one power step moves _u, _v
    for k, v in theirs.state_dict().items():
        _close(ours.state_dict()[k], v)
    ours.eval(), theirs.eval()
    before = ours.parametrizations.weight[0]._u.tolist()
    _close(ours.weight, theirs.weight)
    assert ours.parametrizations.weight[0]._u.tolist() == before


def test_spectral_norm_errors_and_vectors():
    for lib, P in ((torch, TP), (tgrad, GP)):
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
            P.spectral_norm(lib.nn.Linear(2, 2), name="nope")
        with pytest.raises(IndexError, match="Dimension out of range"):
            P.spectral_norm(lib.nn.Linear(2, 2), dim=2)
        with pytest.raises(ValueError, match="n_power_iterations to be positive"):
            P.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0)
    ours, theirs = gnn.Linear(3, 1).double(), torch.nn.Linear(3, 1).double()
    _copy_weights(ours, theirs)
    ours.register_parameter("scale", gnn.Parameter(tgrad.tensor([3.0, -4.0], dtype=tgrad.float64)))
    GP.spectral_norm(ours, name="scale")  # a 1-D tensor is normalized
    assert ours.scale.tolist() == pytest.approx([0.6, -0.8])


def test_hook_based_weight_norm_matches():
    ours, theirs = _linear_pair()
    with pytest.warns(FutureWarning, match="deprecated"):
        tgrad.nn.utils.weight_norm(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(theirs)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            torch.nn.utils.weight_norm(theirs)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
            tgrad.nn.utils.weight_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "weight_g", "weight_v"]
    _forward_and_grads(ours, theirs, torch.randn(3, 5, dtype=torch.float64))
    tgrad.nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight, theirs.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        tgrad.nn.utils.remove_weight_norm(ours)


@pytest.mark.parametrize("make", [lambda lib: lib.nn.Linear(5, 4), lambda lib: lib.nn.ConvTranspose2d(2, 3, 3)])
def test_hook_based_spectral_norm_matches(make):
    torch.manual_seed(2)
    theirs, ours = make(torch).double(), make(tgrad).double()
    _copy_weights(ours, theirs)
    torch.nn.utils.spectral_norm(theirs)
    tgrad.nn.utils.spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: _g(v) for k, v in theirs.state_dict().items()})
    x = torch.randn((2, 5) if isinstance(theirs, torch.nn.Linear) else (1, 2, 4, 4), dtype=torch.float64)
    for _ in range(2):  # each training forward takes one power step
        for m in (ours, theirs):
            m.zero_grad()
        _forward_and_grads(ours, theirs, x)
    for k, v in theirs.state_dict().items():
        _close(ours.state_dict()[k], v)
    for lib, m in ((torch, theirs), (tgrad, ours)):
        with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
            lib.nn.utils.spectral_norm(m)
    ours.eval(), theirs.eval()
    torch.nn.utils.remove_spectral_norm(theirs)
    tgrad.nn.utils.remove_spectral_norm(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _close(ours.weight, theirs.weight)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        tgrad.nn.utils.remove_spectral_norm(ours)
