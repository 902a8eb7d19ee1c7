"""The built-in views' lean apply (tgrad/autograd/view_function.py) against PyTorch: the node's
name and edges, output_nr, the version counter shared with the base, the gradient (float64, a
random upstream gradient), and no node when the call is not recorded."""
import numpy as np
import pytest
import torch

import tgrad

VIEWS = {
    "view": lambda x: x.view(4, 6),
    "reshape (a view of a non-contiguous tensor)": lambda x: x.transpose(1, 2).reshape(2, 12, 1),
    "reshape (a copy)": lambda x: x.transpose(0, 2).reshape(-1),
    "permute": lambda x: x.permute(2, 0, 1),
    "transpose": lambda x: x.transpose(0, 2),
    "t": lambda x: x[0].t(),
    "squeeze": lambda x: x[:, :1].squeeze(),
    "squeeze dim": lambda x: x[:, :1].squeeze(1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "slice": lambda x: x[1:],
    "slice with a step": lambda x: x[:, ::2],
    "select": lambda x: x[1],
    "negative select": lambda x: x[-2],
    "index None": lambda x: x[None],
    "tuple index": lambda x: x[1, 1:3],
}


def _names(fn):
    return None if fn is None else (fn.name() if hasattr(fn, "_next") else type(fn).__name__)


@pytest.mark.parametrize("case", list(VIEWS))
def test_view_node_version_and_gradient_as_pytorchs(case):
    f = VIEWS[case]
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((2, 3, 4))
    up0 = rng.standard_normal(tuple(f(torch.tensor(x0)).shape))
    seen = {}
    for lib in (torch, tgrad):
        x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
        base = x * 1.0  # a non-leaf base: its in-place change reaches a view's version counter
        y = f(base)
        fn = y.grad_fn
        nexts = [_names(n) for n, _ in fn.next_functions]
        (y * lib.tensor(up0, dtype=lib.float64)).sum().backward()
        before = y._version
        with lib.no_grad():
            base.add_(1.0)
        seen[lib] = (_names(fn), nexts, y.output_nr, y._version - before, x.grad.numpy())
    t, g = seen[torch], seen[tgrad]
    assert (g[0], g[2], g[3]) == (t[0], t[2], t[3])
    if case != "tuple index":  # (tgrad: one node for a whole basic index, PyTorch a chain of views)
        assert g[1] == t[1]
    np.testing.assert_allclose(g[4], t[4], rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("case", ["view", "slice", "select", "transpose", "expand"])
def test_unrecorded_views_have_no_node(case):
    f = VIEWS[case]
    x = tgrad.randn(2, 3, 4, requires_grad=True)
    with tgrad.no_grad():
        y = f(x)
    assert y.grad_fn is None and not y.requires_grad and y._base is x
    with tgrad.inference_mode():
        z = f(x)
    assert z.grad_fn is None and not z.requires_grad
    w = f(tgrad.randn(2, 3, 4))  # no input requires grad
    assert w.grad_fn is None and not w.requires_grad
    i = f(tgrad.ones(2, 3, 4, dtype=tgrad.int64))
    assert i.grad_fn is None and not i.requires_grad


def test_a_view_of_a_detached_view_takes_its_bases_history():
    """A view whose base gained history in place (a view that did not require grad) records."""
    for lib in (torch, tgrad):
        a = lib.zeros(4, dtype=lib.float64)
        v = a[1:]
        a.add_(lib.ones(4, dtype=lib.float64, requires_grad=True))
        w = v[1:]
        assert w.requires_grad and w.grad_fn is not None
