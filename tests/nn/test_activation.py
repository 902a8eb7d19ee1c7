"""The activation modules and functionals (elementwise ones, shrink/threshold, the ones taking a
dim or a parameter: Softmax2d, Softmin, GLU, PReLU, RReLU, gumbel_softmax) and the distance functionals
against PyTorch in float64 (the functionals also in float32), softmax and log_softmax: values,
dtypes, gradients for a random upstream gradient, odd, 0-d and 0-size shapes, special values, reprs,
errors and that torch computes nothing."""
import math
import warnings

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import assert_close, compare_backward, make_pair, run, same, uniform64
from support.torch_audit import AtenRecorder

NAN, INF = float("nan"), float("inf")


SPECIAL = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 6.0, 0.25, -3.0, 7.0], dtype=torch.float64)
X = torch.cat([uniform64((31,), -4, 4, 1), SPECIAL]).reshape(4, 11)
X_NOSPECIAL = uniform64((3, 5, 7), -4, 4, 2)
X4 = uniform64((3, 5, 4, 3), -3, 3, 1)


# ----------------------------------------------------------------------------- functionals in both dtypes

ACTIVATIONS = [(lambda x: F.relu(x), TF.relu), (lambda x: F.gelu(x), TF.gelu),
               (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
               (F.silu, TF.silu), (F.tanh, torch.tanh), (F.sigmoid, torch.sigmoid),
               (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
               (lambda x: F.elu(x, 0.7), lambda x: TF.elu(x, 0.7)),
               (lambda x: F.softplus(x, 2.0, 3.0), lambda x: TF.softplus(x, 2.0, 3.0)),
               (lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1)),
               (lambda x: F.log_softmax(x, 0), lambda x: TF.log_softmax(x, 0)),
               (lambda x: F.softmax(x, -1, dtype=tgrad.float64), lambda x: TF.softmax(x, -1))]


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
@pytest.mark.parametrize("k", range(len(ACTIVATIONS)))
def test_activations_and_softmax(dtype, k):
    fn, ref_fn = ACTIVATIONS[k]
    x, xr = make_pair((3, 5), dtype, -3, 3, seed=k)
    out = fn(x)
    compare_backward(out, ref_fn(xr), [(x, xr)], out.dtype)


@pytest.mark.parametrize("name,args", [("relu", ()), ("silu", ()), ("leaky_relu", (0.3,)), ("elu", (1.5,))])
def test_inplace_activations(name, args):
    x, xr = make_pair((4, 3), tgrad.float64, -2, 2)
    y, yr = x * 1.0, xr * 1.0
    out = getattr(F, name)(y, *args, inplace=True)
    ref = getattr(TF, name)(yr, *args, inplace=True)
    assert out is y
    compare_backward(out, ref, [(x, xr)], tgrad.float64)


def test_softmax_without_dim_warns_and_picks_torchs_dim():
    x, xr = make_pair((3, 4), tgrad.float64)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = F.softmax(x)
    assert_close(out, torch.softmax(xr, 1))


# ----------------------------------------------------------------------------- nn activation modules

# CELU uses alphas exact in float32: PyTorch computes CeluBackward0/1 with 1/alpha rounded to float32 (derivatives.yaml
# alpha.toFloat()), off by ~1e-8 in float64 for an alpha like 0.7; tgrad keeps float64
MODULES = [("ReLU6", (), {}), ("ReLU6", (), dict(inplace=True)), ("SELU", (), {}), ("SELU", (True,), {}),
           ("CELU", (), {}), ("CELU", (0.5,), {}), ("CELU", (0.25,), dict(inplace=True)), ("Hardtanh", (), {}),
           ("Hardtanh", (-0.5, 2.0), {}), ("Hardtanh", (-2.0, 0.25, True), {}), ("Hardsigmoid", (), {}),
           ("Hardsigmoid", (True,), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}),
           ("Threshold", (0.25, -7.0), {}), ("Threshold", (-1.0, 3), dict(inplace=True)),
           ("Hardshrink", (), {}), ("Hardshrink", (1.0,), {}), ("Softshrink", (), {}), ("Softshrink", (0.0,), {}),
           ("Softshrink", (1.5,), {}), ("ELU", (), {}), ("ELU", (), dict(alpha=0.4)), ("Softplus", (), {}),
           ("Softplus", (), dict(beta=2.0, threshold=1.5)), ("Mish", (), {}), ("Hardswish", (), {})]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
@pytest.mark.parametrize("shape", [(3, 5, 7), (), (0, 4)])
def test_activation_modules(name, args, kwargs, shape):
    x = X_NOSPECIAL.reshape(-1)[:math.prod(shape)].reshape(shape).clone()
    mg, mt = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(mg) == repr(mt)
    # in-place modules act on a non-leaf (x * 1), as in a network
    run(lambda a: mt(a * 1), lambda a: mg(a * 1), [x])


@pytest.mark.parametrize("name,kwargs", [("Softmax2d", {}), ("Softmin", dict(dim=1)), ("GLU", dict(dim=2)),
                                         ("GLU", {})], ids=str)
def test_activation_modules_over_a_dim(name, kwargs):
    x = X4 if name != "GLU" or kwargs else uniform64((3, 5, 4), -3, 3, 2)
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


@pytest.mark.parametrize("name,args", [("ReLU6", ()), ("Hardtanh", (-0.5, 2.0)), ("Threshold", (0.25, -7.0)),
                                       ("Threshold", (-1.0, 0.5)), ("Hardshrink", ()), ("Softshrink", ()),
                                       ("LogSigmoid", ()), ("Softsign", ()), ("Tanhshrink", ()), ("SELU", ()),
                                       ("CELU", (0.5,)), ("Hardsigmoid", ())])
def test_activation_special_values(name, args):
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


def test_glu_softmin_errors_and_defaults():
    with pytest.raises(RuntimeError, match="^Halving dimension must be even, but dimension 1 is size 5$"):
        F.glu(tgrad.ones(2, 5), 1)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin has been deprecated"):
        got = F.softmin(tgrad.from_torch(X4[0, 0].clone()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(got.torch(), TF.softmin(X4[0, 0]), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="^Softmax2d: expected input to be 3D or 4D, got 2D instead$"):
        nn.Softmax2d()(tgrad.ones(2, 3))


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


def test_forward_and_backward_compute_nothing_in_torch():
    a, b = (tgrad.from_torch(uniform64((6, 4), -1, 1, s)).requires_grad_() for s in (60, 61))
    with AtenRecorder() as rec:
        outs = [nn.Mish()(a), nn.Hardswish()(a), nn.PReLU(4, dtype=tgrad.float64)(a), nn.GLU()(a), nn.Softmin(1)(a),
                F.normalize(a), F.cosine_similarity(a, b), F.pairwise_distance(a, b), F.gumbel_softmax(a, hard=True)]
        sum(o.sum() for o in outs).backward()
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"


# ----------------------------------------------------------------------------- rrelu

def test_rrelu_eval_is_leaky_relu_of_the_mean_slope():
    for lo, hi in ((1 / 8, 1 / 3), (-0.5, 0.2)):
        run(lambda x: TF.rrelu(x, lo, hi), lambda x: F.rrelu(x, lo, hi), [X_NOSPECIAL])
    m, ref = nn.RReLU(0.1, 0.3).eval(), torch.nn.RReLU(0.1, 0.3).eval()
    assert repr(m) == repr(ref) and repr(nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))
    run(ref, m, [X_NOSPECIAL])


def test_rrelu_training_draws_a_slope_per_negative_element():
    tgrad.manual_seed(2)
    x = tgrad.from_torch(X_NOSPECIAL.clone()).requires_grad_()
    y = F.rrelu(x, 0.1, 0.3, training=True)
    out, xr = y.torch(), X_NOSPECIAL
    pos = xr > 0
    assert torch.equal(out[pos], xr[pos])
    slope = out[~pos] / xr[~pos]
    assert bool(((slope >= 0.1) & (slope <= 0.3)).all()) and slope.std() > 0.03
    g = uniform64(tuple(xr.shape), -1, 1, 3)
    y.backward(tgrad.from_torch(g.clone()))
    torch.testing.assert_close(x.grad.torch(), g * torch.where(pos, torch.ones_like(xr), out / xr))
    z = x.detach() * 1.0
    tgrad.manual_seed(2)
    assert F.rrelu_(z, 0.1, 0.3, training=True) is z and z.tolist() == y.tolist()
    with pytest.raises(RuntimeError, match="^Lower bound should be less than or equal to the upper bound$"):
        F.rrelu(x, 0.5, 0.2, training=True)
