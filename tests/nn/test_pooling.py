"""``max_unpool1d/2d`` and ``nn.MaxUnpool1d/2d`` against PyTorch in float64: the pooled indices of
``max_pool`` unpooled (default and given output sizes, padded and strided pools, unbatched input),
the input gradient for a random upstream gradient, second derivatives, reprs and PyTorch's errors."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from support.reference import compare_double_backward, make_pair, raises, run, uniform64

CASES = [  # (input shape, kernel, stride, padding, output_size)
    ((2, 3, 4, 6), 2, None, 0, None),
    ((2, 3, 5, 7), 2, None, 0, (5, 7)),
    ((1, 2, 7, 5), 3, 2, 1, None),
    ((1, 2, 7, 6), 3, 2, 1, (7, 6)),
    ((3, 6, 5), (2, 3), (1, 2), 0, [1, 1, 6, 5]),
]


CASES_1D = [((2, 3, 9), 2, None, 0, None), ((2, 3, 9), 3, 2, 1, [9]), ((4, 7), 2, 1, 0, None)]


@pytest.mark.parametrize("dims,shape,k,s,p,size", [(2, *c) for c in CASES] + [(1, *c) for c in CASES_1D])
def test_max_unpool_matches_torch(dims, shape, k, s, p, size):
    pool, unpool = getattr(TF, f"max_pool{dims}d"), f"max_unpool{dims}d"
    pooled, idx = pool(uniform64(shape, seed=dims), k, s, p, return_indices=True)
    run(lambda x: getattr(TF, unpool)(x, idx, k, s, p, size),
        lambda x: getattr(F, unpool)(x, tgrad.from_torch(idx), k, s, p, size), [pooled.detach()])
    ref, mod = getattr(torch.nn, f"MaxUnpool{dims}d")(k, s, p), getattr(nn, f"MaxUnpool{dims}d")(k, s, p)
    assert repr(mod) == repr(ref)
    run(lambda x: ref(x, idx, size), lambda x: mod(x, tgrad.from_torch(idx), size), [pooled.detach()])


def test_max_unpool_second_derivatives():
    _, idx = TF.max_pool2d(uniform64((2, 3, 4, 6), seed=3), 2, return_indices=True)
    compare_double_backward(lambda x: F.max_unpool2d(x, tgrad.from_torch(idx), 2) ** 2,
                            lambda x: TF.max_unpool2d(x, idx, 2) ** 2, [make_pair((2, 3, 2, 3), tgrad.float64)])


def test_max_unpool_errors_are_torchs():
    x = torch.randn(2, 3, 4, 4)
    y, i = TF.max_pool2d(x, 2, return_indices=True)
    yt, it = tgrad.from_torch(y), tgrad.from_torch(i)
    with raises(RuntimeError, "elements in indices should be type int64 but got: Float"):
        F.max_unpool2d(yt, it.float(), 2)
    with raises(RuntimeError, "Found an invalid max index: 100 (output volumes are of size 4x4"):
        F.max_unpool2d(yt, it * 0 + 100, 2)
    with raises(RuntimeError, "Expected shape of indices to be same as that of the input tensor ([2, 3, 2, 2]) but "
                              "got indices tensor with shape: [2, 2, 2, 2]"):
        F.max_unpool2d(yt, it[:, :2], 2)
    with raises(ValueError, 'invalid output_size "(9, 9)" (dim 0 must be between 2 and 6)'):
        F.max_unpool2d(yt, it, 2, output_size=(9, 9))
    with raises(ValueError, "output_size should be a sequence containing 2 or 4 elements, but it has a length of '3'"):
        F.max_unpool2d(yt, it, 2, output_size=(4, 4, 4))
    with raises(RuntimeError, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with 2 "
                              "dimensions."):
        F.max_unpool2d(yt[0, 0], it[0, 0], 2)
