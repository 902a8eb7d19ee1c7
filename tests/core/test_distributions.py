"""tgrad.distributions against torch.distributions in float64: log_prob, entropy, moments and
their gradients (random upstream gradients), KL pairs, rsample's reparameterisation, samplers'
statistics, and PyTorch's errors."""
import numpy as np
import pytest
import torch
import torch.distributions as TD

import tgrad
import tgrad.distributions as GD

RNG = np.random.default_rng(0)


def pair(a, grad=True):
    a = np.asarray(a, dtype=np.float64)
    return (torch.tensor(a, requires_grad=grad),
            tgrad.tensor(a, dtype=tgrad.float64, requires_grad=grad))


def check(t_out, g_out, t_in, g_in, tol=1e-10):
    """Values and gradients (w.r.t. the inputs, with one random upstream gradient) agree."""
    np.testing.assert_allclose(g_out.detach().numpy(), t_out.detach().numpy(), rtol=tol, atol=tol)
    up = RNG.standard_normal(tuple(t_out.shape))
    tg = torch.autograd.grad(t_out, t_in, torch.tensor(up), allow_unused=True, retain_graph=True)
    gg = tgrad.autograd.grad(g_out, g_in, tgrad.tensor(up, dtype=tgrad.float64), allow_unused=True,
                             retain_graph=True)
    for a, b in zip(tg, gg):
        if a is None:
            assert b is None or float(b.abs().max()) == 0
        else:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=tol, atol=tol)


def test_normal():
    (tl, gl), (ts, gs) = pair(RNG.standard_normal((2, 3))), pair(RNG.uniform(0.5, 2, (2, 3)))
    tx, gx = pair(RNG.standard_normal((4, 2, 3)))
    T, G = TD.Normal(tl, ts), GD.Normal(gl, gs)
    check(T.log_prob(tx), G.log_prob(gx), (tl, ts, tx), (gl, gs, gx))
    check(T.entropy(), G.entropy(), (tl, ts), (gl, gs))
    for name in ("mean", "stddev", "variance", "mode"):
        check(getattr(T, name), getattr(G, name), (tl, ts), (gl, gs))
    assert G.batch_shape == (2, 3) and G.event_shape == () and G.has_rsample
    # scalars broadcast as in torch
    check(TD.Normal(tl, 1.0).log_prob(tx), GD.Normal(gl, 1.0).log_prob(gx), (tl, tx), (gl, gx))


def test_rsample_is_reparameterised():
    _, gl = pair(RNG.standard_normal(3))
    _, gs = pair(RNG.uniform(0.5, 2, 3))
    tgrad.manual_seed(0)
    x = GD.Normal(gl, gs).rsample((5,))
    assert tuple(x.shape) == (5, 3) and x.requires_grad
    up = tgrad.tensor(RNG.standard_normal((5, 3)), dtype=tgrad.float64)
    dl, ds = tgrad.autograd.grad(x, (gl, gs), up)
    eps = (x.detach() - gl.detach()) / gs.detach()  # x = loc + eps * scale
    np.testing.assert_allclose(dl.numpy(), up.numpy().sum(0), rtol=1e-12)
    np.testing.assert_allclose(ds.numpy(), (up * eps).numpy().sum(0), rtol=1e-10)
    s = GD.Normal(gl, gs).sample((2,))
    assert not s.requires_grad
    # the same seed draws the same numbers
    tgrad.manual_seed(0)
    np.testing.assert_array_equal(GD.Normal(gl, gs).rsample((5,)).detach().numpy(), x.detach().numpy())


def test_sample_statistics():
    tgrad.manual_seed(1)
    n = 20000
    u = GD.Uniform(tgrad.tensor([-1.0, 2.0]), tgrad.tensor([1.0, 5.0])).sample((n,))
    assert float(u.min()) >= -1 and float(u.max()) < 5
    np.testing.assert_allclose(u.mean(0).numpy(), [0.0, 3.5], atol=0.05)
    b = GD.Bernoulli(probs=tgrad.tensor([0.1, 0.7])).sample((n,))
    assert set(np.unique(b.numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0).numpy(), [0.1, 0.7], atol=0.02)
    c = GD.Categorical(probs=tgrad.tensor([0.2, 0.0, 0.5, 0.3])).sample((n,))
    assert c.dtype == tgrad.int64 and tuple(c.shape) == (n,)
    freq = np.bincount(c.numpy(), minlength=4) / n
    np.testing.assert_allclose(freq, [0.2, 0.0, 0.5, 0.3], atol=0.02)
    assert freq[1] == 0
    L = tgrad.tensor([[1.0, 0.0], [0.8, 0.6]])
    m = GD.MultivariateNormal(tgrad.tensor([1.0, -1.0]), scale_tril=L).sample((n,))
    cov = np.cov(m.numpy().T)
    np.testing.assert_allclose(cov, (L @ L.T).numpy(), atol=0.05)


def test_bernoulli_and_categorical():
    tp, gp = pair(RNG.uniform(0.05, 0.95, (3, 4)))
    tv, gv = pair(RNG.integers(0, 2, (3, 4)).astype(float), grad=False)
    for kw in ("probs", "logits"):
        targ, garg = (tp, gp) if kw == "probs" else (tp * 4 - 2, gp * 4 - 2)
        T, G = TD.Bernoulli(**{kw: targ}), GD.Bernoulli(**{kw: garg})
        check(T.log_prob(tv), G.log_prob(gv), (tp,), (gp,))
        check(T.entropy(), G.entropy(), (tp,), (gp,))
        check(T.mean, G.mean, (tp,), (gp,))
        check(T.variance, G.variance, (tp,), (gp,))
    tq, gq = pair(RNG.uniform(0.1, 1, (2, 5)))
    tk = torch.tensor(RNG.integers(0, 5, (3, 2)))
    gk = tgrad.tensor(tk.numpy())
    for kw in ("probs", "logits"):
        T, G = TD.Categorical(**{kw: tq}), GD.Categorical(**{kw: gq})
        check(T.log_prob(tk), G.log_prob(gk), (tq,), (gq,))
        check(T.entropy(), G.entropy(), (tq,), (gq,))
        check(T.probs, G.probs, (tq,), (gq,))
        check(T.logits, G.logits, (tq,), (gq,))
        assert G.batch_shape == (2,) and G.event_shape == ()
    assert G.sample((7,)).shape == (7, 2)


def test_uniform():
    (tlo, glo), (thi, ghi) = pair([0.0, -2.0]), pair([1.0, 3.0])
    tx, gx = pair([[0.5, 0.0], [0.25, 2.9]])
    T, G = TD.Uniform(tlo, thi), GD.Uniform(glo, ghi)
    check(T.log_prob(tx), G.log_prob(gx), (tlo, thi, tx), (glo, ghi, gx))
    check(T.entropy(), G.entropy(), (tlo, thi), (glo, ghi))
    check(T.cdf(tx), G.cdf(gx), (tlo, thi, tx), (glo, ghi, gx))
    check(T.stddev, G.stddev, (tlo, thi), (glo, ghi))
    tgrad.manual_seed(0)
    r = G.rsample((3,))
    dlo, dhi = tgrad.autograd.grad(r.sum(), (glo, ghi))
    u = ((r - glo) / (ghi - glo)).detach().numpy().sum(0)
    np.testing.assert_allclose(dhi.numpy(), u, rtol=1e-10)
    np.testing.assert_allclose(dlo.numpy(), 3 - u, rtol=1e-10)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_multivariate_normal():
    n = 3
    tl, gl = pair(RNG.standard_normal((2, n)))
    cov = _spd(n, (2,))
    tc, gc = pair(cov)
    tL, gL = pair(np.linalg.cholesky(cov))
    tx, gx = pair(RNG.standard_normal((4, 2, n)))
    for kw, targ, garg in (("scale_tril", tL, gL), ("covariance_matrix", tc, gc), ("precision_matrix", tc, gc)):
        # a symmetric matrix's gradient is defined up to an antisymmetric part, where torch's two ways of
        # factorising (cholesky of the covariance, of the flipped precision) differ: compare through (A+A^T)/2
        sym = kw == "precision_matrix"
        T = TD.MultivariateNormal(tl, **{kw: (targ + targ.mT) / 2 if sym else targ})
        G = GD.MultivariateNormal(gl, **{kw: (garg + garg.mT) / 2 if sym else garg})
        check(T.log_prob(tx), G.log_prob(gx), (tl, targ, tx), (gl, garg, gx), tol=1e-9)
        check(T.entropy(), G.entropy(), (targ,), (garg,), tol=1e-9)
        check(T.variance, G.variance, (targ,), (garg,), tol=1e-9)
        check(T.covariance_matrix, G.covariance_matrix, (targ,), (garg,), tol=1e-9)
        assert G.batch_shape == (2,) and G.event_shape == (n,)
    # a diagonal covariance, as VAEs write it, and a diagonal scale_tril
    td, gd = pair(RNG.uniform(0.5, 2, n))
    T = TD.MultivariateNormal(tl, covariance_matrix=torch.diag_embed(td))
    G = GD.MultivariateNormal(gl, covariance_matrix=gd * tgrad.eye(n, dtype=tgrad.float64))
    check(T.log_prob(tx), G.log_prob(gx), (tl, td, tx), (gl, gd, gx), tol=1e-9)
    tgrad.manual_seed(0)
    G = GD.MultivariateNormal(gl, scale_tril=gL)
    r = G.rsample((5,))
    assert tuple(r.shape) == (5, 2, n) and r.requires_grad
    eps = tgrad.autograd.grad(r.sum(), gl)[0]
    np.testing.assert_allclose(eps.numpy(), np.full((2, n), 5.0))


def test_independent():
    (tl, gl), (ts, gs) = pair(RNG.standard_normal((2, 3))), pair(RNG.uniform(0.5, 2, (2, 3)))
    tx, gx = pair(RNG.standard_normal((2, 3)))
    T, G = TD.Independent(TD.Normal(tl, ts), 1), GD.Independent(GD.Normal(gl, gs), 1)
    assert G.batch_shape == (2,) and G.event_shape == (3,)
    check(T.log_prob(tx), G.log_prob(gx), (tl, ts, tx), (gl, gs, gx))
    check(T.entropy(), G.entropy(), (tl, ts), (gl, gs))


def test_kl_pairs():
    (tl, gl), (ts, gs) = pair(RNG.standard_normal(3)), pair(RNG.uniform(0.5, 2, 3))
    (tl2, gl2), (ts2, gs2) = pair(RNG.standard_normal(3)), pair(RNG.uniform(0.5, 2, 3))
    ins = (tl, ts, tl2, ts2), (gl, gs, gl2, gs2)
    check(TD.kl_divergence(TD.Normal(tl, ts), TD.Normal(tl2, ts2)),
          GD.kl_divergence(GD.Normal(gl, gs), GD.Normal(gl2, gs2)), *ins)
    check(TD.kl_divergence(TD.Independent(TD.Normal(tl, ts), 1), TD.Independent(TD.Normal(tl2, ts2), 1)),
          GD.kl_divergence(GD.Independent(GD.Normal(gl, gs), 1), GD.Independent(GD.Normal(gl2, gs2), 1)), *ins)
    (tp, gp), (tq, gq) = pair([0.2, 0.0, 0.9, 1.0]), pair([0.5, 0.3, 0.0, 1.0])
    check(TD.kl_divergence(TD.Bernoulli(tp), TD.Bernoulli(tq)), GD.kl_divergence(GD.Bernoulli(gp), GD.Bernoulli(gq)),
          (tp, tq), (gp, gq))
    (tp, gp), (tq, gq) = pair([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]]), pair([[0.1, 0.1, 0.8], [0.5, 0.5, 0.0]])
    check(TD.kl_divergence(TD.Categorical(tp), TD.Categorical(tq)),
          GD.kl_divergence(GD.Categorical(gp), GD.Categorical(gq)), (tp, tq), (gp, gq))
    (ta, ga), (tb, gb) = pair([0.0, 0.0]), pair([1.0, 2.0])
    (tc, gc), (td, gd) = pair([-1.0, 0.5]), pair([2.0, 3.0])
    check(TD.kl_divergence(TD.Uniform(ta, tb), TD.Uniform(tc, td)),
          GD.kl_divergence(GD.Uniform(ga, gb), GD.Uniform(gc, gd)), (ta, tb, tc, td), (ga, gb, gc, gd))
    check(TD.kl_divergence(TD.Uniform(ta, tb), TD.Normal(tl[:2], ts[:2])),
          GD.kl_divergence(GD.Uniform(ga, gb), GD.Normal(gl[:2], gs[:2])), (ta, tb, tl, ts), (ga, gb, gl, gs))
    n = 3
    tm, gm = pair(RNG.standard_normal((2, n)))
    tL1, gL1 = pair(np.linalg.cholesky(_spd(n, (2,))))
    tm2, gm2 = pair(RNG.standard_normal(n))
    tL2, gL2 = pair(np.linalg.cholesky(_spd(n)))
    check(TD.kl_divergence(TD.MultivariateNormal(tm, scale_tril=tL1), TD.MultivariateNormal(tm2, scale_tril=tL2)),
          GD.kl_divergence(GD.MultivariateNormal(gm, scale_tril=gL1), GD.MultivariateNormal(gm2, scale_tril=gL2)),
          (tm, tL1, tm2, tL2), (gm, gL1, gm2, gL2), tol=1e-9)


def test_create_graph_through_log_prob():
    tl, gl = pair([0.3, -0.2])
    ts, gs = pair([1.5, 0.7])
    tx, gx = pair([0.1, 0.4])
    (tg,) = torch.autograd.grad(TD.Normal(tl, ts).log_prob(tx).sum(), ts, create_graph=True)
    (gg,) = tgrad.autograd.grad(GD.Normal(gl, gs).log_prob(gx).sum(), gs, create_graph=True)
    check(tg, gg, (tl, ts, tx), (gl, gs, gx))


def test_errors():
    with pytest.raises(ValueError, match="scale"):
        GD.Normal(tgrad.tensor([0.0]), tgrad.tensor([-1.0]))
    with pytest.raises(ValueError, match="scale"):
        TD.Normal(torch.tensor([0.0]), torch.tensor([-1.0]))
    GD.Normal(tgrad.tensor([0.0]), tgrad.tensor([-1.0]), validate_args=False)  # allowed when not validating
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        GD.Bernoulli(probs=tgrad.tensor(0.5), logits=tgrad.tensor(0.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        GD.Categorical()
    with pytest.raises(ValueError, match="probs"):
        GD.Bernoulli(probs=tgrad.tensor([1.5]))
    with pytest.raises(ValueError, match="support"):
        GD.Bernoulli(probs=tgrad.tensor([0.5])).log_prob(tgrad.tensor([0.5]))
    with pytest.raises(ValueError, match="support"):
        GD.Categorical(probs=tgrad.tensor([0.5, 0.5])).log_prob(tgrad.tensor(2))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        GD.MultivariateNormal(tgrad.zeros(2))
    with pytest.raises(ValueError, match="scale_tril"):
        GD.MultivariateNormal(tgrad.zeros(2), scale_tril=tgrad.tensor([[1.0, 0.5], [0.0, 1.0]]))
    not_pd = [[1.0, 2.0], [2.0, 1.0]]
    for D, lib in ((TD, torch), (GD, tgrad)):  # validated: PyTorch's constraint error, naming the matrix given
        for name in ("covariance_matrix", "precision_matrix"):
            with pytest.raises(ValueError, match=f"Expected parameter {name} .*{name}: .* to satisfy the constraint "
                                                 r"PositiveDefinite\(\)"):
                D.MultivariateNormal(lib.zeros(2), **{name: lib.tensor(not_pd)})
        with pytest.raises(torch.linalg.LinAlgError, match="not positive-definite"):
            D.MultivariateNormal(lib.zeros(2), covariance_matrix=lib.tensor(not_pd), validate_args=False)
    with pytest.raises(NotImplementedError, match="No KL"):
        GD.kl_divergence(GD.Normal(0.0, 1.0), GD.Uniform(0.0, 1.0))
    for D in (TD, GD):
        lib = torch if D is TD else tgrad
        with pytest.raises(ValueError, match="must be a Tensor"):
            D.Normal(lib.tensor(0.0), lib.tensor(1.0)).log_prob(0.5)
        with pytest.raises(ValueError, match="right-most size of value must match event_shape"):
            D.MultivariateNormal(lib.zeros(2), scale_tril=lib.eye(2)).log_prob(lib.zeros(3))
    with pytest.raises(NotImplementedError, match="rsample"):
        GD.Bernoulli(probs=tgrad.tensor(0.5)).rsample()
