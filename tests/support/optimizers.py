"""Optimizers in both libraries on the same numbers: parameters of odd sizes, a 0-d tensor, a
non-contiguous (transposed) leaf and one that gets no gradient on some steps (PyTorch skips it: no
update, no step count), identical random gradients per step, and the comparison of the results."""
import torch

import tgrad
from support.reference import uniform64
from tgrad.kernels.runtime.launch import count_launches

SHAPES = [(5, 3), (7,), (), (1, 4)]
STEPS = 10


def make_params(dtype, seed=0):
    """(tgrad leaves, torch leaves) with the same values; the (3, 5) one is a transposed view."""
    tp, gp = [], []
    for i, shape in enumerate(SHAPES):
        base = uniform64(shape, -1, 1, seed + i).to(dtype)
        tp.append(base.clone().requires_grad_())
        gp.append(tgrad.from_torch(base.clone()).requires_grad_())
    t = uniform64((3, 5), -1, 1, seed + 9).to(dtype)
    tp.append(t.clone().t().contiguous().t().requires_grad_())  # torch's leaf, same strides
    gp.append(tgrad.from_torch(t.clone().t().contiguous().t()).requires_grad_())
    return tp, gp


def set_grads(tp, gp, step, dtype):
    for i, (a, b) in enumerate(zip(tp, gp)):
        if i == 1 and step % 3 == 2:  # no gradient this step: skipped by both
            a.grad, b.grad = None, None
            continue
        g = uniform64(tuple(a.shape), -1, 1, 1000 * step + i).to(dtype)
        a.grad = g.clone()
        b.grad = tgrad.from_torch(g.clone())


def run_both(torch_cls, tgrad_cls, kwargs, dtype=torch.float32, groups=None):
    tp, gp = make_params(dtype)
    if groups is None:
        topt, gopt = torch_cls(tp, **kwargs), tgrad_cls(gp, **kwargs)
    else:  # two groups, the second with its own overrides
        topt = torch_cls([{"params": tp[:2]}, {"params": tp[2:], **groups}], **kwargs)
        gopt = tgrad_cls([{"params": gp[:2]}, {"params": gp[2:], **groups}], **kwargs)
    launches = []
    for step in range(STEPS):
        set_grads(tp, gp, step, dtype)
        topt.step()
        with count_launches() as c:
            gopt.step()
        launches.append(sum(c.values()))
    return tp, gp, topt, gopt, launches


def assert_same(tp, gp, atol):
    for a, b in zip(tp, gp):
        torch.testing.assert_close(b.torch().double(), a.detach().double(), rtol=0, atol=atol)
