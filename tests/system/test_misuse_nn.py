"""The misuse catalog, nn: layers given inputs of the wrong shape, bad arguments of losses, dropout,
embeddings and modules. One row per misuse; the runner and what a row asserts: support/misuse.py."""
import pytest

from support.misuse import A, E, I, PARAMS, T_, V, check_misuse, idx, mlp, ones, rows


def _conv(T, x_shape, **kw):
    layer = T.nn.Conv2d(3, 4, kernel_size=kw.pop("k", 3), **kw)
    return layer(T.ones(*x_shape))


# (id, call(T), exception, pattern the message contains, runs against torch too[, kind])
CASES = [
    # -- nn
    ("linear-features", lambda T: T.nn.Linear(4, 2)(ones(T, 3, 5)), E, r"\(3x5 and 4x2\)", True),
    ("linear-0d", lambda T: T.nn.Linear(4, 2)(T.tensor(1.0)), E,
     r"\(1x1 and 4x2\)|both arguments to linear need to be at least 1D",
     True),
    ("conv-channels", lambda T: _conv(T, (1, 2, 8, 8)), E,
     r"expected input\[1, 2, 8, 8\] to have 3 channels, but got 2 channels instead", True),
    ("conv-2d-input", lambda T: _conv(T, (8, 8)), E,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[8, 8\]", True),
    ("conv-kernel-too-big", lambda T: _conv(T, (1, 3, 2, 2)), E,
     r"Kernel size can't be greater than actual input size|Calculated padded input size per channel: \(2 x 2\). "
     r"Kernel size: \(3 x 3\)", True),
    ("conv-stride-zero", lambda T: _conv(T, (1, 3, 8, 8), stride=0), E, r"non-positive stride is not supported", True),
    ("layer-norm-shape", lambda T: T.nn.LayerNorm(4)(ones(T, 2, 5)), E,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\s?\[2, 5\]", True),
    ("layer-norm-weight", lambda T: T.nn.functional.layer_norm(ones(T, 2, 4), (4,), ones(T, 3)), E,
     r"Expected weight to be of same shape as normalized_shape, but got weight of shape \[3\] and normalized_shape = "
     r"\[4\]", True),
    ("batch-norm-channels", lambda T: T.nn.BatchNorm1d(4)(ones(T, 3, 5)), E,
     r"running_mean should contain 5 elements not 4", True),
    ("max-pool-padding", lambda T: T.nn.MaxPool2d(2, padding=2)(ones(T, 1, 1, 4, 4)), E,
     r"pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1", True),
    ("ce-batch", lambda T: T.nn.functional.cross_entropy(ones(T, 3, 4), idx(T, [0, 1])), V,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)", True),
    ("ce-smoothing", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), label_smoothing=1.5), E,
     r"label_smoothing must be between 0.0 and 1.0. Got: 1.5", True),
    ("ce-weight-shape", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), weight=ones(T, 2)), E,
     r"weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: \[2\]",
     True),
    ("ce-reduction", lambda T: T.nn.functional.cross_entropy(ones(T, 2, 3), idx(T, [0, 1]), reduction="avg"), V,
     r"avg is not a valid value for reduction", True),
    ("bce-range", lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.5, 1.5]), T.tensor([0.0, 1.0])), E,
     r"all elements of input should be between 0 and 1", True),
    ("bce-logits-size", lambda T: T.nn.functional.binary_cross_entropy_with_logits(ones(T, 3), ones(T, 2)), V,
     r"Target size \((torch|tgrad)\.Size\(\[2\]\)\) must be the same as input size \((torch|tgrad)\.Size\(\[3\]\)\)",
     True),
    ("dropout-p", lambda T: T.nn.functional.dropout(ones(T, 3), p=1.5), V,
     r"dropout probability has to be between 0 and 1, but got 1.5", True),
    ("embedding-padding", lambda T: T.nn.Embedding(4, 2, padding_idx=4), A,
     r"Padding_idx must be within num_embeddings \(got padding_idx=4 for num_embeddings=4\)",
     True),
    ("sequential-index", lambda T: mlp(T)[5], I, r"index 5 is out of range", True),
    ("module-param-type", lambda T: T.nn.Linear(2, 2).register_parameter("w", ones(T, 2)), T_,
     r"cannot assign '(torch|tgrad)\.FloatTensor' object to parameter 'w' "
     r"\((torch|tgrad)\.nn\.Parameter or None required\)",
     True),
]


@pytest.mark.parametrize(PARAMS, rows(CASES))
def test_misuse(call, exc, pattern, torch_too, kind):
    check_misuse(call, exc, pattern, torch_too, kind)
