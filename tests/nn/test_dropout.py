"""``dropout3d`` and the alpha dropouts (``alpha_dropout``, ``feature_alpha_dropout``) and their
modules. The masks are random, so each test reads the mask back from the output and checks
PyTorch's formula on it (values, gradient for a random upstream gradient), the keep rate, the
moments an alpha dropout keeps, and evaluation / p = 0 / p = 1 / errors / reprs as PyTorch's."""
import math
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import raises, uniform64

ALPHA = 1.7580993408473766


def _pair(shape, seed=0):
    x = uniform64(shape, seed=seed)
    return tgrad.from_torch(x.clone()).requires_grad_(), x


@pytest.mark.parametrize("feature,shape", [(False, (40, 50)), (True, (30, 20, 3, 2)), (True, (40, 17))])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_formula_mask_and_gradient(feature, shape, p):
    tgrad.manual_seed(3)
    x, xr = _pair(shape)
    y = (F.feature_alpha_dropout if feature else F.alpha_dropout)(x, p, training=True)
    a = 1 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    out = y.torch()
    dropped = torch.isclose(out, torch.tensor(ALPHA * a * (p - 1), dtype=out.dtype), rtol=0, atol=1e-12)
    kept = ~dropped
    torch.testing.assert_close(out[kept], xr[kept] * a + ALPHA * a * p, rtol=1e-12, atol=1e-12)
    if feature:  # one draw per (sample, channel)
        per_channel = dropped.reshape(shape[0], shape[1], -1)
        assert bool((per_channel.all(-1) | ~per_channel.any(-1)).all())
        rate = per_channel[..., 0].double().mean().item()
    else:
        rate = dropped.double().mean().item()
    assert abs(rate - p) < 0.1
    g = uniform64(shape, -1, 1, seed=7)
    y.backward(tgrad.from_torch(g.clone()))
    torch.testing.assert_close(x.grad.torch(), g * kept * a, rtol=1e-12, atol=1e-12)


def test_alpha_dropout_keeps_zero_mean_unit_variance():
    tgrad.manual_seed(0)
    x = tgrad.randn(400, 500, dtype=tgrad.float64)
    y = F.alpha_dropout(x, 0.3, training=True).torch()
    assert abs(y.mean().item()) < 0.02 and abs(y.var().item() - 1) < 0.02


@pytest.mark.parametrize("fn", [F.alpha_dropout, F.feature_alpha_dropout])
def test_alpha_dropout_identity_zero_and_errors(fn):
    x, xr = _pair((3, 4))
    assert fn(x, 0.5) is x and fn(x, 0.5, training=False) is x and fn(x, 0.0, training=True) is x
    z = fn(x, 1.0, training=True)
    assert z.tolist() == [[0.0] * 4] * 3
    with raises(ValueError, "dropout probability has to be between 0 and 1, but got 2.0"):
        fn(x, 2.0, training=True)
    y = x.detach() * 1.0
    tgrad.manual_seed(4)
    out = fn(y, 0.5, training=True, inplace=True)
    tgrad.manual_seed(4)
    assert out is y and out.tolist() == fn(x, 0.5, training=True).tolist()
    with raises(RuntimeError, "Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(tgrad.ones(3), training=True)


@pytest.mark.parametrize("shape", [(6, 5, 2, 3, 2), (7, 2, 3, 2)])
def test_dropout3d_zeroes_whole_channels(shape):
    tgrad.manual_seed(1)
    x, xr = _pair(shape)
    y = F.dropout3d(x, 0.4)
    out = y.torch()
    lead = 2 if len(shape) == 5 else 1
    per = out.reshape(math.prod(shape[:lead]), -1)
    ref = xr.reshape(per.shape)
    kept = per.ne(0).all(-1)
    assert bool((per[~kept] == 0).all()) and 0 < int(kept.sum()) < per.shape[0]
    torch.testing.assert_close(per[kept], ref[kept] / 0.6, rtol=1e-12, atol=1e-12)
    g = uniform64(shape, -1, 1, seed=2)
    y.backward(tgrad.from_torch(g.clone()))
    torch.testing.assert_close(x.grad.torch(), g * (out != 0) / 0.6, rtol=1e-12, atol=1e-12)
    assert F.dropout3d(x, 0.4, training=False) is x


def test_dropout3d_warns_as_torch_on_other_ranks():
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        F.dropout3d(tgrad.ones(2, 3), 0.5)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        TF.dropout3d(torch.ones(2, 3), 0.5)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


@pytest.mark.parametrize("kind", ["Dropout3d", "AlphaDropout", "FeatureAlphaDropout"])
def test_dropout_modules(kind):
    for kw in ({}, {"p": 0.2, "inplace": True}):
        assert repr(getattr(nn, kind)(**kw)) == repr(getattr(torch.nn, kind)(**kw))
    m = getattr(nn, kind)(0.5).eval()
    x = tgrad.ones(2, 3, 2, 2, 2)
    assert m(x) is x and list(m.state_dict()) == []
    tgrad.manual_seed(2)
    y = m.train()(x)
    tgrad.manual_seed(2)
    assert y.tolist() == getattr(F, {"Dropout3d": "dropout3d", "AlphaDropout": "alpha_dropout",
                                     "FeatureAlphaDropout": "feature_alpha_dropout"}[kind])(x, 0.5, True).tolist()
    with raises(ValueError, "dropout probability has to be between 0 and 1, but got 1.5"):
        getattr(nn, kind)(1.5)
