"""The losses of tgrad.nn.functional against torch.nn.functional in float64 on the same numbers,
with a random upstream gradient: cross_entropy (class and probability targets, weights,
ignore_index, label_smoothing, spatial dims), nll_loss, and the elementwise losses, in float32 and
float64 with every reduction; the kernels' chunked and multi-program paths (forced by small
blocks); double backward; launch counts; bad targets and inputs raising PyTorch's errors. Then the
other loss modules (KL divergence, the pair and triplet losses, Gaussian and Poisson NLL), their
errors, the legacy size_average/reduce arguments, and that torch computes none of them."""
import math
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import assert_close, make_pair, run, uniform64
from support.reference import compare_backward as compare, compare_double_backward
from support.torch_audit import AtenRecorder
from tgrad.kernels.losses import cross_entropy as KCE
from tgrad.kernels.losses import elementwise as KL

DTYPES = [tgrad.float32, tgrad.float64]
REDUCTIONS = ["mean", "sum", "none"]


def classes(shape, C, seed=0, ignore=None):
    t = (uniform64(shape, 0, C, seed).floor()).long()
    if ignore is not None:
        t.view(-1)[::3] = ignore  # every third sample ignored
    return tgrad.from_torch(t.clone()), t


def tensor_or_none(t, dtype):
    return (None, None) if t is None else (tgrad.from_torch(t.to(dtype.torch).clone()), t.to(dtype.torch).double())


# ------------------------------------------------------------------------------ cross entropy

CE_CASES = [  # (input shape, kwargs)
    ((6, 5), {}),
    ((7, 5), {"weight": True}),
    ((7, 5), {"ignore_index": 2}),
    ((9, 4), {"ignore_index": -100, "weight": True, "label_smoothing": 0.15}),
    ((5, 6), {"label_smoothing": 0.3}),
    ((3, 5, 2, 3), {"weight": True, "ignore_index": 1}),
    ((5,), {"label_smoothing": 0.1}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", range(len(CE_CASES)))
def test_cross_entropy_class_targets(dtype, reduction, case):
    shape, kw = CE_CASES[case]
    kw = dict(kw)
    x, xr = make_pair(shape, dtype, -3, 3, seed=case)
    C = shape[1] if len(shape) > 1 else shape[0]
    ignore = kw.get("ignore_index")
    t, tr = classes(shape[:1] + shape[2:] if len(shape) > 1 else (), C, case, ignore)
    w, wr = tensor_or_none(uniform64((C,), 0.2, 2.0, 9) if kw.pop("weight", False) else None, dtype)
    out = F.cross_entropy(x, t, weight=w, reduction=reduction, **kw)
    ref = TF.cross_entropy(xr, tr, weight=wr, reduction=reduction, **kw)
    compare(out, ref, [(x, xr)], dtype)
    assert out.grad_fn is None or out.grad_fn.name() == "NllLossBackward0"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,smoothing,weight", [((6, 5), 0.0, False), ((4, 7, 3), 0.2, True)])
def test_cross_entropy_probability_targets(dtype, reduction, shape, smoothing, weight):
    x, xr = make_pair(shape, dtype, -3, 3, seed=1)
    p, pr = make_pair(shape, dtype, 0, 1, seed=2)  # any non-negative targets; gradients flow to them
    w, wr = tensor_or_none(uniform64(shape[1:2], 0.2, 2.0, 9) if weight else None, dtype)
    out = F.cross_entropy(x, p, weight=w, reduction=reduction, label_smoothing=smoothing)
    ref = TF.cross_entropy(xr, pr, weight=wr, reduction=reduction, label_smoothing=smoothing)
    compare(out, ref, [(x, xr), (p, pr)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(dtype, reduction):
    x, xr = make_pair((3, 6, 5), dtype, -3, 0, seed=3)
    t, tr = classes((3, 5), 6, 4, ignore=0)
    w, wr = tensor_or_none(uniform64((6,), 0.2, 2.0, 9), dtype)
    out = F.nll_loss(x, t, weight=w, ignore_index=0, reduction=reduction)
    compare(out, TF.nll_loss(xr, tr, weight=wr, ignore_index=0, reduction=reduction), [(x, xr)], dtype)


@pytest.mark.parametrize("target", ["class", "prob"])
def test_cross_entropy_chunked_classes_and_partial_sums(target, monkeypatch):
    """Class rows longer than a block (the online pass) and several programs (partials summed by
    a second launch), forced on the CPU with small blocks; the input is transposed."""
    monkeypatch.setattr(KCE, "block_shape_2d", lambda r, c, d: (4, 8, 4))
    monkeypatch.setattr(KCE, "programs_for", lambda n, d: 3)
    dtype = tgrad.float32
    cast = uniform64((37, 13), -4, 4, 5).to(torch.float32)
    cast[0, 3] = 30.0  # a large score late in the row: the running max must rescale the sums
    x = tgrad.from_torch(cast.clone().t()).requires_grad_()
    xr = cast.double().t().detach().requires_grad_()
    w, wr = tensor_or_none(uniform64((37,), 0.2, 2.0, 9), dtype)
    if target == "class":
        t, tr = classes((13,), 37, 6, ignore=5)
        kw = {"ignore_index": 5, "label_smoothing": 0.1}
    else:
        t, tr = make_pair((13, 37), dtype, 0, 1, seed=7)
        kw = {"label_smoothing": 0.1}
    with tgrad.count_launches() as launches:
        out = F.cross_entropy(x, t, weight=w, **kw)
    compare(out, TF.cross_entropy(xr, tr, weight=wr, **kw), [(x, xr)], dtype)
    assert dict(launches) == {"cross_entropy_fwd_kernel": 1, "finish_sum_kernel": 1}


def test_cross_entropy_launches_once_each_way():
    x = tgrad.randn(8, 10, requires_grad=True)
    t = tgrad.tensor([1, 2, 3, 4, 5, 6, 7, 8])
    with tgrad.count_launches() as fwd:
        loss = F.cross_entropy(x, t, label_smoothing=0.1)
    with tgrad.count_launches() as bwd:
        tgrad.autograd.grad(loss, [x])
    assert dict(fwd) == {"cross_entropy_fwd_kernel": 1} and dict(bwd) == {"cross_entropy_bwd_kernel": 1}


def test_cross_entropy_edge_values():
    # every target ignored: the mean is 0/0 = nan, as in torch, and the gradient is zero
    x = tgrad.randn(3, 4, requires_grad=True)
    loss = F.cross_entropy(x, tgrad.tensor([-100, -100, -100]))
    assert math.isnan(loss.item())
    loss.backward()
    assert x.grad.tolist() == [[0.0] * 4] * 3
    # very large scores stay finite (the row max is subtracted)
    rows = [[1000.0, 0.0, -1000.0], [3000.0, 2999.0, 2998.5]]  # exp() alone would overflow
    big, bigr = tgrad.tensor(rows, dtype=tgrad.float64), torch.tensor(rows, dtype=torch.float64)
    loss = F.cross_entropy(big, tgrad.tensor([0, 2]))
    assert math.isfinite(loss.item())
    assert_close(loss, TF.cross_entropy(bigr, torch.tensor([0, 2])))


@pytest.mark.parametrize("bad", [5, -1, 7])
def test_cross_entropy_out_of_range_target(bad):
    x = tgrad.randn(4, 5, requires_grad=True)
    for fn in (F.cross_entropy, F.nll_loss):
        with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
            fn(x, tgrad.tensor([0, 1, bad, 2]))


def test_cross_entropy_bad_arguments():
    x = tgrad.randn(3, 5)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        F.cross_entropy(x, tgrad.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, tgrad.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3, 2\], got \[3, 3\]"):
        F.cross_entropy(tgrad.randn(3, 5, 2), tgrad.zeros(3, 3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 classes"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), weight=tgrad.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match="^foo is not a valid value for reduction$"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), reduction="foo")
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), weight=tgrad.ones(5, requires_grad=True))


# ------------------------------------------------------------------------------ elementwise losses

ELEMENTWISE = {  # name: (input range, extra kwargs)
    "mse_loss": ((-2, 2), {}), "l1_loss": ((-2, 2), {}), "smooth_l1_loss": ((-2, 2), {"beta": 0.6}),
    "huber_loss": ((-2, 2), {"delta": 0.7}), "binary_cross_entropy": ((0.02, 0.98), {}),
    "binary_cross_entropy_with_logits": ((-4, 4), {}),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_losses(dtype, reduction, name):
    (lo, hi), kw = ELEMENTWISE[name]
    x, xr = make_pair((5, 7), dtype, lo, hi, seed=1)
    y, yr = make_pair((5, 7), dtype, 0, 1, seed=2)  # the target gets a gradient too
    out = getattr(F, name)(x, y, reduction=reduction, **kw)
    compare(out, getattr(TF, name)(xr, yr, reduction=reduction, **kw), [(x, xr), (y, yr)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_binary_cross_entropy(dtype, reduction):
    x, xr = make_pair((4, 6), dtype, 0.02, 0.98, seed=1)
    y, yr = make_pair((4, 6), dtype, 0, 1, seed=2)
    w, wr = tensor_or_none(uniform64((6,), 0.1, 2, 3), dtype)
    out = F.binary_cross_entropy(x, y, weight=w, reduction=reduction)
    compare(out, TF.binary_cross_entropy(xr, yr, weight=wr, reduction=reduction), [(x, xr), (y, yr)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_weight_and_pos_weight(dtype, reduction):
    x, xr = make_pair((6, 4), dtype, -30, 30, seed=1)  # far into both tails: stability
    y, yr = make_pair((6, 4), dtype, 0, 1, seed=2)
    w, wr = tensor_or_none(uniform64((6, 1), 0.1, 2, 3), dtype)
    q, qr = tensor_or_none(uniform64((4,), 0.5, 3, 4), dtype)
    out = F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=q, reduction=reduction)
    ref = TF.binary_cross_entropy_with_logits(xr, yr, weight=wr, pos_weight=qr, reduction=reduction)
    compare(out, ref, [(x, xr), (y, yr)], dtype)


@pytest.mark.parametrize("name,kw", [("smooth_l1_loss", {"beta": 0.0}), ("smooth_l1_loss", {}),
                                     ("huber_loss", {"delta": 2.5}), ("mse_loss", {})])
def test_regression_losses_broadcast_and_strided(name, kw):
    dtype = tgrad.float64
    base, baser = make_pair((7, 5), dtype, -3, 3, seed=1)
    x, xr = base.t(), baser.t()  # (5, 7), transposed
    y, yr = make_pair((1, 7), dtype, -1, 1, seed=2)  # broadcast over the rows: torch warns
    with pytest.warns(UserWarning, match=r"Using a target size \(tgrad.Size\(\[1, 7\]\)\) that is different"):
        out = getattr(F, name)(x, y, **kw)
    with pytest.warns(UserWarning):
        ref = getattr(TF, name)(xr, yr, **kw)
    compare(out, ref, [(base, baser), (y, yr)], dtype)


def test_elementwise_partial_sums_and_launches(monkeypatch):
    x, xr = make_pair((5, 9), tgrad.float64, seed=1)
    y, yr = make_pair((5, 9), tgrad.float64, seed=2)
    with tgrad.count_launches() as fwd:
        loss = F.huber_loss(x, y)
    with tgrad.count_launches() as bwd:
        tgrad.autograd.grad(loss, [x, y])
    assert dict(fwd) == {"loss_fwd_kernel": 1} and dict(bwd) == {"loss_bwd_kernel": 1}
    monkeypatch.setattr(KL, "block_for", lambda n, d: 8)  # 6 blocks over 4 programs: partials
    monkeypatch.setattr(KL, "programs_for", lambda n, d: 4)
    for reduction in ("mean", "sum"):
        assert_close(F.mse_loss(x, y, reduction=reduction), TF.mse_loss(xr, yr, reduction=reduction))


def test_elementwise_losses_bad_inputs():
    x, y = tgrad.rand(3), tgrad.rand(4)
    with pytest.raises(ValueError, match="is different to the input size"):
        F.binary_cross_entropy(x, y)
    with pytest.raises(ValueError, match=r"Target size \(tgrad.Size\(\[4\]\)\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(x, y)
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        F.binary_cross_entropy(tgrad.tensor([0.5, 1.5]), tgrad.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match the size of tensor b \\(4\\)"), \
            pytest.warns(UserWarning):
        F.mse_loss(x, y)
    with pytest.raises(ValueError, match="^sum2 is not a valid value for reduction$"):
        F.l1_loss(x, x, reduction="sum2")
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'pos_weight'"):
        F.binary_cross_entropy_with_logits(x, x, pos_weight=tgrad.ones(3, requires_grad=True))


# ------------------------------------------------------------------------------ double backward

@pytest.mark.parametrize("kind", ["class", "prob", "nll"])
def test_cross_entropy_double_backward(kind):
    x, xr = make_pair((4, 5), tgrad.float64, seed=1)
    w, wr = tensor_or_none(uniform64((5,), 0.2, 2, 3), tgrad.float64)
    if kind == "prob":
        pairs = [(x, xr), make_pair((4, 5), tgrad.float64, 0, 1, seed=2)]
        compare_double_backward(lambda a, p: F.cross_entropy(a, p, w, label_smoothing=0.1),
                                lambda a, p: TF.cross_entropy(a, p, wr, label_smoothing=0.1), pairs,
                                rtol=1e-9, atol=1e-11)
        return
    t, tr = classes((4,), 5, 3, ignore=1)
    if kind == "nll":
        compare_double_backward(lambda a: F.nll_loss(a.tanh(), t, w, ignore_index=1),
                                lambda a: TF.nll_loss(a.tanh(), tr, wr, ignore_index=1), [(x, xr)],
                                rtol=1e-9, atol=1e-11)
    else:
        compare_double_backward(lambda a: F.cross_entropy(a, t, w, ignore_index=1, label_smoothing=0.2),
                                lambda a: TF.cross_entropy(a, tr, wr, ignore_index=1, label_smoothing=0.2), [(x, xr)],
                                rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_double_backward(name):
    (lo, hi), kw = ELEMENTWISE[name]
    pairs = [make_pair((3, 4), tgrad.float64, lo, hi, seed=1), make_pair((3, 4), tgrad.float64, 0, 1, seed=2)]
    compare_double_backward(lambda a, b: getattr(F, name)(a, b, **kw).exp(),
                            lambda a, b: getattr(TF, name)(a, b, **kw).exp(), pairs, rtol=1e-9, atol=1e-11)


def test_probability_target_weight_gradient():
    x, xr = make_pair((3, 4), tgrad.float64, seed=1)
    p, pr = make_pair((3, 4), tgrad.float64, 0, 1, seed=2)
    w, wr = make_pair((4,), tgrad.float64, 0.2, 2, seed=3)
    compare(F.cross_entropy(x, p, w, reduction="sum"), TF.cross_entropy(xr, pr, wr, reduction="sum"),
            [(x, xr), (p, pr), (w, wr)], tgrad.float64)


# ------------------------------------------------------------------------------ the other loss modules

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


def test_forward_and_backward_compute_nothing_in_torch():
    a, b, c = (tgrad.from_torch(uniform64((6, 4), -1, 1, s)).requires_grad_() for s in (60, 61, 62))
    y = tgrad.from_torch(torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=torch.float64))
    with AtenRecorder() as rec:
        losses = [nn.KLDivLoss(reduction="batchmean")(a, b.abs()), nn.CosineEmbeddingLoss(0.2)(a, b, y),
                  nn.MarginRankingLoss()(a[:, 0], b[:, 0], y), nn.TripletMarginLoss(swap=True)(a, b, c),
                  nn.GaussianNLLLoss(full=True)(a, b, c.abs()), nn.PoissonNLLLoss(full=True)(a, b.abs() * 3)]
        sum(losses).backward()
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
