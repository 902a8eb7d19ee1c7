"""F.scaled_dot_product_attention, nn.MultiheadAttention and the Transformer family against torch,
and tril/triu. torch runs in float64 on the same numbers; backward uses random upstream gradients."""

import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as F
from support.modules import assert_param_grads, backward_both, copy_module, module_pair
from support.reference import assert_close, make_pair, raises, uniform64
from support.torch_audit import AtenRecorder
from tgrad.kernels import attention as KA
from tgrad.kernels.runtime.launch import count_launches, launch_observers
from tgrad.nn.functional.attention import _sdpa_composed
from tgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def bool_mask(shape, seed):
    m = uniform64(shape, 0, 1, seed) > 0.4
    return tgrad.from_torch(m.clone()), m


SDPA_CASES = [
    dict(),
    dict(is_causal=True),
    dict(mask="bool"),
    dict(mask="add"),
    dict(gqa=True, scale=0.3),
    dict(mask="bool", dead_row=True),
    dict(batch=(), is_causal=True),
]


@pytest.mark.parametrize("whole", [True, False], ids=["whole", "blocks"])
@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32])
def test_sdpa_matches_torch(case, dtype, whole, monkeypatch):
    """Both CPU paths: every head's whole problem in one program (kernels/attention_whole.py; GQA
    takes the blocks), and the packed blocks of kernels/attention.py."""
    if not whole:
        monkeypatch.setattr(KA, "fits", lambda *a: False)
    batch = case.get("batch", (2, 3))
    L, S, E, EV = 5, 7, 4, 6
    hk = (1,) if case.get("gqa") else batch[-1:]
    q, qr = make_pair(batch + (L, E), dtype, seed=1)
    k, kr = make_pair(batch[:-1] + hk + (S, E), dtype, seed=2)
    v, vr = make_pair(batch[:-1] + hk + (S, EV), dtype, seed=3)
    m = mr = None
    if case.get("mask") == "bool":
        m, mr = bool_mask((L, S), 4)
        if case.get("dead_row"):
            mr[1] = False
            m = tgrad.from_torch(mr.clone())
    elif case.get("mask") == "add":
        m, mr = make_pair((batch[0], 1, L, S), dtype, requires_grad=False, seed=5)
    kw = dict(is_causal=case.get("is_causal", False), scale=case.get("scale"), enable_gqa=case.get("gqa", False))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    ref = TF.scaled_dot_product_attention(qr, kr, vr, attn_mask=mr, **kw)
    backward_both([out], [ref])
    for a, b, n in ((q, qr, "q"), (k, kr, "k"), (v, vr, "v")):
        assert_close(a.grad, b.grad, msg=f"grad of {n}")


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_several_blocks(monkeypatch, causal, packed):
    """Odd sizes over several 16-wide query and key blocks: the online rescaling, the causal block
    bounds, and both layouts -- one head per program (compiled) and heads packed into shared tiles
    whose blocks straddle heads (interpreted)."""
    monkeypatch.setattr(KA, "_layout", lambda *a: (packed, 16, 16, 16, 16, 4))
    monkeypatch.setattr(KA, "fits", lambda *a: False)
    for L, S, mask in ((37, 29, None), (29, 37, "bool"), (7, 5, "add")):
        q, qr = make_pair((2, 2, L, 5), tgrad.float64, seed=L)
        k, kr = make_pair((2, 1, S, 5), tgrad.float64, seed=S)
        v, vr = make_pair((2, 1, S, 3), tgrad.float64, seed=7)
        m = mr = None
        if mask == "bool":
            m, mr = bool_mask((2, 1, L, S), 8)
        elif mask == "add":
            m, mr = make_pair((L, S), tgrad.float64, requires_grad=False, seed=9)
        c = causal and mask is None
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=c, enable_gqa=True)
        ref = TF.scaled_dot_product_attention(qr, kr, vr, attn_mask=mr, is_causal=c, enable_gqa=True)
        backward_both([out], [ref])
        for a, b in ((q, qr), (k, kr), (v, vr)):
            assert_close(a.grad, b.grad)


@pytest.mark.parametrize("whole", [pytest.param(True, marks=pytest.mark.cpu_launch_decisions), False],
                         ids=["whole", "blocks"])
def test_sdpa_launches_and_no_weights_matrix(whole, monkeypatch):
    """One launch forward; backward one (whole) or two (blocks: dq, then dk and dv)."""
    if not whole:
        monkeypatch.setattr(KA, "fits", lambda *a: False)
    q = tgrad.randn(1, 2, 9, 4, requires_grad=True)
    k = tgrad.randn(1, 2, 11, 4, requires_grad=True)
    v = tgrad.randn(1, 2, 11, 4, requires_grad=True)
    with count_launches() as c:
        out = F.scaled_dot_product_attention(q, k, v)
    assert dict(c) == ({"attn_whole_fwd_kernel": 1} if whole else {"attn_fwd_kernel": 1})
    node = out.grad_fn  # the attention's own node (4-d operands: no view between, as PyTorch)
    assert type(node).__name__ == "ScaledDotProductFlashAttentionBackward0"
    assert all(t is None or t.shape[-1] != 11 or t.shape[-2] != 9 for t in node.saved_tensors)
    with count_launches() as c:
        out.sum().backward()
    if whole:
        assert c["attn_whole_bwd_kernel"] == 1 and "attn_bwd_dq_kernel" not in c
    else:
        assert c["attn_bwd_dq_kernel"] == 1 and c["attn_bwd_dkv_kernel"] == 1


def test_sdpa_dropout_regenerates_mask():
    q, _ = make_pair((2, 2, 6, 4), tgrad.float64, seed=1)
    k, _ = make_pair((2, 2, 5, 4), tgrad.float64, seed=2)
    v, _ = make_pair((2, 2, 5, 3), tgrad.float64, seed=3)
    tgrad.manual_seed(3)
    seed, offset = tgrad.default_generator._seed, tgrad.default_generator.offset
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    g = tgrad.from_torch(uniform64(tuple(out.shape), -1, 1, 9))
    grads = tgrad.autograd.grad(out, [q, k, v], g)
    # the composed form with the same (seed, offset) draws the same mask: same output and gradients
    ref = _sdpa_composed(q, k, v, None, KA.MASK_NONE, False, 0.5, 0.4, seed, offset, None)
    ref_grads = tgrad.autograd.grad(ref, [q, k, v], g)
    assert_close(out, ref.torch().double())
    for a, b in zip(grads, ref_grads):
        assert_close(a, b.torch().double())
    nodrop = F.scaled_dot_product_attention(q, k, v)
    assert not torch.allclose(out.torch(), nodrop.torch()), "no element was dropped"
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert not torch.equal(out.torch(), again.torch()), "the generator did not advance"


def test_sdpa_double_backward():
    q, qr = make_pair((1, 2, 4, 3), tgrad.float64, seed=1)
    k, kr = make_pair((1, 2, 5, 3), tgrad.float64, seed=2)
    v, vr = make_pair((1, 2, 5, 3), tgrad.float64, seed=3)
    m, mr = bool_mask((4, 5), 6)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):  # torch's twice-differentiable one
        ref = TF.scaled_dot_product_attention(qr, kr, vr, attn_mask=mr)
    gs = tgrad.autograd.grad(out.sum(), [q, k, v], create_graph=True)
    grs = torch.autograd.grad(ref.sum(), [qr, kr, vr], create_graph=True)
    loss = sum((g * g).sum() for g in gs)
    loss_r = sum((g * g).sum() for g in grs)
    loss.backward()
    loss_r.backward()
    for a, b in ((q, qr), (k, kr), (v, vr)):
        assert_close(a.grad, b.grad)


def test_sdpa_mask_requiring_grad():
    q, qr = make_pair((2, 3, 4), tgrad.float64, seed=1)
    k, kr = make_pair((2, 5, 4), tgrad.float64, seed=2)
    v, vr = make_pair((2, 5, 4), tgrad.float64, seed=3)
    m, mr = make_pair((3, 5), tgrad.float64, seed=4)
    backward_both([F.scaled_dot_product_attention(q, k, v, m)], [TF.scaled_dot_product_attention(qr, kr, vr, mr)])
    assert_close(m.grad, mr.grad)


def test_sdpa_errors():
    q = tgrad.zeros(1, 2, 3, 4)
    with raises(RuntimeError, "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                              "is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=tgrad.zeros(3, 3), is_causal=True)
    with pytest.raises(RuntimeError, match="must match the size"):
        F.scaled_dot_product_attention(q, tgrad.zeros(1, 1, 3, 4), tgrad.zeros(1, 1, 3, 4))
    with pytest.raises(RuntimeError, match="same embedding dimension"):
        F.scaled_dot_product_attention(q, tgrad.zeros(1, 2, 3, 5), q)


@pytest.mark.parametrize("kw,call", [
    (dict(), dict()),
    (dict(batch_first=True), dict(average_attn_weights=False)),
    (dict(kdim=3, vdim=5, bias=False), dict(need_weights=False)),
    (dict(add_bias_kv=True, add_zero_attn=True), dict()),
])
def test_multihead_attention(kw, call):
    E, H, L, S, N = 6, 2, 4, 5, 3
    ref, mod = module_pair("MultiheadAttention", E, H, **kw)
    bf = kw.get("batch_first", False)
    shape = (lambda n, d: (N, n, d)) if bf else (lambda n, d: (n, N, d))
    q, qr = make_pair(shape(L, E), tgrad.float64, seed=1)
    k, kr = make_pair(shape(S, kw.get("kdim", E)), tgrad.float64, seed=2)
    v, vr = make_pair(shape(S, kw.get("vdim", E)), tgrad.float64, seed=3)
    kpm, kpmr = bool_mask((N, S), 4)
    kpmr[:, 0] = False
    kpm = tgrad.from_torch(kpmr.clone())
    am, amr = make_pair((L, S), tgrad.float64, requires_grad=False, seed=5)
    out, w = mod(q, k, v, key_padding_mask=kpm, attn_mask=am, **call)
    outr, wr = ref(qr, kr, vr, key_padding_mask=kpmr, attn_mask=amr, **call)
    backward_both([out, w], [outr, wr])
    for a, b in ((q, qr), (k, kr), (v, vr)):
        assert_close(a.grad, b.grad)
    assert_param_grads(ref, mod)


def test_self_attention_bool_causal_mask():
    ref, mod = module_pair("MultiheadAttention", 6, 3, batch_first=True)
    x, xr = make_pair((2, 5, 6), tgrad.float64, seed=1)
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    out, _ = mod(x, x, x, attn_mask=tgrad.from_torch(causal.clone()), need_weights=False, is_causal=True)
    outr, _ = ref(xr, xr, xr, attn_mask=causal, need_weights=False, is_causal=True)
    backward_both([out], [outr])
    assert_close(x.grad, xr.grad)


def test_self_attention_causal_hint_stands_for_the_mask():
    """As PyTorch: with is_causal, no key padding mask and no weights asked for, the attention runs
    causal and never reads attn_mask (here one that is not causal at all: the result is still causal)."""
    ref, mod = module_pair("MultiheadAttention", 6, 2, batch_first=True)
    x, xr = make_pair((2, 5, 6), tgrad.float64, seed=7)
    am, amr = make_pair((5, 5), tgrad.float64, requires_grad=False, seed=8)
    seen = []
    launch_observers.append(lambda kernel, grid, args, meta: seen.append(meta) if "attn" in kernel.__name__ else None)
    try:
        out, _ = mod(x, x, x, attn_mask=am, need_weights=False, is_causal=True)
    finally:
        launch_observers.pop()
    outr, _ = ref(xr, xr, xr, attn_mask=amr, need_weights=False, is_causal=True)
    backward_both([out], [outr])
    assert_close(x.grad, xr.grad)
    assert_param_grads(ref, mod)
    assert [(m["MASK_KIND"], m["CAUSAL"]) for m in seen] == [(KA.MASK_NONE, True)]


@pytest.mark.parametrize("kw", [dict(), dict(norm_first=True, activation="gelu", batch_first=True)])
def test_encoder_decoder_layers(kw):
    d, H, ff = 6, 2, 7
    ref, mod = module_pair("Transformer", d, H, 2, 1, ff, dropout=0.0, **kw)
    bf = kw.get("batch_first", False)
    src, srcr = make_pair((2, 5, d) if bf else (5, 2, d), tgrad.float64, seed=1)
    tgt, tgtr = make_pair((2, 4, d) if bf else (4, 2, d), tgrad.float64, seed=2)
    mask = tgrad.nn.Transformer.generate_square_subsequent_mask(4, dtype=tgrad.float64)
    maskr = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    assert_close(mask, maskr)
    kpm, kpmr = bool_mask((2, 5), 3)
    kpmr[:, 0] = False
    kpm = tgrad.from_torch(kpmr.clone())
    out = mod(src, tgt, tgt_mask=mask, src_key_padding_mask=kpm, memory_key_padding_mask=kpm, tgt_is_causal=True)
    outr = ref(srcr, tgtr, tgt_mask=maskr, src_key_padding_mask=kpmr, memory_key_padding_mask=kpmr,
               tgt_is_causal=True)
    backward_both([out], [outr])
    assert_close(src.grad, srcr.grad)
    assert_close(tgt.grad, tgtr.grad)
    assert_param_grads(ref, mod)


def test_encoder_layer_custom_activation():
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoderLayer(6, 3, 5, dropout=0.0, activation=torch.tanh).double()
    mod = tgrad.nn.TransformerEncoderLayer(6, 3, 5, dropout=0.0, activation=tgrad.tanh, dtype=tgrad.float64)
    copy_module(ref, mod)
    x, xr = make_pair((3, 2, 6), tgrad.float64, seed=1)
    backward_both([mod(x)], [ref(xr)])
    assert_close(x.grad, xr.grad)


def test_tril_triu():
    x, xr = make_pair((2, 4, 5), tgrad.float64, seed=1)
    for k in (-1, 0, 2):
        backward_both([tgrad.tril(x, k), x.triu(diagonal=k)], [torch.tril(xr, k), xr.triu(diagonal=k)], seed=k + 3)
    assert_close(x.grad, xr.grad)
    b = tgrad.ones(3, 4, dtype=tgrad.bool).tril(1)
    assert torch.equal(b.torch(), torch.ones(3, 4, dtype=torch.bool).tril(1))
    y = tgrad.from_torch(uniform64((3, 3), seed=2).clone())
    y.triu_(1)
    assert torch.equal(y.torch(), uniform64((3, 3), seed=2).triu(1))
    a, ar = make_pair((3, 3), tgrad.float64, seed=3)
    (a * 2).tril_().sum().backward()
    (ar * 2).tril_().sum().backward()
    assert_close(a.grad, ar.grad)
    with raises(RuntimeError, "tril: input tensor must have at least 2 dimensions"):
        tgrad.tril(tgrad.zeros(3))


def test_torch_computes_nothing():
    """The sequence-model layers run every value through Triton kernels (the aten audit of
    test_no_torch_compute over LSTM/GRU with packing, a Transformer layer, MHA and the norms)."""
    lstm = tgrad.nn.LSTM(3, 4, bidirectional=True)
    gru = tgrad.nn.GRU(3, 4)
    layer = tgrad.nn.TransformerEncoderLayer(6, 2, 8, dropout=0.1)
    norms = [tgrad.nn.GroupNorm(2, 4), tgrad.nn.InstanceNorm1d(4, affine=True, track_running_stats=True)]
    x = tgrad.randn(5, 2, 3, requires_grad=True)
    s = tgrad.randn(5, 2, 6, requires_grad=True)
    with AtenRecorder() as rec:
        lstm(x)[0].sum().backward()
        out, _ = gru(pack_padded_sequence(x, [5, 3]))
        pad_packed_sequence(out)[0].sum().backward()
        layer(s, src_mask=tgrad.nn.Transformer.generate_square_subsequent_mask(5)).sum().backward()
        for n in norms:
            n(tgrad.randn(3, 4, 5, requires_grad=True)).sum().backward()
        tgrad.nn.RMSNorm(6)(s).sum().backward()
        tgrad.nn.MultiheadAttention(6, 2)(s, s, s)[0].sum().backward()
    assert sum(rec.ops.values()) > 0
    assert rec.computed() == {}


def test_sdpa_dropout_same_in_both_layouts(monkeypatch):
    """The dropout mask is a function of (b, h, i, j) only: the compiled layout (one head per
    program, 16-wide blocks) and the packed one draw what the whole-problem program does."""
    q, _ = make_pair((2, 2, 19, 4), tgrad.float64, seed=1)
    k, _ = make_pair((2, 2, 23, 4), tgrad.float64, seed=2)
    v, _ = make_pair((2, 2, 23, 3), tgrad.float64, seed=3)
    results = []
    for layout in (None, "packed", (False, 16, 16, 16, 16, 4)):  # whole, then the two block layouts
        if layout is not None:
            monkeypatch.setattr(KA, "fits", lambda *a: False)
        if isinstance(layout, tuple):
            monkeypatch.setattr(KA, "_layout", lambda *a: layout)
        tgrad.manual_seed(5)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
        results.append([out] + list(tgrad.autograd.grad(out, [q, k, v], tgrad.ones_like(out))))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert_close(a, b.torch().double())


@pytest.mark.cpu_launch_decisions  # the whole-problem kernel's; the GPU's block kernels write them contiguous
def test_sdpa_gradients_keep_the_inputs_memory_order():
    """Heads split from a (B, L, H, E) tensor get gradients laid out as it is, so merging the heads
    back is a view (one launch fewer per input in a transformer's backward), with torch's values."""
    base, base_r = make_pair((2, 5, 2, 4), tgrad.float64, seed=1)
    kv, kv_r = make_pair((2, 7, 2, 4), tgrad.float64, seed=2)
    q, k = base.permute(0, 2, 1, 3), kv.permute(0, 2, 1, 3)
    out = F.scaled_dot_product_attention(q, k, k, is_causal=True)
    g = tgrad.from_torch(uniform64(tuple(out.shape), -1, 1, 3))
    dq, dk = tgrad.autograd.grad(out, [q, k], g)
    assert dq.stride() == q.stride() and dk.stride() == k.stride()
    ref = TF.scaled_dot_product_attention(base_r.permute(0, 2, 1, 3), kv_r.permute(0, 2, 1, 3),
                                          kv_r.permute(0, 2, 1, 3), is_causal=True)
    ref_dq, ref_dk = torch.autograd.grad(ref, [base_r, kv_r], g.torch())
    assert_close(dq.permute(0, 2, 1, 3), ref_dq)
    assert_close(dk.permute(0, 2, 1, 3), ref_dk)
