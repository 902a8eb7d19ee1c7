"""The later activation and loss modules and functionals against PyTorch in float64 on odd sizes:
forward values, gradients for a random upstream gradient (every differentiable input), reprs,
state dicts, errors, the legacy size_average/reduce arguments, and gumbel_softmax's sampling."""
import math
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import run, uniform64
from support.torch_audit import AtenRecorder

X = uniform64((3, 5, 4, 3), -3, 3, 1)


@pytest.mark.parametrize("name,kwargs", [("ELU", {}), ("ELU", dict(alpha=0.4)), ("Softplus", {}),
                                         ("Softplus", dict(beta=2.0, threshold=1.5)), ("Mish", {}),
                                         ("Hardswish", {}), ("Softmax2d", {}), ("Softmin", dict(dim=1)),
                                         ("GLU", dict(dim=2)), ("GLU", {})], ids=str)
def test_activation_modules(name, kwargs):
    x = X if name != "GLU" or kwargs else uniform64((3, 5, 4), -3, 3, 2)
    tm, gm = getattr(torch.nn, name)(**kwargs), getattr(nn, name)(**kwargs)
    assert repr(gm) == repr(tm)
    run(tm, gm, [x])


def test_activation_edge_values():
    edge = torch.tensor([-3.0, 3.0, 0.0, -0.0, 25.0, -40.0, 1e-8], dtype=torch.float64)
    for fn in ("mish", "hardswish"):
        run(getattr(TF, fn), getattr(F, fn), [edge])
    x = uniform64((4, 6), -4, 4, 5)
    for fn in ("mish", "hardswish"):  # in place on a non-leaf: the graph is rebased, as PyTorch's
        run(lambda t: getattr(TF, fn)(t * 1, inplace=True), lambda t: getattr(F, fn)(t * 1, inplace=True), [x])
        got = getattr(F, fn)(tgrad.from_torch(x.clone()), inplace=True)
        torch.testing.assert_close(got.torch(), getattr(TF, fn)(x), rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        F.mish(tgrad.ones(2, requires_grad=True), inplace=True)


@pytest.mark.parametrize("shape,num", [((3, 5, 4), 5), ((3, 5, 4), 1), ((7,), 1), ((2, 5), 5), ((), 1)], ids=str)
def test_prelu(shape, num):
    x = uniform64(shape, -2, 2, 3)
    tm, gm = torch.nn.PReLU(num, dtype=torch.float64), nn.PReLU(num, dtype=tgrad.float64)
    w = uniform64((num,), 0, 1, 4)
    with torch.no_grad():
        tm.weight.copy_(w)
    gm.weight.data = tgrad.from_torch(w.clone())
    assert repr(gm) == repr(tm) and list(gm.state_dict()) == ["weight"]
    tout, gout = tm(x.clone().requires_grad_()), None
    gx = tgrad.from_torch(x.clone()).requires_grad_()
    gout = gm(gx)
    torch.testing.assert_close(gout.torch(), tout.detach(), rtol=1e-12, atol=1e-14)
    up = uniform64(tuple(tout.shape), -1, 1, 6)
    tout.backward(up)
    gout.backward(tgrad.from_torch(up))
    torch.testing.assert_close(gm.weight.grad.torch(), tm.weight.grad, rtol=1e-10, atol=1e-12)
    assert float(nn.PReLU().weight) == 0.25
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        nn.PReLU(3)(tgrad.ones(2, 4))


def test_functional_distances():
    a, b = uniform64((5, 7), -2, 2, 7), uniform64((5, 7), -2, 2, 8)
    run(TF.normalize, F.normalize, [a])
    run(lambda x: TF.normalize(x, p=1.0, dim=0), lambda x: F.normalize(x, p=1.0, dim=0), [a])
    run(TF.cosine_similarity, F.cosine_similarity, [a, b])
    run(lambda x, y: TF.cosine_similarity(x, y, dim=-1), lambda x, y: F.cosine_similarity(x, y, dim=-1),
          [a, uniform64((1, 7), -2, 2, 9)])  # broadcasting
    run(TF.pairwise_distance, F.pairwise_distance, [a, b])
    run(lambda x, y: TF.pairwise_distance(x, y, p=1.0, keepdim=True),
          lambda x, y: F.pairwise_distance(x, y, p=1.0, keepdim=True), [a, b])
    run(lambda x, y: TF.pairwise_distance(x, y, p=math.inf), lambda x, y: F.pairwise_distance(x, y, p=math.inf),
          [a, b])
    zero = torch.zeros(2, 3, dtype=torch.float64)
    run(TF.normalize, F.normalize, [zero])  # eps keeps 0 / 0 away


def test_glu_softmin_errors_and_defaults():
    with pytest.raises(RuntimeError, match="^Halving dimension must be even, but dimension 1 is size 5$"):
        F.glu(tgrad.ones(2, 5), 1)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin has been deprecated"):
        got = F.softmin(tgrad.from_torch(X[0, 0].clone()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(got.torch(), TF.softmin(X[0, 0]), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="^Softmax2d: expected input to be 3D or 4D, got 2D instead$"):
        nn.Softmax2d()(tgrad.ones(2, 3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    inp = uniform64((4, 5), -3, 0, 10)
    target = uniform64((4, 5), 0, 1, 11)
    if log_target:
        target = target.log()
    else:
        target[0, 1] = 0.0  # xlogy: zero where the target is zero
    grads = [0] if not log_target else None
    ctx = pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss") if reduction == "mean" \
        else warnings.catch_warnings()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(lambda x, t: TF.kl_div(x, t, reduction=reduction, log_target=log_target),
              lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target), [inp, target], grads)
    with ctx:
        nn.KLDivLoss(reduction=reduction, log_target=log_target)(tgrad.from_torch(inp), tgrad.from_torch(target))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_pair_and_triplet_losses(reduction):
    a, b, c = (uniform64((6, 5), -1, 1, s) for s in (20, 21, 22))
    y = torch.tensor([1, -1, 1, -1, -1, 1], dtype=torch.float64)
    for margin in (0.0, 0.3):
        run(torch.nn.CosineEmbeddingLoss(margin, reduction=reduction),
              nn.CosineEmbeddingLoss(margin, reduction=reduction), [a, b, y], [0, 1])
        run(torch.nn.MarginRankingLoss(margin, reduction=reduction),
              nn.MarginRankingLoss(margin, reduction=reduction), [a[:, 0], b[:, 0], y], [0, 1])
    run(torch.nn.CosineEmbeddingLoss(reduction=reduction), nn.CosineEmbeddingLoss(reduction=reduction),
          [a[0], b[0], y[:1].reshape(())], [0, 1])  # 1-D inputs, a 0-d target
    for kwargs in ({}, dict(margin=0.5, p=1.0, swap=True), dict(margin=2.0, eps=1e-3)):
        run(torch.nn.TripletMarginLoss(**kwargs, reduction=reduction),
              nn.TripletMarginLoss(**kwargs, reduction=reduction), [a, b, c])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_and_poisson_nll(reduction):
    mu, target = uniform64((5, 3), -1, 1, 30), uniform64((5, 3), -1, 1, 31)
    var = uniform64((5, 3), 0.1, 2, 32)
    var[0, 0] = 1e-9  # clamped to eps, the gradient passing through
    for v, full in ((var, False), (var, True), (var[:, 0], False), (var[:, :1], True)):
        run(torch.nn.GaussianNLLLoss(full=full, reduction=reduction),
              nn.GaussianNLLLoss(full=full, reduction=reduction), [mu, target, v.clone()])
    counts = torch.tensor([[0, 1, 2], [3, 0, 5], [1, 1, 7], [2, 4, 0], [9, 1, 2]], dtype=torch.float64)
    rate = uniform64((5, 3), 0.1, 3, 33)
    for log_input, full in ((True, False), (True, True), (False, False), (False, True)):
        x = rate.log() if log_input else rate
        run(torch.nn.PoissonNLLLoss(log_input, full, reduction=reduction),
              nn.PoissonNLLLoss(log_input, full, reduction=reduction), [x, counts], [0])


def test_loss_errors_match_torch():
    ones = tgrad.ones(3, 2)
    cases = [
        (lambda m: m.GaussianNLLLoss()(*(m_ones(m) for _ in range(2)), m_ones(m, 3, 3)), ValueError),
        (lambda m: m.GaussianNLLLoss()(m_ones(m), m_ones(m), -m_ones(m)), ValueError),
        (lambda m: m.TripletMarginLoss(margin=0.0), ValueError),
        (lambda m: m.TripletMarginLoss()(m_ones(m), m_ones(m), m_ones(m, 2)), RuntimeError),
        (lambda m: m.MSELoss(reduction="avg")(m_ones(m), m_ones(m)), ValueError),  # raised by the call
        (lambda m: m.CosineEmbeddingLoss(reduction="avg")(m_ones(m), m_ones(m), m_ones(m, 3)), ValueError),
    ]
    for fn, exc in cases:
        with pytest.raises(exc) as ref:
            fn(torch.nn)
        with pytest.raises(exc) as got:
            fn(nn)
        assert str(got.value).split(" but ")[0] == str(ref.value).split(" but ")[0]
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.kl_div(ones, ones, reduction="avg")


def m_ones(m, *shape):
    lib = torch if m is torch.nn else tgrad
    return lib.ones(*(shape or (3, 2)), dtype=lib.float64)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss")  # KLDivLoss, as in PyTorch
@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True), (False, True)])
def test_legacy_size_average_and_reduce(size_average, reduce):
    x, y = uniform64((4, 3), -1, 1, 40), uniform64((4, 3), -1, 1, 41)
    labels = torch.tensor([0, 2, 1, 2])
    modules = [("MSELoss", (x, y)), ("L1Loss", (x, y)), ("SmoothL1Loss", (x, y)), ("BCEWithLogitsLoss", (x, y.abs())),
               ("BCELoss", (x.sigmoid(), y.abs())), ("CrossEntropyLoss", (x, labels)), ("NLLLoss", (x, labels)),
               ("KLDivLoss", (x, y.abs())), ("PoissonNLLLoss", (x, y.abs())),
               ("MarginRankingLoss", (x[:, 0], y[:, 0], torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64))),
               ("CosineEmbeddingLoss", (x, y, torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64))),
               ("TripletMarginLoss", (x, y, y.flip(0)))]
    for name, args in modules:
        with pytest.warns(UserWarning, match="^size_average and reduce args will be deprecated, please use "
                                             "reduction='(mean|sum|none)' instead.$") as record:
            gm = getattr(nn, name)(size_average=size_average, reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tm = getattr(torch.nn, name)(size_average=size_average, reduce=reduce)
        assert gm.reduction == tm.reduction, name
        assert str(record[0].message).endswith(f"reduction='{tm.reduction}' instead.")
        run(tm, gm, list(args), [0], rtol=1e-9, atol=1e-12)
    # and the functional forms
    for fn, args in [("kl_div", (x, y.abs())), ("poisson_nll_loss", (x, y.abs())),
                     ("margin_ranking_loss", (x[:, 0], y[:, 0], torch.ones(4, dtype=torch.float64))),
                     ("triplet_margin_loss", (x, y, y.flip(0)))]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(lambda *a: getattr(TF, fn)(*a, size_average=size_average, reduce=reduce),
                  lambda *a: getattr(F, fn)(*a, size_average=size_average, reduce=reduce), list(args), [0])


def test_gumbel_softmax():
    logits = tgrad.from_torch(torch.tensor([[0.5, -1.0, 2.0, 0.0]], dtype=torch.float64).repeat(4000, 1))
    tgrad.manual_seed(3)
    soft = F.gumbel_softmax(logits, tau=0.5)
    tgrad.manual_seed(3)
    again = F.gumbel_softmax(logits, tau=0.5)
    assert torch.equal(soft.torch(), again.torch())  # Philox: reproducible from the seed
    torch.testing.assert_close(soft.torch().sum(-1), torch.ones(4000, dtype=torch.float64), rtol=1e-12, atol=1e-12)
    # the argmax of a Gumbel-perturbed logit vector is a sample of softmax(logits)
    freq = torch.bincount(soft.torch().argmax(-1), minlength=4).double() / 4000
    torch.testing.assert_close(freq, torch.softmax(logits.torch()[0], -1), rtol=0, atol=0.03)
    x = logits[:7].detach().requires_grad_()
    hard = F.gumbel_softmax(x, hard=True, dim=-1)
    h = hard.torch()
    assert torch.equal(h.sum(-1), torch.ones(7, dtype=torch.float64)) and set(h.flatten().tolist()) <= {0.0, 1.0}
    up = tgrad.from_torch(uniform64((7, 4), -1, 1, 50))
    (hard * up).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0  # the soft sample's gradient
    y = F.gumbel_softmax(logits[:5].t(), hard=True, dim=0)  # another dim
    assert torch.equal(y.torch().sum(0), torch.ones(5, dtype=torch.float64))


def test_forward_and_backward_compute_nothing_in_torch():
    a, b, c = (tgrad.from_torch(uniform64((6, 4), -1, 1, s)).requires_grad_() for s in (60, 61, 62))
    y = tgrad.from_torch(torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=torch.float64))
    with AtenRecorder() as rec:
        losses = [nn.Mish()(a).sum(), nn.Hardswish()(a).sum(), nn.PReLU(4, dtype=tgrad.float64)(a).sum(),
                  nn.GLU()(a).sum(), nn.Softmin(1)(a).sum(), F.normalize(a).sum(),
                  F.cosine_similarity(a, b).sum(), F.pairwise_distance(a, b).sum(),
                  nn.KLDivLoss(reduction="batchmean")(a, b.abs()), nn.CosineEmbeddingLoss(0.2)(a, b, y),
                  nn.MarginRankingLoss()(a[:, 0], b[:, 0], y), nn.TripletMarginLoss(swap=True)(a, b, c),
                  nn.GaussianNLLLoss(full=True)(a, b, c.abs()), nn.PoissonNLLLoss(full=True)(a, b.abs() * 3),
                  F.gumbel_softmax(a, hard=True).sum()]
        sum(losses).backward()
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
