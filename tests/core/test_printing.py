"""Printed tensors read as PyTorch's: numbers, dtype suffix, and the grad_fn / requires_grad suffix
wrapped onto its own line past the line width, under the default and changed print options."""
import numpy as np
import pytest
import torch

import tgrad


def _both(values, dtype):
    """The same numbers as a (tgrad, torch) pair of leaf tensors requiring grad."""
    return (tgrad.tensor(values, dtype=getattr(tgrad, dtype)).requires_grad_(),
            torch.tensor(values, dtype=getattr(torch, dtype)).requires_grad_())


def _same(ours, theirs):
    assert repr(ours).replace("tgrad.", "torch.") == repr(theirs)


@pytest.mark.parametrize("shape", [(4,), (2, 2), (2, 3), (2, 5), (3, 5), (1, 8), (6, 9), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_suffixes_wrap_as_pytorchs(shape, dtype):
    values = np.random.default_rng(sum(shape)).standard_normal(shape) * 3
    ours, theirs = _both(values, dtype)
    _same(ours, theirs)
    _same(ours * 2, theirs * 2)
    _same((ours * 2).sum(-1), (theirs * 2).sum(-1))
    _same(ours.detach(), theirs.detach())


def test_print_options_apply():
    ours, theirs = _both(np.arange(12.0).reshape(3, 4) / 7, "float64")
    try:
        tgrad.set_printoptions(precision=2, linewidth=60)
        _same(ours * 3, theirs * 3)
        tgrad.set_printoptions(threshold=5, edgeitems=1)
        _same(ours * 3, theirs * 3)
    finally:
        tgrad.set_printoptions(profile="default")
    _same(ours * 3, theirs * 3)
