"""A fused backward as a differentiable Function (``tgrad.autograd.fused_backward``): the fused
ops of tgrad.nn differentiated twice against PyTorch in float64, with an upstream gradient that
itself depends on the inputs (so a path through it must not be counted twice) and random
projections; gradgradcheck (which also differentiates with respect to the upstream gradient) of
the families that had none; what the first-order gradients record; PyTorch's refusal of
arguments it has no derivative for."""
import pytest
import torch
import torch.nn.functional as TF

import tgrad
import tgrad.nn.functional as F
from support.reference import assert_close, compare_derivatives_of, make_pair, uniform64
from tgrad.autograd import gradgradcheck
from tgrad.kernels import rnn as KR
from tgrad.nn.functional.rnn import rnn_layer


def second_order(fn_t, fn_r, shapes, seed=0, ranges=None):
    """For L = <fn(x)^3, u> (so dL/dfn depends on x): dL/dx with create_graph in both libraries,
    then d/dx <dL/dx, v>; values of both orders compared."""
    ranges = ranges or [(-2.0, 2.0)] * len(shapes)
    pairs = [make_pair(s, tgrad.float64, lo, hi, seed=seed + i) for i, (s, (lo, hi)) in enumerate(zip(shapes, ranges))]
    xs, rs = [t for t, _ in pairs], [r for _, r in pairs]
    out, ref = fn_t(*xs), fn_r(*rs)
    u = uniform64(tuple(ref.shape), -1, 1, seed + 5)
    d_t = tgrad.autograd.grad((out ** 3 * tgrad.from_torch(u.clone())).sum(), xs, create_graph=True)
    d_r = torch.autograd.grad((ref ** 3 * u).sum(), rs, create_graph=True)
    for a, b in zip(d_t, d_r):
        assert_close(a, b, msg="first derivative")
    compare_derivatives_of(d_t, d_r, xs, rs, seed, rtol=1e-9, atol=1e-10)


POS = (0.5, 1.5)
CASES = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b), lambda x, w, b: TF.layer_norm(x, (4,), w, b),
                   [(3, 4), (4,), (4,)], None),
    "rms_norm": (lambda x, w: F.rms_norm(x, (4,), w, 1e-5), lambda x, w: TF.rms_norm(x, (4,), w, 1e-5),
                 [(3, 4), (4,)], None),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
                   [(2, 4, 3), (4,), (4,)], None),
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
                         [(3, 2, 2), (2,), (2,)], None),
    "batch_norm_eval": (lambda x, w, b: F.batch_norm(x, tgrad.tensor([0.1, -0.2], dtype=tgrad.float64),
                                                     tgrad.tensor([0.5, 2.0], dtype=tgrad.float64), w, b),
                        lambda x, w, b: TF.batch_norm(x, torch.tensor([0.1, -0.2], dtype=torch.float64),
                                                      torch.tensor([0.5, 2.0], dtype=torch.float64), w, b),
                        [(3, 2), (2,), (2,)], None),
    "linear_gelu": (lambda x, w, b: F.linear_act(x, w, b, "gelu"), lambda x, w, b: TF.gelu(TF.linear(x, w, b)),
                    [(2, 3, 4), (3, 4), (3,)], None),
    "linear_sigmoid": (lambda x, w, b: F.linear_act(x, w, b, "sigmoid"),
                       lambda x, w, b: TF.linear(x, w, b).sigmoid(), [(3, 4), (2, 4), (2,)], None),
    "linear_same_tensor": (lambda x: F.linear(x, x), lambda x: TF.linear(x, x), [(3, 3)], None),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), lambda x, y: TF.mse_loss(x, y), [(2, 3), (2, 3)], None),
    "bce_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"),
                        lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction="sum"),
                        [(2, 3), (2, 3)], [(-2, 2), (0.1, 0.9)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, tgrad.tensor([2, 0, 1]), label_smoothing=0.1),
                      lambda x: TF.cross_entropy(x, torch.tensor([2, 0, 1]), label_smoothing=0.1), [(3, 4)], None),
    "cross_entropy_probs": (lambda x, p, w: F.cross_entropy(x, p, w), lambda x, p, w: TF.cross_entropy(x, p, w),
                            [(3, 4), (3, 4), (4,)], [(-2, 2), (0.1, 0.9), POS]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
             [(1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 2)], None),
    "sdpa_float_mask": (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
                        lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, m),
                        [(1, 3, 2), (1, 4, 2), (1, 4, 3), (3, 4)], None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_second_derivative_matches_pytorch(name):
    fn_t, fn_r, shapes, ranges = CASES[name]
    second_order(fn_t, fn_r, shapes, ranges=ranges)


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_rnn_second_derivative_matches_pytorch(kind):
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(2, 3).double()
    mod = getattr(tgrad.nn, kind)(2, 3, dtype=tgrad.float64)
    for p, r in zip(mod.parameters(), ref.parameters()):
        p.data = tgrad.from_torch(r.detach().clone())
    second_order(lambda x: mod(x)[0], lambda x: ref(x)[0], [(3, 2, 2)])


T64 = lambda *s, seed=0, low=-2.0: tgrad.from_torch(uniform64(s, low, 2.0, seed)).requires_grad_()  # noqa: E731


@pytest.mark.parametrize("name, fn, inputs", [
    ("rms_norm", lambda x, w: F.rms_norm(x, (3,), w), lambda: (T64(2, 3), T64(3, seed=1))),
    ("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), lambda: (T64(1, 4, 2), T64(4, seed=1), T64(4, seed=2))),
    ("sdpa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v), lambda: (T64(1, 2, 2), T64(1, 3, 2, seed=1),
                                                                             T64(1, 3, 2, seed=2))),
    ("sdpa_float_mask", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, m),
     lambda: (T64(1, 2, 2), T64(1, 3, 2, seed=1), T64(1, 3, 2, seed=2), T64(2, 3, seed=3))),
    ("gru_layer", lambda xg, w, b, h: rnn_layer(KR.MODES["GRU"], xg, w, b, h, None)[0],
     lambda: (T64(2, 1, 6), T64(6, 2, seed=1), T64(6, seed=2), T64(1, 2, seed=3))),
    ("lstm_layer", lambda xg, w, h, c: rnn_layer(KR.MODES["LSTM"], xg, w, None, h, c)[0],
     lambda: (T64(2, 1, 8), T64(8, 2, seed=1), T64(1, 2, seed=2), T64(1, 2, seed=3))),
])
def test_gradgradcheck(name, fn, inputs):
    assert gradgradcheck(fn, inputs(), fast_mode=True)


def test_first_order_gradients_record_nothing_without_create_graph():
    x, w, b = T64(3, 4), T64(4, seed=1), T64(4, seed=2)
    dx, dw, db = tgrad.autograd.grad((F.layer_norm(x, (4,), w, b) ** 2).sum(), (x, w, b))
    assert not (dx.requires_grad or dw.requires_grad or db.requires_grad)
    y = F.linear(x, tgrad.ones(2, 4, dtype=tgrad.float64))
    g, = tgrad.autograd.grad((y * y.detach()).sum(), x, create_graph=True)
    assert not g.requires_grad  # g @ W of constants: nothing to record, as PyTorch's mm


def test_second_order_node_is_named_after_the_first():
    x, w = T64(2, 3), T64(3, seed=1)
    g, = tgrad.autograd.grad((F.layer_norm(x, (3,), w) ** 2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "NativeLayerNormBackwardBackward0"


def test_arguments_without_a_derivative_are_refused_only_when_recorded():
    x, y = T64(2, 3), tgrad.rand(2, 3, dtype=tgrad.float64)
    w = T64(2, 3, seed=1)
    message = ("The function 'binary_cross_entropy_with_logits' is not differentiable with respect to argument "
               "'pos_weight'. This input cannot have requires_grad True.")
    with pytest.raises(RuntimeError, match=f"^{message}$".replace("(", r"\(").replace(")", r"\)")):
        F.binary_cross_entropy_with_logits(x, y, pos_weight=w)
    with pytest.raises(RuntimeError, match="'nll_loss_forward' is not differentiable with respect to argument 'weight'"):
        F.cross_entropy(x, tgrad.tensor([0, 2]), T64(3))
    with tgrad.no_grad():
        F.binary_cross_entropy_with_logits(x, y, pos_weight=w)
        F.cross_entropy(x, tgrad.tensor([0, 2]), T64(3))
