"""``ctc_loss`` and ``nn.CTCLoss`` against PyTorch: float64 and float32 values for padded,
concatenated and unbatched targets, repeated labels, empty targets, short inputs, impossible
alignments (inf, or 0 with ``zero_infinity``), every reduction; the gradient of the logits under a
log_softmax for a random upstream gradient (PyTorch's own log-probability gradient assumes that
normalisation: docs/differences.md); the module's repr; PyTorch's errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import raises, run, uniform64

TARGETS = torch.tensor([[1, 2, 2, 3], [3, 1, 0, 0], [4, 4, 4, 1]])


def _both(targets, il, tl, **kw):
    """(torch's, tgrad's) loss of logits x: the ctc loss of log_softmax(x)."""
    return (lambda x: TF.ctc_loss(x.log_softmax(-1), targets, il, tl, **kw),
            lambda x: F.ctc_loss(x.log_softmax(-1), tgrad.from_torch(targets.clone()),
                                 tgrad.from_torch(il.clone()) if isinstance(il, torch.Tensor) else il,
                                 tgrad.from_torch(tl.clone()) if isinstance(tl, torch.Tensor) else tl, **kw))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("il,tl", [([9, 8, 9], [4, 2, 4]), ([9, 9, 6], [3, 0, 2]), ([5, 9, 9], [4, 1, 3])])
def test_ctc_loss_padded_targets(reduction, il, tl):
    fr, ft = _both(TARGETS, il, tl, reduction=reduction)
    run(fr, ft, [uniform64((9, 3, 6), seed=1)])


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_alignment(zero_infinity):
    # sample 2 needs 4 + 2 repeats = 6 steps but has 3; sample 0 is fine
    fr, ft = _both(TARGETS, [9, 9, 3], [4, 2, 4], reduction="none", zero_infinity=zero_infinity)
    x = uniform64((9, 3, 6), seed=2)
    if zero_infinity:
        run(fr, ft, [x])
    else:
        got = ft(tgrad.from_torch(x.clone())).torch()
        assert torch.equal(got.isinf(), fr(x).isinf()) and bool(got[2].isinf())
        torch.testing.assert_close(got[:2], fr(x)[:2], rtol=1e-10, atol=1e-12)


def test_ctc_loss_concatenated_and_unbatched_targets():
    flat = torch.tensor([1, 2, 2, 3, 1, 4, 1])
    fr, ft = _both(flat, torch.tensor([8, 7, 8]), torch.tensor([4, 1, 2]), blank=5)
    run(fr, ft, [uniform64((8, 3, 6), seed=3)])
    fr_t, ft_t = _both(torch.tensor([2, 2, 1]), torch.tensor(7), torch.tensor(3))
    run(fr_t, ft_t, [uniform64((7, 4), seed=4)])


def test_ctc_loss_float32():
    x = uniform64((9, 3, 6), seed=5)
    ref = TF.ctc_loss(x.float().log_softmax(-1), TARGETS, [9, 8, 9], [4, 2, 4], reduction="none")
    got = F.ctc_loss(tgrad.from_torch(x.float()).log_softmax(-1), tgrad.from_torch(TARGETS), [9, 8, 9], [4, 2, 4],
                     reduction="none")
    assert got.dtype is tgrad.float32
    torch.testing.assert_close(got.torch(), ref, rtol=1e-5, atol=1e-5)


def test_ctc_loss_module():
    ref, ours = torch.nn.CTCLoss(blank=5, zero_infinity=True), nn.CTCLoss(blank=5, zero_infinity=True)
    assert repr(ours) == repr(ref) and list(ours.state_dict()) == []
    run(lambda x: ref(x.log_softmax(-1), TARGETS, [9, 8, 2], [4, 2, 4]),
        lambda x: ours(x.log_softmax(-1), tgrad.from_torch(TARGETS), [9, 8, 2], [4, 2, 4]),
        [uniform64((9, 3, 6), seed=6)])


def test_ctc_loss_errors_are_torchs():
    lp, t = tgrad.zeros(6, 2, 4), tgrad.tensor([[1, 2], [3, 3]])
    with raises(RuntimeError, "Expected input_lengths to have value at most 6, but got value 7 (while checking "
                              "arguments for ctc_loss_allocate_outputs)"):
        F.ctc_loss(lp, t, [7, 6], [2, 2])
    with raises(RuntimeError, "Expected tensor to have size at least 3 at dimension 1, but got size 2 for argument "
                              "#2 'targets' (while checking arguments for ctc_loss_allocate_outputs)"):
        F.ctc_loss(lp, t, [6, 6], [2, 3])
    with raises(RuntimeError, "blank must be in label range"):
        F.ctc_loss(lp, t, [6, 6], [2, 2], blank=4)
