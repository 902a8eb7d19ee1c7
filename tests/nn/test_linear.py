"""``F.bilinear`` and ``nn.Bilinear`` against PyTorch: values, first and second derivatives in
float64, the module's state-dict keys, repr and initialisation bounds, PyTorch's errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.modules import assert_param_grads, backward_both, module_pair
from support.reference import compare_second_order, leaves, raises, run, uniform64


@pytest.mark.parametrize("lead,bias", [((3,), True), ((2, 3), False), ((1,), True), ((0,), True)])
def test_bilinear_matches_torch(lead, bias):
    x1, x2, w, b = uniform64(lead + (4,), seed=1), uniform64(lead + (5,), seed=2), uniform64((3, 4, 5), seed=3), \
        uniform64((3,), seed=4) if bias else None
    run(TF.bilinear, F.bilinear, [x1, x2, w, b])


def test_bilinear_second_derivatives():
    compare_second_order(F.bilinear, TF.bilinear, [(3, 4), (3, 5), (2, 4, 5), (2,)])


def test_bilinear_module_matches_torch():
    ref, mod = module_pair("Bilinear", 4, 5, 3)
    assert list(mod.state_dict()) == list(ref.state_dict()) and repr(mod) == repr(ref)
    (a, ra), (b, rb) = leaves([(2, 6, 4), (2, 6, 5)])
    out, r = mod(a, b), ref(ra, rb)
    backward_both([out], [r])
    assert_param_grads(ref, mod)
    assert repr(nn.Bilinear(2, 2, 1, bias=False)) == repr(torch.nn.Bilinear(2, 2, 1, bias=False))


def test_bilinear_module_initialisation_bound():
    tgrad.manual_seed(0)
    m = nn.Bilinear(16, 3, 40)
    bound = 1 / 16 ** 0.5
    for p in (m.weight, m.bias):
        assert float(p.abs().max()) <= bound and float(p.abs().max()) > 0.8 * bound


def test_bilinear_errors_are_torchs():
    w = tgrad.ones(3, 4, 5)
    with raises(RuntimeError, "bilinear(): input dimensions do not match: got 2 and 3"):
        F.bilinear(tgrad.ones(2, 4), tgrad.ones(2, 5, 1), w)
    with raises(RuntimeError, "bilinear(): input batch dimensions do not match at dim 0: got 2 and 3"):
        F.bilinear(tgrad.ones(2, 4), tgrad.ones(3, 5), w)
    with raises(RuntimeError, "bilinear(): input1 size does not match weight size: got 3 but expected 4"):
        F.bilinear(tgrad.ones(2, 3), tgrad.ones(2, 5), w)
    with raises(RuntimeError, "bilinear(): input2 size does not match weight size: got 6 but expected 5"):
        F.bilinear(tgrad.ones(2, 4), tgrad.ones(2, 6), w)
    with raises(RuntimeError, "bilinear(): bias size does not match weight size: got 2 but expected 3"):
        F.bilinear(tgrad.ones(2, 4), tgrad.ones(2, 5), w, tgrad.ones(2))
    with raises(ValueError, "in1_features must be > 0, but got (in1_features=0)"):
        nn.Bilinear(0, 2, 2)
