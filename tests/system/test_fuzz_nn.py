"""Differential fuzzer for ``tgrad.nn.functional`` calls and ``tgrad.nn`` modules (weights copied
from PyTorch's), on random shapes, dtypes and layouts — including non-contiguous inputs and the
size-1 batch layout an HWC image gets from ``img.permute(2, 0, 1).unsqueeze(0)``. Compared as
``test_fuzz.py`` compares: outputs, result types, requires_grad, errors, and the gradients of the
input and of every parameter for a random upstream gradient.

Budget: ``TGRAD_FUZZ_NN_EXAMPLES`` (default 40); seed ``TGRAD_FUZZ_SEED`` (``random`` for a campaign).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import HealthCheck, given, seed, settings, strategies as st

import tgrad
import tgrad.nn.functional as GF
from support.fuzz_compare import close, no_less_accurate, same_kind

EXAMPLES = int(os.environ.get("TGRAD_FUZZ_NN_EXAMPLES", "40"))
SEED = os.environ.get("TGRAD_FUZZ_SEED", "11")

ACTIVATIONS = ["relu", "gelu", "silu", "elu", "leaky_relu", "softplus", "hardtanh", "relu6", "hardsigmoid",
               "hardswish", "mish", "logsigmoid", "selu", "celu", "softsign", "tanhshrink", "sigmoid", "tanh"]
MODULES = ["Linear", "Conv2d", "BatchNorm2d", "LayerNorm", "MaxPool2d", "AvgPool2d", "Embedding"]


def _image(L, spec, dtype):
    """An (N, C, H, W) input: contiguous, from HWC (permuted, size-1 batch), sliced, or transposed."""
    n, c, h, w, layout, s = spec
    rng = np.random.RandomState(s)
    if layout == "hwc":
        data = rng.randn(h, w, c)
        x = L.tensor(data, dtype=dtype, requires_grad=True)
        return x, x.permute(2, 0, 1).unsqueeze(0)
    if layout == "sliced":
        data = rng.randn(n, c, 2 * h, w)
        x = L.tensor(data, dtype=dtype, requires_grad=True)
        return x, x[:, :, ::2]
    if layout == "transposed":
        data = rng.randn(n, c, w, h)
        x = L.tensor(data, dtype=dtype, requires_grad=True)
        return x, x.transpose(2, 3)
    x = L.tensor(rng.randn(n, c, h, w), dtype=dtype, requires_grad=True)
    return x, x


def _call(L, F, case, dtype):
    kind, name, spec, k = case
    leaf, x = _image(L, spec, dtype)
    c = x.shape[1]
    params = []
    if kind == "act":
        y = getattr(F, name)(x.reshape(-1) * 2 if k % 2 else x * 2)
    elif kind == "func":
        if name == "softmax":
            y = F.softmax(x, dim=k % 4)
        elif name == "log_softmax":
            y = F.log_softmax(x, dim=k % 4)
        elif name == "layer_norm":
            y = F.layer_norm(x, tuple(x.shape[-1:]))
        elif name == "max_pool2d":
            y = F.max_pool2d(x, 2, stride=1 + k % 2, padding=k % 2)
        elif name == "avg_pool2d":
            y = F.avg_pool2d(x, 2, stride=1 + k % 2, padding=k % 2)
        elif name == "mse_loss":
            y = F.mse_loss(x, L.zeros_like(x) + 0.5)
        elif name == "cross_entropy":
            target = L.tensor(np.random.RandomState(k).randint(0, c, size=(x.shape[0],) + tuple(x.shape[2:])))
            y = F.cross_entropy(x, target)
        elif name in _NEW:
            y = _NEW[name](L, F, x, k, dtype)
        else:
            y = F.dropout(x, 0.0)
    else:
        torch.manual_seed(k)
        if name == "Linear":
            tm = torch.nn.Linear(x.shape[-1], 1 + k % 4).to(getattr(torch, str(dtype).split(".")[-1]))
        elif name == "Conv2d":
            tm = torch.nn.Conv2d(c, 1 + k % 3, 1 + k % 2, padding=k % 2).to(getattr(torch, str(dtype).split(".")[-1]))
        elif name == "BatchNorm2d":
            tm = torch.nn.BatchNorm2d(c).to(getattr(torch, str(dtype).split(".")[-1]))
        elif name == "LayerNorm":
            tm = torch.nn.LayerNorm(x.shape[-1]).to(getattr(torch, str(dtype).split(".")[-1]))
        elif name == "MaxPool2d":
            tm = torch.nn.MaxPool2d(2, 1 + k % 2)
        elif name == "AvgPool2d":
            tm = torch.nn.AvgPool2d(2, 1 + k % 2)
        else:
            tm = torch.nn.Embedding(7, 3)
        tm = tm.to(getattr(torch, str(dtype).split(".")[-1]))
        if L is torch:
            m = tm
        else:
            m = getattr(tgrad.nn, name)(*_args(tm, name))
            with tgrad.no_grad():
                for (pn, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
                    p.copy_(tgrad.from_torch(tp.detach().clone()))
            m = m.to(dtype) if dtype is tgrad.float64 else m
        params = list(m.parameters())
        if name == "Embedding":
            idx = L.tensor(np.random.RandomState(k).randint(0, 7, size=tuple(x.shape[:2])))
            y = m(idx) * x[:, :1, :1, :1].reshape(x.shape[0], 1, 1)
        else:
            y = m(x)
    g = L.tensor(np.random.RandomState(k + 1).uniform(-1, 1, size=tuple(y.shape)), dtype=y.dtype)
    if L is torch and kind == "module" and name == "BatchNorm2d":
        # PyTorch 2.13's CPU batch_norm backward is wrong for an upstream gradient laid out unlike its
        # (channels-last-like) output: give it the output's layout (docs/differences.md)
        g = torch.empty_strided(y.shape, y.stride(), dtype=y.dtype).copy_(g)
    y.backward(g)
    return [y.detach(), leaf.grad] + [p.grad for p in params]


def _rows(x):
    return x.reshape(-1, x.shape[-1])


def _ints(k, high, size):
    return np.random.RandomState(k).randint(0, high, size=size)


def _embedding_bag(L, F, x, k, dtype):
    w = _rows(x)
    idx = _ints(k, w.shape[0], (5,))
    return F.embedding_bag(L.tensor(idx), w, L.tensor([0, 2, 2]), mode=("sum", "mean", "max")[k % 3],
                           padding_idx=int(idx[0]) if k % 2 else None)


def _multilabel_targets(k, shape):
    t = _ints(k, shape[1], shape)
    t[:, k % shape[1]] = -1
    return t


def _unpool(F, x, k):
    y, i = F.max_pool2d(x, 1 + k % 2, return_indices=True)
    return F.max_unpool2d(y, i, 1 + k % 2, output_size=tuple(x.shape[-2:]))


def _unpool1d(F, x, k):
    y, i = F.max_pool1d(x.flatten(2), 2, return_indices=True)
    return F.max_unpool1d(y, i, 2, output_size=(x.shape[2] * x.shape[3],))


# the functions built from ops (nn/functional/{dense,sparse,stochastic,margin,...}): each one call on
# the fuzzed image x; the random ones in their deterministic forms (evaluation, or p = 1)
_NEW = {
    "bilinear": lambda L, F, x, k, dtype: F.bilinear(
        x, x * 0.5 + 1, L.tensor(np.random.RandomState(k).randn(2, x.shape[-1], x.shape[-1]), dtype=dtype)),
    "embedding_bag": _embedding_bag,
    "alpha_dropout": lambda L, F, x, k, dtype: F.alpha_dropout(x, 1.0 if k % 2 else 0.3, training=k % 2 == 1),
    "feature_alpha_dropout": lambda L, F, x, k, dtype: F.feature_alpha_dropout(x, 1.0 if k % 2 else 0.3,
                                                                               training=k % 2 == 1),
    "dropout3d": lambda L, F, x, k, dtype: F.dropout3d(x, 0.5, training=False),
    "rrelu": lambda L, F, x, k, dtype: F.rrelu(x, 0.1, 0.2 + k % 3 / 10),
    "soft_margin_loss": lambda L, F, x, k, dtype: F.soft_margin_loss(x, L.tensor(
        np.sign(np.random.RandomState(k).randn(*x.shape)), dtype=dtype)),
    "hinge_embedding_loss": lambda L, F, x, k, dtype: F.hinge_embedding_loss(x, L.tensor(
        np.sign(np.random.RandomState(k).randn(*x.shape)), dtype=dtype), margin=0.5, reduction="sum"),
    "multi_margin_loss": lambda L, F, x, k, dtype: F.multi_margin_loss(
        _rows(x), L.tensor(_ints(k, x.shape[-1], (_rows(x).shape[0],))), p=1 + k % 2),
    "multilabel_margin_loss": lambda L, F, x, k, dtype: F.multilabel_margin_loss(
        _rows(x), L.tensor(_multilabel_targets(k, tuple(_rows(x).shape)))),
    "multilabel_soft_margin_loss": lambda L, F, x, k, dtype: F.multilabel_soft_margin_loss(
        x, L.tensor(_ints(k, 2, tuple(x.shape)), dtype=dtype), reduction="none"),
    "local_response_norm": lambda L, F, x, k, dtype: F.local_response_norm(x, 1 + k % 3, alpha=0.5),
    "max_unpool2d": lambda L, F, x, k, dtype: _unpool(F, x, k),
    "max_unpool1d": lambda L, F, x, k, dtype: _unpool1d(F, x, k),
    "channel_shuffle": lambda L, F, x, k, dtype: F.channel_shuffle(x, x.shape[1] if k % 2 else 1),
    "grid_sample": lambda L, F, x, k, dtype: F.grid_sample(x, F.affine_grid(
        L.tensor(np.random.RandomState(k).randn(x.shape[0], 2, 3), dtype=dtype) * 0.8 + x.mean() * 0.3,
        (x.shape[0], 1, 3, 2), align_corners=k % 2 == 1), ("bilinear", "nearest")[k % 2],
        ("zeros", "border", "reflection")[k % 3], align_corners=k % 4 > 1),
    # 0-size operands: no batch, no output features, no indices
    "linear_empty": lambda L, F, x, k, dtype: F.linear(x[:0] if k % 2 else x, L.ones(k % 3, x.shape[-1], dtype=dtype)),
    "embedding_empty": lambda L, F, x, k, dtype: F.embedding(L.tensor(_ints(k, 1, (k % 2, 0))), _rows(x)),
    # one of several views chunk/split return, changed in place (refused: it requires grad) or not
    "chunk_relu_": lambda L, F, x, k, dtype: F.relu(
        ((x * 1).chunk(2, 1 + k % 3) if k % 4 < 2 else (x * 1).split(1, 1 + k % 3))[0], inplace=k % 2 == 1),
    # (T, N, C) = (W, H, C) of the image; labels 1..C-1 (none when C = 1: PyTorch reads past the end), at
    # most T / 2 of them unless zero_infinity (the gradient of an infinite loss is NaN in PyTorch)
    "ctc_loss": lambda L, F, x, k, dtype: F.ctc_loss(
        x[0].permute(2, 1, 0).log_softmax(-1), L.tensor(_ints(k, max(x.shape[1] - 1, 1), (x.shape[2], 2)) + 1),
        [x.shape[3]] * x.shape[2], [min(1 + k % 2, 2 if k % 3 == 0 else x.shape[3] // 2) * (x.shape[1] > 1)]
        * x.shape[2], zero_infinity=k % 3 == 0),
}


def _args(tm, name):
    return {"Linear": lambda: (tm.in_features, tm.out_features), "Conv2d": lambda: (
        tm.in_channels, tm.out_channels, tm.kernel_size, tm.stride, tm.padding),
        "BatchNorm2d": lambda: (tm.num_features,), "LayerNorm": lambda: (tm.normalized_shape,),
        "MaxPool2d": lambda: (tm.kernel_size, tm.stride), "AvgPool2d": lambda: (tm.kernel_size, tm.stride),
        "Embedding": lambda: (tm.num_embeddings, tm.embedding_dim)}[name]()


def _run(L, F, case, dtype_name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _call(L, F, case, getattr(L, dtype_name)), None
        except Exception as exc:  # noqa: BLE001
            return None, exc


_image_spec = st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.integers(1, 5),
                       st.sampled_from(["contiguous", "hwc", "sliced", "transposed"]), st.integers(0, 999))
FUNCTIONS = ["softmax", "log_softmax", "layer_norm", "max_pool2d", "avg_pool2d", "mse_loss", "cross_entropy", "dropout",
             *_NEW]
cases = st.one_of(*(st.tuples(st.just(kind), st.sampled_from(names), _image_spec, st.integers(0, 99))
                    for kind, names in (("act", ACTIVATIONS), ("func", FUNCTIONS), ("module", MODULES))))


def check(case, dtype_name):
    want, want_err = _run(torch, TF, case, dtype_name)
    got, err = _run(tgrad, GF, case, dtype_name)
    assert (err is None) == (want_err is None), f"torch: {want_err!r}\ntgrad: {err!r}"
    if err is not None:
        assert same_kind(err, want_err), f"torch: {want_err!r}\ntgrad: {err!r}"
        return
    ref = None
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None, f"output {i}: tgrad {g!r}, torch None"
            continue
        assert tuple(g.shape) == tuple(w.shape), f"output {i}: shape {tuple(g.shape)} != {tuple(w.shape)}"
        if close(g, w, dtype_name):
            continue
        if ref is None:  # float32: PyTorch in float64 on the same numbers is the value reference
            ref = _run(torch, TF, case, "float64")[0] or []
        assert dtype_name != "float64" and i < len(ref) and ref[i] is not None and \
            (close(g, ref[i], dtype_name) or no_less_accurate(g, w, ref[i], dtype_name)), \
            f"output {i} (0 forward, 1 input grad, then params):\n tgrad {g}\n torch {w}"


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          print_blob=True)
@given(case=cases, dtype_name=st.sampled_from(["float64", "float32"]))
def test_functional_calls_and_modules_agree_with_pytorch(case, dtype_name):
    check(case, dtype_name)


if SEED != "random":
    test_functional_calls_and_modules_agree_with_pytorch = seed(int(SEED))(
        test_functional_calls_and_modules_agree_with_pytorch)
