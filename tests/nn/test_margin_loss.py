"""The margin losses (soft margin, hinge embedding, multi-class and multi-label margin, multi-label
soft margin) and their modules against PyTorch in float64: values for every reduction, input
gradients for a random upstream gradient, second derivatives (where PyTorch has them), state dicts and reprs, errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import compare_double_backward, make_pair, raises, run, uniform64

SIGNS = torch.tensor([[1., -1., 1., 1., -1.], [-1., -1., 1., -1., 1.], [1., 1., -1., 1., 1.]])
CLASSES = torch.tensor([2, 0, 4])
LABELS = torch.tensor([[3, 0, -1, 1, 2], [4, 1, 2, 0, 3], [-1, 1, 1, 2, 0]])  # (the last: no label)


def _t(x):
    return tgrad.from_torch(x.clone())


def _cases():
    w = uniform64((5,), 0.5, 1.5, 3)
    return [
        ("soft_margin", lambda F, x, red: F.soft_margin_loss(x, SIGNS if F is TF else _t(SIGNS), reduction=red)),
        ("hinge_embedding", lambda F, x, red: F.hinge_embedding_loss(x, SIGNS if F is TF else _t(SIGNS), margin=0.7,
                                                                     reduction=red)),
        ("multi_margin", lambda F, x, red: F.multi_margin_loss(x, CLASSES if F is TF else _t(CLASSES),
                                                               reduction=red)),
        ("multi_margin_p2_weighted", lambda F, x, red: F.multi_margin_loss(
            x, CLASSES if F is TF else _t(CLASSES), p=2, margin=0.5, weight=w if F is TF else _t(w), reduction=red)),
        ("multilabel_margin", lambda F, x, red: F.multilabel_margin_loss(x, LABELS if F is TF else _t(LABELS),
                                                                         reduction=red)),
        ("multilabel_soft_margin", lambda F, x, red: F.multilabel_soft_margin_loss(
            x, (SIGNS > 0).double() if F is TF else _t((SIGNS > 0).double()), weight=w if F is TF else _t(w),
            reduction=red)),
    ]


CASES = _cases()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_margin_loss_matches_torch(name, fn, reduction):
    run(lambda x: fn(TF, x, reduction), lambda x: fn(F, x, reduction), [uniform64((3, 5), seed=1)])


SECOND = [c for c in CASES if "multi_margin" not in c[0] and c[0] != "multilabel_margin"]  # (none in PyTorch)


@pytest.mark.parametrize("name,fn", SECOND, ids=[c[0] for c in SECOND])
def test_margin_loss_second_derivatives(name, fn):
    # squared, so the second derivative of a piecewise-linear loss is not zero everywhere
    compare_double_backward(lambda x: fn(F, x, "none") ** 2, lambda x: fn(TF, x, "none") ** 2,
                            [make_pair((3, 5), tgrad.float64, seed=2)])


def test_unbatched_inputs():
    x = uniform64((5,), seed=4)
    for red in ("none", "mean"):
        run(lambda x: TF.multi_margin_loss(x, torch.tensor(3), reduction=red),
            lambda x: F.multi_margin_loss(x, tgrad.tensor(3), reduction=red), [x])
        run(lambda x: TF.multi_margin_loss(x, torch.tensor([3]), reduction=red),
            lambda x: F.multi_margin_loss(x, tgrad.tensor([3]), reduction=red), [x])
        run(lambda x: TF.multilabel_margin_loss(x, LABELS[0], reduction=red),
            lambda x: F.multilabel_margin_loss(x, _t(LABELS[0]), reduction=red), [x])
        run(lambda x: TF.multilabel_soft_margin_loss(x, SIGNS[0], reduction=red),
            lambda x: F.multilabel_soft_margin_loss(x, _t(SIGNS[0]), reduction=red), [x])


MODULES = [("SoftMarginLoss", {}, SIGNS), ("HingeEmbeddingLoss", {"margin": 0.3, "reduction": "sum"}, SIGNS),
           ("MultiMarginLoss", {"p": 2, "weight": uniform64((5,), 0.5, 1.5, 6)}, CLASSES),
           ("MultiLabelMarginLoss", {"reduction": "none"}, LABELS),
           ("MultiLabelSoftMarginLoss", {"weight": uniform64((5,), 0.5, 1.5, 7)}, (SIGNS > 0).double())]


@pytest.mark.parametrize("kind,kw,target", MODULES, ids=[m[0] for m in MODULES])
def test_margin_loss_modules(kind, kw, target):
    ref = getattr(torch.nn, kind)(**kw)
    ours = getattr(nn, kind)(**{k: _t(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
    assert list(ours.state_dict()) == list(ref.state_dict()) and repr(ours) == repr(ref)
    run(lambda x: ref(x, target), lambda x: ours(x, _t(target)), [uniform64((3, 5), seed=8)])


def test_margin_loss_errors_are_torchs():
    x = tgrad.ones(3, 4)
    with raises(RuntimeError, "target out of range"):
        F.multi_margin_loss(x, tgrad.tensor([0, 1, 4]))
    with raises(ValueError, "only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, tgrad.tensor([0, 1, 3]), p=3)
    with raises(RuntimeError, "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                              "samples (batch size). Expected target size [3], but got [2]. Input has shape [3, 4]."):
        F.multi_margin_loss(x, tgrad.tensor([0, 1]))
    with raises(RuntimeError, "inconsistent weight size, expected 4 but got [3]"):
        F.multi_margin_loss(x, tgrad.tensor([0, 1, 3]), weight=tgrad.ones(3))
    with raises(RuntimeError, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"):
        F.multi_margin_loss(tgrad.ones(2, 3, 4), tgrad.tensor([0, 1]))
    with raises(RuntimeError, "argument #2 'target' is out of range"):
        F.multilabel_margin_loss(x, tgrad.tensor([[0, 1, -1, 4]] * 3))
    with raises(RuntimeError, "inconsistent target size: [3, 3] for input of size: [3, 4]"):
        F.multilabel_margin_loss(x, tgrad.tensor([[0, 1, -1]] * 3))
    with raises(ValueError, "bad is not valid"):
        F.multilabel_soft_margin_loss(x, x, reduction="bad")
    with raises(ValueError, "bad is not a valid value for reduction"):
        F.soft_margin_loss(x, x, reduction="bad")
    with raises(RuntimeError, "The function 'soft_margin_loss' is not differentiable with respect to argument "
                              "'target'. This input cannot have requires_grad True."):
        F.soft_margin_loss(x, tgrad.ones(3, 4, requires_grad=True))
    with tgrad.no_grad():
        F.soft_margin_loss(x, tgrad.ones(3, 4, requires_grad=True))
    with raises(ValueError, "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"):
        nn.MultiMarginLoss(weight=tgrad.ones(2, 2))
