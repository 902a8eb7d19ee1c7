"""``F.embedding_bag`` and ``nn.EmbeddingBag`` against PyTorch in float64: every mode, offsets
(with empty bags and ``include_last_offset``), 2-D input, per_sample_weights, padding_idx; the
weight's gradient, second derivatives, the module's state dict and repr, PyTorch's errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.modules import assert_param_grads, backward_both, module_pair
from support.reference import raises, run, uniform64

IDX = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0])
OFFSETS = torch.tensor([0, 3, 3, 7])  # bag 1 is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4, -1])
def test_embedding_bag_1d_offsets(mode, padding_idx):
    w = uniform64((10, 3), seed=1)
    run(lambda w: TF.embedding_bag(IDX, w, OFFSETS, mode=mode, padding_idx=padding_idx),
        lambda w: F.embedding_bag(tgrad.from_torch(IDX), w, tgrad.from_torch(OFFSETS), mode=mode,
                                  padding_idx=padding_idx), [w])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_and_include_last_offset(mode):
    w = uniform64((10, 5), seed=2)
    idx2 = IDX[:8].reshape(2, 4)
    run(lambda w: TF.embedding_bag(idx2, w, mode=mode), lambda w: F.embedding_bag(tgrad.from_torch(idx2), w, mode=mode),
        [w])
    last = torch.tensor([0, 2, 2, 6])  # three bags; as in PyTorch, the indices after position 6 join the last
    run(lambda w: TF.embedding_bag(IDX, w, last, mode=mode, include_last_offset=True),
        lambda w: F.embedding_bag(tgrad.from_torch(IDX), w, tgrad.from_torch(last), mode=mode,
                                  include_last_offset=True), [w])


def test_embedding_bag_per_sample_weights():
    w, psw = uniform64((10, 3), seed=3), uniform64((9,), seed=4)
    run(lambda w, p: TF.embedding_bag(IDX, w, OFFSETS, mode="sum", per_sample_weights=p, padding_idx=2),
        lambda w, p: F.embedding_bag(tgrad.from_torch(IDX), w, tgrad.from_torch(OFFSETS), mode="sum",
                                     per_sample_weights=p, padding_idx=2), [w, psw])
    # (PyTorch has no second derivative of embedding_bag to compare with)


@pytest.mark.parametrize("kw", [dict(mode="max"), dict(mode="sum", padding_idx=0), dict(include_last_offset=True)])
def test_embedding_bag_module(kw):
    ref, mod = module_pair("EmbeddingBag", 10, 4, **kw)
    assert list(mod.state_dict()) == list(ref.state_dict()) and repr(mod) == repr(ref)
    out, r = mod(tgrad.from_torch(IDX), tgrad.from_torch(OFFSETS)), ref(IDX, OFFSETS)
    backward_both([out], [r])
    assert_param_grads(ref, mod)


def test_embedding_bag_padding_row_initialised_to_zero():
    m = nn.EmbeddingBag(5, 3, padding_idx=-2)
    assert m.padding_idx == 3 and float(m.weight[3].abs().sum()) == 0.0


def test_embedding_bag_errors_are_torchs():
    w, i = tgrad.ones(5, 3), tgrad.tensor([1, 2])
    with raises(RuntimeError, "Index 1 of input takes value 7 which is not in the valid range [0, 5)"):
        F.embedding_bag(tgrad.tensor([1, 7]), w, tgrad.tensor([0]))
    with pytest.raises(RuntimeError, match=r"^offsets\[0\] has to be 0, i.e., the first sequence in the mini-batch "
                                           r"has to start from position 0. However, got 1"):
        F.embedding_bag(i, w, tgrad.tensor([1]))
    with raises(ValueError, "mode has to be one of sum, mean or max"):
        F.embedding_bag(i, w, tgrad.tensor([0]), mode="x")
    with raises(ValueError, "offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(i, w)
    with raises(ValueError, "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"):
        F.embedding_bag(tgrad.ones(1, 1, 2, dtype=tgrad.int64), w)
    with raises(ValueError, "weight has to be a 2D Tensor, but got Tensor of dimension 1"):
        F.embedding_bag(i, tgrad.ones(5), tgrad.tensor([0]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(i, w, tgrad.tensor([0]), per_sample_weights=tgrad.ones(2))
    with pytest.raises(RuntimeError, match="^Expected tensor for argument #1 'indices' to have one of the following"):
        F.embedding_bag(tgrad.ones(2), w, tgrad.tensor([0]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_only_padding_stays_in_the_graph(mode):
    # every index is padding_idx, so no row reaches a bag: the zeros still depend on the weight, as
    # PyTorch's (max mode once returned a tensor needing no grad; nn fuzzer seed 4242)
    idx, offsets = torch.zeros(5, dtype=torch.int64), torch.tensor([0, 2, 2])
    w = uniform64((1, 1), seed=5)
    run(lambda w: TF.embedding_bag(idx, w, offsets, mode=mode, padding_idx=0),
        lambda w: F.embedding_bag(tgrad.from_torch(idx), w, tgrad.from_torch(offsets), mode=mode, padding_idx=0), [w])
    wt, wg = w.clone().requires_grad_(), tgrad.from_torch(w.clone()).requires_grad_()
    got = F.embedding_bag(tgrad.from_torch(idx), wg, tgrad.from_torch(offsets), mode=mode, padding_idx=0)
    want = TF.embedding_bag(idx, wt, offsets, mode=mode, padding_idx=0)
    assert got.requires_grad == want.requires_grad
    got.sum().backward()
    want.sum().backward()
    assert wg.grad is not None and wg.grad.tolist() == wt.grad.tolist()


@pytest.mark.executor_replay
@pytest.mark.usefixtures("replay_verify_mode")
def test_an_embedding_of_a_context_growing_by_a_token_records_once_up_to_64_rows():
    # a sampler's context of 1, 2, ..., 40 tokens: interpreted, the rows walk in blocks of at least
    # 64, so every length shares one signature (its length a replay input) instead of recording
    # again at each power of two
    g = torch.Generator().manual_seed(0)
    w = torch.randn(11, 5, generator=g, dtype=torch.float64)
    weight = tgrad.from_torch(w)
    with tgrad.kernels.count_replays() as counts:
        for T in range(1, 41):
            idx = torch.randint(0, 11, (1, T), generator=g)
            assert torch.equal(F.embedding(tgrad.from_torch(idx), weight).torch(), TF.embedding(idx, w))
    assert counts["interpreted"] == 1 and counts["recorded"] <= 2 and counts["replayed"] >= 38
