"""tgrad.nn.functional (linear, layer_norm, dropout, embedding, one_hot)
against torch.nn.functional in float64 on the same numbers, with a random upstream gradient:
outputs and the gradients of every input, weight and bias, in float32 and float64, odd sizes,
non-contiguous inputs, the kernels' chunked and multi-program paths (forced by small blocks),
double backward, launch counts, bad inputs, and that torch computes nothing. The losses are in
test_loss.py, the activations and softmax in test_activation.py."""
import pytest
import torch
import torch.nn.functional as TF
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn.functional as F
from support.launches import record_launches
from support.reference import assert_close, make_pair, uniform64, upstream
from support.reference import compare_backward as backprop_and_compare, compare_double_backward
from support.torch_audit import AtenRecorder
from tgrad.kernels.losses import cross_entropy as KCE
from tgrad.kernels.indexing import embedding as KE
from tgrad.kernels.normalization import layer_norm as KLN
from tgrad.kernels.losses import elementwise as KL
from tgrad.kernels.random import philox as KR
from tgrad.kernels.runtime.launch import launch_observers

DTYPES = [tgrad.float32, tgrad.float64]


def noncontiguous_pair(shape, dtype, seed=0):
    """A transposed (last two dims swapped) leaf pair of ``shape``."""
    swapped = tuple(shape[:-2]) + (shape[-1], shape[-2])
    cast = uniform64(swapped, -2, 2, seed).to(dtype.torch)
    x = tgrad.from_torch(cast.clone().transpose(-1, -2)).requires_grad_()
    assert not x.is_contiguous()
    return x, cast.double().transpose(-1, -2).detach().requires_grad_()


# ------------------------------------------------------------------------------ linear

ACT_REF = {None: lambda z: z, "relu": TF.relu, "gelu": TF.gelu, "tanh": torch.tanh,
           "sigmoid": torch.sigmoid, "silu": TF.silu,
           "gelu_tanh": lambda z: TF.gelu(z, approximate="tanh")}
ACT_NODE = {None: "AddmmBackward0", "relu": "ReluBackward0", "gelu": "GeluBackward0",
            "tanh": "TanhBackward0", "sigmoid": "SigmoidBackward0", "silu": "SiluBackward0",
            "gelu_tanh": "GeluBackward0"}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("act", list(ACT_REF))
def test_linear_act_matches_torch(dtype, act):
    x, xr = make_pair((2, 3, 7), dtype, seed=1)
    w, wr = make_pair((5, 7), dtype, -0.6, 0.6, seed=2)
    b, br = make_pair((5,), dtype, seed=3)
    out = F.linear_act(x, w, b, act) if act else F.linear(x, w, b)
    ref = ACT_REF[act](TF.linear(xr, wr, br))
    assert out.shape == (2, 3, 5) and out.grad_fn.name() == ACT_NODE[act]
    backprop_and_compare(out, ref, [(x, xr), (w, wr), (b, br)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["1d", "no_bias", "transposed", "wide"])
def test_linear_shapes_and_layouts(dtype, case):
    if case == "1d":
        (x, xr), shape = make_pair((7,), dtype, seed=4), (5, 7)
    elif case == "transposed":
        (x, xr), shape = noncontiguous_pair((4, 7), dtype), (5, 7)
    elif case == "wide":  # more than one matmul tile in every dim of the interpreted config
        (x, xr), shape = make_pair((3, 70, 150), dtype, -1, 1, seed=4), (130, 150)
    else:
        (x, xr), shape = make_pair((6, 7), dtype, seed=4), (5, 7)
    w, wr = make_pair(shape, dtype, -0.5, 0.5, seed=5)
    if case == "no_bias":
        out, ref, pairs = F.linear(x, w), TF.linear(xr, wr), [(x, xr), (w, wr)]
        assert out.grad_fn.name() == "MmBackward0"
    else:
        b, br = make_pair(shape[:1], dtype, seed=6)
        out, ref, pairs = F.linear(x, w, b), TF.linear(xr, wr, br), [(x, xr), (w, wr), (b, br)]
    # fp32 sums of ~200 products of O(1) terms: an absolute error of a few ulps of the sum
    backprop_and_compare(out, ref, pairs, dtype, atol=3e-5 if case == "wide" and dtype is tgrad.float32 else None)


def test_linear_launches_one_kernel_forward_and_three_backward():
    x, w, b = (tgrad.randn(*s, requires_grad=True) for s in ((4, 3, 6), (5, 6), (5,)))
    with tgrad.count_launches() as fwd:
        y = F.linear_act(x, w, b, "gelu")
    g = tgrad.randn(4, 3, 5)
    with tgrad.count_launches() as bwd:
        tgrad.autograd.grad(y, [x, w, b], g)  # (backward() would add .grad's copies)
    assert dict(fwd) == {"matmul_kernel": 1}
    # act', then dX and (dW with db summed beside it)
    assert dict(bwd) == {"pointwise_kernel": 1, "matmul_kernel": 2}


def test_linear_bad_inputs():
    x, w = tgrad.randn(4, 3), tgrad.randn(2, 5)
    with pytest.raises(RuntimeError, match=r"^mat1 and mat2 shapes cannot be multiplied \(4x3 and 5x2\)$"):
        F.linear(x, w)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x4 and 5x2\)"):
        F.linear(tgrad.randn(2, 3, 4), w)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: double != float"):
        F.linear(tgrad.randn(4, 5, dtype=tgrad.float64), w)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(2\) must match the existing size \(3\)"):
        F.linear(tgrad.randn(4, 5), w, tgrad.randn(3))
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        F.linear_act(tgrad.randn(4, 5), w, None, "swish")


# ------------------------------------------------------------------------------ layer_norm

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,norm,affine", [((5, 7), (7,), "both"), ((2, 3, 3, 5), (3, 5), "both"),
                                                ((4, 9), (9,), "weight"), ((4, 9), (9,), "bias"),
                                                ((3, 6), (6,), "none"), ((11,), (11,), "both")])
def test_layer_norm_matches_torch(dtype, shape, norm, affine):
    x, xr = make_pair(shape, dtype, -3, 5, seed=1)  # a non-zero mean, as real activations have
    w, wr = make_pair(norm, dtype, 0.5, 1.5, seed=2) if affine in ("both", "weight") else (None, None)
    b, br = make_pair(norm, dtype, seed=3) if affine in ("both", "bias") else (None, None)
    out, ref = F.layer_norm(x, norm, w, b, eps=1e-4), TF.layer_norm(xr, norm, wr, br, eps=1e-4)
    assert out.grad_fn.name() == "NativeLayerNormBackward0"
    backprop_and_compare(out, ref, [p for p in ((x, xr), (w, wr), (b, br)) if p[0] is not None], dtype)
    for t in (w, b):
        assert t is None or t.grad.dtype is dtype


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_chunked_rows_and_partial_sums(dtype, monkeypatch):
    """Rows longer than a block (the chunked passes) and several programs (the partial-sum
    buffer reduced in a second launch), forced on the CPU with small blocks."""
    monkeypatch.setattr(KLN, "block_shape_2d", lambda r, c, d: (2, 8, 4))
    monkeypatch.setattr(KLN, "_programs", lambda m, br, d: 3)
    x, xr = noncontiguous_pair((13, 37), dtype)
    w, wr = make_pair((37,), dtype, 0.5, 1.5, seed=2)
    b, br = make_pair((37,), dtype, seed=3)
    with tgrad.count_launches() as launches:
        out = F.layer_norm(x, (37,), w, b)
        backprop_and_compare(out, TF.layer_norm(xr, (37,), wr, br), [(x, xr), (w, wr), (b, br)], dtype)
    assert launches["layer_norm_bwd_kernel"] == 1 and launches["reduce_kernel"] == 1


def test_layer_norm_launches_and_determinism():
    x, w, b = (tgrad.randn(*s, requires_grad=True) for s in ((6, 10), (10,), (10,)))
    g = tgrad.randn(6, 10)
    grads = []
    for _ in range(2):
        with tgrad.count_launches() as fwd:
            y = F.layer_norm(x, 10, w, b)
        with tgrad.count_launches() as bwd:
            grads.append([t.tolist() for t in tgrad.autograd.grad(y, [x, w, b], g)])
        assert dict(fwd) == {"layer_norm_fwd_kernel": 1} and dict(bwd) == {"layer_norm_bwd_kernel": 1}
    assert grads[0] == grads[1]


def test_layer_norm_bad_inputs():
    with pytest.raises(RuntimeError, match=r"^Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
                                           r"but got input of size\[3, 4\]$"):
        F.layer_norm(tgrad.randn(3, 4), (5,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got "
                                           r"weight of shape \[5\] and normalized_shape = \[4\]"):
        F.layer_norm(tgrad.randn(3, 4), (4,), tgrad.randn(5))


# ------------------------------------------------------------------------------ dropout

def test_dropout_keeps_about_1_minus_p_and_scales_the_kept():
    tgrad.manual_seed(3)
    x = tgrad.rand(100, 100, dtype=tgrad.float64) + 1.0
    y = F.dropout(x, 0.3)
    xs, ys = x.torch(), y.torch()
    kept = ys != 0
    assert abs(kept.double().mean().item() - 0.7) < 0.02  # 10^4 draws: 4.6 standard deviations
    torch.testing.assert_close(ys[kept], xs[kept] / 0.7, rtol=1e-15, atol=0)


def test_dropout_mask_is_the_bernoulli_draw_at_the_generators_offset():
    tgrad.manual_seed(5)
    tgrad.rand(3)  # move the offset off zero
    gen = tgrad.default_generator
    seed, offset = gen.initial_seed(), gen.offset
    x = tgrad.ones(7, 9)
    y = F.dropout(x, 0.25)
    mask = torch.empty(7, 9)
    used = KR.fill_bernoulli(mask, seed, offset, 0.75)
    assert (gen.initial_seed(), gen.offset) == (seed, offset + used)
    torch.testing.assert_close(y.torch(), mask / 0.75)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_backward_reuses_the_forward_mask(dtype):
    tgrad.manual_seed(7)
    x, xr = noncontiguous_pair((6, 11), dtype)
    g, gr = upstream((6, 11), dtype)
    with tgrad.count_launches() as launches:
        y = F.dropout(x, 0.4)
        dx, = tgrad.autograd.grad(y, [x], g)
    assert dict(launches) == {"dropout_kernel": 2}  # the mask is drawn again, never stored
    mask = (y.torch() != 0).double()
    assert_close(y, xr.detach() * mask / 0.6, dtype)
    assert_close(dx, gr * mask / 0.6, dtype)
    assert y.grad_fn.name() == "NativeDropoutBackward0"


def test_dropout_is_deterministic_under_manual_seed_and_fresh_otherwise():
    x = tgrad.ones(50)
    tgrad.manual_seed(0)
    a, b = F.dropout(x, 0.5), F.dropout(x, 0.5)
    tgrad.manual_seed(0)
    c = F.dropout(x, 0.5)
    assert a.tolist() == c.tolist() and a.tolist() != b.tolist()


def test_dropout_edge_cases():
    x = tgrad.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.0) is x and F.dropout(x, 0.9, training=False) is x
    z = F.dropout(x, 1.0)
    assert z.tolist() == [[0.0] * 5] * 4 and z.grad_fn.name() == "MulBackward0"
    z.sum().backward()
    assert x.grad.tolist() == [[0.0] * 5] * 4
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
            F.dropout(x, p)
    y = x * 1.0
    tgrad.manual_seed(1)
    out = F.dropout(y, 0.5, inplace=True)
    tgrad.manual_seed(1)
    assert out is y and out.tolist() == F.dropout(x, 0.5).tolist()


# ------------------------------------------------------------------------------ embedding, one_hot

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx", [None, 3, -2])
def test_embedding_matches_torch(dtype, padding_idx):
    w, wr = make_pair((7, 5), dtype, seed=1)
    idx = torch.tensor([[1, 3, 3, 5], [0, 6, 1, 3], [5, 5, 5, 2]])
    out = F.embedding(tgrad.from_torch(idx.clone()), w, padding_idx)
    ref = TF.embedding(idx, wr, padding_idx)
    assert out.grad_fn.name() == "EmbeddingBackward0" and len(out.grad_fn.next_functions) == 1
    backprop_and_compare(out, ref, [(w, wr)], dtype)


def test_embedding_int32_strided_indices_transposed_weight_small_blocks(monkeypatch):
    monkeypatch.setattr(KE, "block_shape_2d", lambda r, c, d: (4, 2, 4))  # 2 programs x 2 chunks
    w, wr = noncontiguous_pair((9, 3), tgrad.float64)
    idx = torch.tensor([[8, 0, 2], [2, 2, 7]], dtype=torch.int32).t()
    out = F.embedding(tgrad.from_torch(idx), w)
    backprop_and_compare(out, TF.embedding(idx, wr), [(w, wr)], tgrad.float64)
    assert torch.equal(F.one_hot(tgrad.from_torch(idx.long()), 9).torch(), TF.one_hot(idx.long(), 9))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_embedding_of_integer_weights_is_exact(dtype):
    """Integer rows are copied as they are (no float round trip: 2**24 + 1 stays odd)."""
    big = 2 ** 40 + 1 if dtype == torch.int64 else 2 ** 30 + 1
    wr = torch.tensor([[big, 3, -7], [16777217, -5, 2 ** 24 + 3], [0, 1, -big]], dtype=dtype)
    idx = torch.tensor([[1, 0], [2, 1], [0, 0]])
    out = F.embedding(tgrad.from_torch(idx.clone()), tgrad.from_torch(wr.clone()))
    assert torch.equal(out.torch(), TF.embedding(idx, wr))


@pytest.mark.parametrize("bad", [7, -1])
def test_embedding_out_of_range_index(bad):
    w = tgrad.randn(7, 3, requires_grad=True)
    with pytest.raises(IndexError, match=rf"^index out of range in self \(index {bad} for an embedding of 7 rows\)$"):
        F.embedding(tgrad.tensor([[0, 1], [bad, 2]]), w)


def test_embedding_bad_arguments():
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(tgrad.tensor([0.0]), tgrad.randn(3, 2))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(tgrad.tensor([0]), tgrad.randn(3, 2), padding_idx=3)


def test_one_hot():
    idx = torch.tensor([[2, 0, 4], [1, 1, 3]])
    for n in (-1, 6):
        out = F.one_hot(tgrad.from_torch(idx), n)
        assert out.dtype is tgrad.int64 and not out.requires_grad
        assert torch.equal(out.torch(), TF.one_hot(idx, n))
    assert F.one_hot(tgrad.tensor([], dtype=tgrad.int64), 3).shape == (0, 3)
    for t, n, msg in (([0, 3], 2, r"Class values must be smaller than num_classes\. \(got 3 with num_classes=2\)"),
                      ([0, -1], 5, r"Class values must be non-negative\. \(got -1\)"),
                      ([], -1, "Can not infer total number of classes from empty tensor."),
                      ([], 0, "Can not infer total number of classes from empty tensor.")):
        with pytest.raises(RuntimeError, match=f"^{msg}$"):
            F.one_hot(tgrad.tensor(t, dtype=tgrad.int64), n)
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(tgrad.tensor([0.0, 1.0]))


# ------------------------------------------------------------------------------ double backward

@pytest.mark.parametrize("act", ["tanh", "gelu", None])
def test_linear_double_backward(act):
    pairs = [make_pair((3, 4), tgrad.float64, seed=1), make_pair((2, 4), tgrad.float64, seed=2),
             make_pair((2,), tgrad.float64, seed=3)]
    compare_double_backward(lambda x, w, b: F.linear_act(x, w, b, act),
                            lambda x, w, b: ACT_REF[act](TF.linear(x, w, b)), pairs, rtol=1e-9, atol=1e-10)


def test_layer_norm_double_backward():
    pairs = [make_pair((3, 5), tgrad.float64, seed=1), make_pair((5,), tgrad.float64, 0.5, 1.5, seed=2),
             make_pair((5,), tgrad.float64, seed=3)]
    compare_double_backward(lambda x, w, b: F.layer_norm(x, (5,), w, b),
                            lambda x, w, b: TF.layer_norm(x, (5,), w, b), pairs, rtol=1e-9, atol=1e-10)


def test_dropout_and_embedding_double_backward():
    # both backwards are linear in the incoming gradient: differentiate them with respect to it
    x = tgrad.randn(4, 6, dtype=tgrad.float64, requires_grad=True)
    y = F.dropout(x, 0.5)
    mask = (y.torch() != 0).double() * 2.0
    g, gr = upstream((4, 6), tgrad.float64)
    c, cr = upstream((4, 6), tgrad.float64, seed=3)
    dx, = tgrad.autograd.grad(y, [x], g.requires_grad_(), create_graph=True)
    assert_close(tgrad.autograd.grad((dx * c).sum(), [g])[0], cr * mask)
    w, wr = make_pair((5, 3), tgrad.float64)
    idx = torch.tensor([1, 4, 1, 2])
    out = F.embedding(tgrad.from_torch(idx), w, 1)
    gw, = tgrad.autograd.grad((out * out).sum(), [w], create_graph=True)
    rw, = torch.autograd.grad((TF.embedding(idx, wr, 1) ** 2).sum(), [wr], create_graph=True)
    assert_close(gw, rw)
    assert_close(tgrad.autograd.grad((gw * gw).sum(), [w])[0], torch.autograd.grad((rw * rw).sum(), [wr])[0])


# ------------------------------------------------------------------------------ no torch compute

def test_torch_computes_nothing_in_a_functional_training_step():
    tgrad.manual_seed(0)
    x, idx, cls = tgrad.randn(6, 5), tgrad.tensor([1, 0, 3, 4, 2, 4]), tgrad.tensor([1, 0, 3, 3, 2, 0])
    w, b = tgrad.randn(4, 5, requires_grad=True), tgrad.randn(4, requires_grad=True)
    emb = tgrad.randn(5, 5, requires_grad=True)
    with AtenRecorder() as rec:
        h = F.layer_norm(F.dropout(F.linear_act(x + F.embedding(idx, emb), w, b, "gelu"), 0.2), (4,))
        loss = F.cross_entropy(h, cls, label_smoothing=0.1) + F.mse_loss(h, h.detach() * 0.5)
        loss = loss + F.binary_cross_entropy_with_logits(h, F.one_hot(cls, 4).float())
        loss.backward()
    assert rec.ops["empty"] > 0
    assert rec.computed() == {}, f"torch computed: {rec.computed()}"
    assert all(t.grad is not None for t in (w, b, emb))


# ------------------------------------------------------------------------------ compiles for CUDA

def _workload(monkeypatch):
    """One fp32 pass through every kernel of nn.functional, then again with small blocks and
    several programs, so the chunked and partial-sum branches are launched too."""
    for small in (False, True):
        if small:
            monkeypatch.setattr(KLN, "block_shape_2d", lambda r, c, d: (2, 4, 4))
            monkeypatch.setattr(KCE, "block_shape_2d", lambda r, c, d: (2, 4, 4))
            monkeypatch.setattr(KLN, "_programs", lambda m, br, d: 2)
            monkeypatch.setattr(KCE, "programs_for", lambda n, d: 2)
            monkeypatch.setattr(KL, "programs_for", lambda n, d: 2)
            monkeypatch.setattr(KL, "block_for", lambda n, d: 8)
        x = tgrad.randn(5, 7, requires_grad=True)
        w, t = tgrad.rand(7, requires_grad=True), tgrad.tensor([0, 1, 2, 3, 4])
        F.layer_norm(x, (7,), w, w).sum().backward()
        F.cross_entropy(x, t, label_smoothing=0.1, weight=w.detach()).backward()
        F.cross_entropy(x, tgrad.rand(5, 7), reduction="none").sum().backward()
        F.nll_loss(x, t).backward()
        F.binary_cross_entropy_with_logits(x, x.detach().sigmoid(), w.detach(), pos_weight=w.detach()).backward()
        F.binary_cross_entropy(x.sigmoid(), x.detach().sigmoid(), reduction="none").sum().backward()
    F.dropout(x, 0.3).sum().backward()
    F.embedding(t, x).sum().backward()
    F.one_hot(t)


@pytest.mark.cpu_launch_decisions
def test_every_functional_kernel_compiles_for_sm90(monkeypatch):
    """As test_cuda_compile.py does for the core: each configuration launched above compiles to
    a cubin for sm_90 with Triton's bundled ptxas (no GPU needed); the interpreter accepts code the
    compiler rejects."""
    launches = {}
    observer = record_launches(launches)
    launch_observers.append(observer)
    try:
        _workload(monkeypatch)
    finally:
        launch_observers.remove(observer)
    ours = {k: v for k, v in launches.items() if v[0].fn.__module__ in
            ("tgrad.kernels.normalization.layer_norm", "tgrad.kernels.losses.cross_entropy",
             "tgrad.kernels.losses.elementwise", "tgrad.kernels.random.dropout", "tgrad.kernels.indexing.embedding")}
    assert len({k[0] for k in ours}) == 12, sorted({k[0] for k in ours})
    failures = []
    for (name, _, consts), (kernel, signature, constants, options) in ours.items():
        try:
            assert triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32),
                                  options=options).asm["cubin"]
        except Exception as e:  # collect all, report together
            failures.append(f"{name} {consts[:200]}: {type(e).__name__}: {str(e)[:300]}")
    assert not failures, "kernels that do not compile for sm_90:\n" + "\n".join(failures)
