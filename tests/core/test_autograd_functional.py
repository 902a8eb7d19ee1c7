"""tgrad.autograd.functional against torch.autograd.functional on small MLP losses (float64)."""
import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import tgrad
import tgrad.autograd.functional as GF

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((5, 3))
B1 = RNG.standard_normal(5)
W2 = RNG.standard_normal((2, 5))


def pair(a):
    """The same float64 numbers as a torch tensor and a tgrad tensor."""
    return torch.tensor(a, dtype=torch.float64), tgrad.tensor(a, dtype=tgrad.float64)


def close(g, t, tol=1e-9):
    if isinstance(t, tuple):
        assert isinstance(g, tuple) and len(g) == len(t)
        for a, b in zip(g, t):
            close(a, b, tol)
        return
    assert isinstance(g, tgrad.Tensor) and tuple(g.shape) == tuple(t.shape), (g, t)
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def fns(lib, w1, b1, w2):
    def f(x):  # R^3 -> R^2
        return w2 @ lib.tanh(w1 @ x + b1)

    def loss(x):  # R^3 -> R
        return (f(x) ** 2).sum() + (x ** 3).sum()

    def loss2(x, w):  # two inputs
        return (lib.tanh(w @ x) ** 2).sum() * x.sum()

    def f2(x, w):  # two inputs, two outputs
        return lib.tanh(w @ x), (x * x).sum(0, keepdim=True)
    return f, loss, loss2, f2


T = fns(torch, *(torch.tensor(a) for a in (W1, B1, W2)))
G = fns(tgrad, *(tgrad.tensor(a, dtype=tgrad.float64) for a in (W1, B1, W2)))
X = RNG.standard_normal(3)
W = RNG.standard_normal((4, 3))


def test_jacobian_and_hessian():
    tx, gx = pair(X)
    tw, gw = pair(W)
    close(GF.jacobian(G[0], gx), TF.jacobian(T[0], tx))
    close(GF.hessian(G[1], gx), TF.hessian(T[1], tx))
    close(GF.jacobian(G[3], (gx, gw)), TF.jacobian(T[3], (tx, tw)))
    close(GF.hessian(G[2], (gx, gw)), TF.hessian(T[2], (tx, tw)))
    close(GF.jacobian(G[0], gx, vectorize=True), TF.jacobian(T[0], tx, vectorize=True))
    # single-tuple inputs give 1-tuples back
    close(GF.jacobian(G[0], (gx,)), TF.jacobian(T[0], (tx,)))


def test_products():
    tx, gx = pair(X)
    tv, gv = pair(RNG.standard_normal(3))
    tu, gu = pair(RNG.standard_normal(2))
    close(GF.vjp(G[0], gx, gu), TF.vjp(T[0], tx, tu))
    close(GF.jvp(G[0], gx, gv), TF.jvp(T[0], tx, tv))
    close(GF.vhp(G[1], gx, gv), TF.vhp(T[1], tx, tv))
    close(GF.hvp(G[1], gx, gv), TF.hvp(T[1], tx, tv))
    close(GF.vjp(G[1], gx), TF.vjp(T[1], tx))  # v=None for a one-element output
    tw, gw = pair(W)
    tv2, gv2 = pair(RNG.standard_normal((4, 3)))
    close(GF.hvp(G[2], (gx, gw), (gv, gv2)), TF.hvp(T[2], (tx, tw), (tv, tv2)))
    close(GF.vhp(G[2], (gx, gw), (gv, gv2)), TF.vhp(T[2], (tx, tw), (tv, tv2)))


def test_create_graph_and_detached_results():
    tx, gx = pair(X)
    tx.requires_grad_(True)
    gx.requires_grad_(True)
    tv, gv = pair(RNG.standard_normal(3))
    _, th = TF.hvp(T[1], tx, tv, create_graph=True)
    _, gh = GF.hvp(G[1], gx, gv, create_graph=True)
    assert gh.requires_grad and th.requires_grad
    up = RNG.standard_normal(3)
    (tg,) = torch.autograd.grad(th, tx, torch.tensor(up))
    (gg,) = tgrad.autograd.grad(gh, gx, tgrad.tensor(up, dtype=tgrad.float64))
    close(gg, tg)
    J = GF.jacobian(G[0], gx, create_graph=True)
    assert J.requires_grad
    (gj,) = tgrad.autograd.grad(J.sum(), gx)
    (tj,) = torch.autograd.grad(TF.jacobian(T[0], tx, create_graph=True).sum(), tx)
    close(gj, tj)
    out, vj = GF.vjp(G[0], gx, tgrad.ones(2, dtype=tgrad.float64))
    assert not out.requires_grad and not vj.requires_grad
    assert not GF.hessian(G[1], gx).requires_grad


def test_strict_and_independent_inputs():
    tx, gx = pair(X)
    ty, gy = pair(RNG.standard_normal(2))

    def gf(x, y):
        return x * 2

    def tf(x, y):
        return x * 2

    close(GF.jacobian(gf, (gx, gy)), TF.jacobian(tf, (tx, ty)))  # zeros for y
    with pytest.raises(RuntimeError, match="independent of input 1"):
        TF.jacobian(tf, (tx, ty), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        GF.jacobian(gf, (gx, gy), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        GF.vjp(gf, (gx, gy), tgrad.ones(3, dtype=tgrad.float64), strict=True)
    close(GF.hessian(lambda x: (x * 3).sum(), gx), TF.hessian(lambda x: (x * 3).sum(), tx))  # linear: H = 0
    with pytest.raises(RuntimeError, match="independent"):
        GF.hessian(lambda x: (x * 3).sum(), gx, strict=True)


def test_errors():
    _, gx = pair(X)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        GF.jacobian(lambda x: 3, gx)
    with pytest.raises(TypeError, match="inputs given to vjp"):
        GF.vjp(G[0], [1.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        GF.vjp(G[0], gx)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        GF.vjp(G[0], gx, tgrad.ones(3, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        GF.hessian(lambda x: (x, x), gx)
    with pytest.raises(RuntimeError, match="single element"):
        GF.hessian(lambda x: x * 2, gx)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        GF.jacobian(G[0], gx, strategy="forward-mode")
    with pytest.raises(ValueError, match="strategy"):
        GF.jacobian(G[0], gx, strategy="sideways")
