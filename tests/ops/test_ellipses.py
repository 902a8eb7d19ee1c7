"""Indices with more than one ``...``, against PyTorch (which allows any number).

Each ``...`` skips the dims the other entries leave, so after a second one the entries land past the
last dim: there a slice keeping all of a size-0 dim applies nothing, while an int, None, another
slice or an index tensor raises IndexError (PyTorch reads a size past the end there; see
docs/differences.md). Every index runs on both libraries: the same result, gradient and node name,
or the same exception type; setitem likewise.
"""
import itertools

import pytest
import torch

import tgrad
from support.reference import assert_close, uniform64

E = Ellipsis
ENTRIES = [E, 0, -1, 2, slice(None), slice(0, 1), slice(1, 2), slice(None, None, 2), slice(None, -1), None,
           "int tensor", "mask", "bool"]


def _entry(i, lib):
    return {"int tensor": lambda: lib.tensor([0, 1]), "mask": lambda: lib.tensor([True, False]),
            "bool": lambda: lib.tensor(True)}.get(i, lambda: i)() if isinstance(i, str) else i


def _indices():
    """Every index of 2 or 3 entries with at least two ellipses."""
    for n in (2, 3):
        for combo in itertools.product(ENTRIES, repeat=n):
            if sum(c is E for c in combo) >= 2:
                yield combo


SHAPES = [(), (3,), (2, 3), (2, 3, 4)]


def _run(lib_x, index, lib):
    try:
        return lib_x[tuple(_entry(i, lib) for i in index)], None
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return None, e


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_getitem_with_several_ellipses_matches_torch(shape):
    ref = uniform64(shape, seed=1).requires_grad_()
    x = tgrad.from_torch(ref.detach().clone()).requires_grad_()
    for index in _indices():
        r, rerr = _run(ref, index, torch)
        y, err = _run(x, index, tgrad)
        assert type(err) is type(rerr), (index, rerr, err)
        if rerr is not None:
            assert isinstance(err, IndexError | ValueError) and str(err), index
            continue
        assert tuple(y.shape) == tuple(r.shape) and type(y.grad_fn).__name__ == type(r.grad_fn).__name__, index
        assert_close(y, r)
        g = uniform64(r.shape, seed=2)
        (gx,) = tgrad.autograd.grad(y, x, tgrad.from_torch(g.clone()))
        (gr,) = torch.autograd.grad(r, ref, g)
        assert_close(gx, gr)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4)], ids=str)
def test_setitem_with_several_ellipses_matches_torch(shape):
    for index in itertools.product([E, 0, slice(None), slice(1, 2), None, "int tensor", "bool"], repeat=3):
        if sum(c is E for c in index) < 2:
            continue
        ref, x = uniform64(shape, seed=3), tgrad.from_torch(uniform64(shape, seed=3))
        outcome = []
        for t, lib in ((ref, torch), (x, tgrad)):
            try:
                t[tuple(_entry(i, lib) for i in index)] = -5.0
                outcome.append(None)
            except Exception as e:  # noqa: BLE001
                outcome.append(type(e))
        assert outcome[0] is outcome[1], (index, outcome)
        assert_close(x, ref)


@pytest.mark.parametrize("index, message", [
    ((E, E, 0), "index 0 is out of bounds for dimension 2 with size 0"),
    ((E, E, None), r"Dimension out of range \(expected to be in range of \[-4, 3\], but got 6\)"),
    ((E, E, slice(1, 2)), r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 4\)"),
    ((E, E, torch.tensor([0, 1])), r"too many indices for tensor of dimension 3 \(got 5\)"),
])
def test_what_lands_past_the_end_is_named(index, message):
    x = torch.zeros(2, 3, 4)
    with pytest.raises(IndexError, match=message + ".*second ellipsis"):
        tgrad.from_torch(x)[tuple(tgrad.from_torch(i) if isinstance(i, torch.Tensor) else i for i in index)]
    with pytest.raises(IndexError, match=message):
        x[index]
