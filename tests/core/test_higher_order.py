"""Higher-order gradients (create_graph=True): every differentiable op of the core and of tgrad.nn's
functional ops passes ``gradgradcheck`` in float64, so its backward, run with create_graph=True,
is itself correctly differentiable. Then: second derivatives of step-like ops behave as PyTorch's
(zeros, or an error, op by op), the issue's three examples against PyTorch (x**3, a Hessian-vector
product of an MLP loss, a gradient penalty), and third derivatives through the ops whose backward
is a Function of its own (setitem, conv, pools).

Inputs are tiny (2-6 elements) and most checks use ``fast_mode`` (one random projection of each
Jacobian), since every Jacobian column of a full check is a forward and a backward of interpreted
kernels. Points where an op is not differentiable (relu at 0, ties of max, |x| at 0) are avoided:
finite differences straddling a kink measure nothing.
"""
import math

import pytest
import torch

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradgradcheck


def T(*shape, low=-2.0, high=2.0, seed=0, grad=True):
    """A float64 leaf, uniform in [low, high), reproducible from its arguments."""
    g = torch.Generator().manual_seed(hash((shape, low, high, seed)) % 2 ** 31)
    data = torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low
    return tgrad.from_torch(data).requires_grad_(grad)


def C(values, dtype=tgrad.float64):
    return tgrad.tensor(values, dtype=dtype)


def away_from(x, points, gap=0.05):
    """x with its values that lie within ``gap`` of a kink in ``points`` moved to 2 gap from it."""
    d = x.detach().torch()
    for p in points:
        near = (d - p).abs() < gap
        d[near] = p + gap * torch.where(d[near] >= p, 1.0, -1.0).to(d.dtype) * 2
    return tgrad.from_torch(d.clone()).requires_grad_()


def dropout_fixed(x, p):
    tgrad.manual_seed(1234)  # the same mask at every evaluation gradcheck makes
    return F.dropout(x, p)


# name -> (function, inputs builder, fast_mode)
CASES = {
    # ---------------------------------------------------------------- unary (the op table's rows, exp, tanh,
    # relu, ..., are gradgradchecked in tests/ops/test_op_table.py)
    "gelu": (lambda x: F.gelu(x), lambda: (T(2, 3),), True),
    "gelu_at_0": (lambda x: F.gelu(x), lambda: (C([0.0, 1.0]).requires_grad_(),), False),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda: (T(2, 3),), True),
    "softplus": (lambda x: F.softplus(x, beta=2.0, threshold=3.0), lambda: (away_from(T(2, 3), [1.5]),), True),
    "elu": (lambda x: F.elu(x, 0.7), lambda: (away_from(T(2, 3), [0]),), True),
    "clamp": (lambda x: x.clamp(-1.0, 0.5), lambda: (away_from(T(2, 3), [-1.0, 0.5]),), True),
    "clamp_min": (lambda x: x.clamp(min=0.2), lambda: (away_from(T(2, 3), [0.2]),), True),
    "clamp_tensor": (lambda x, lo, hi: x.clamp(lo, hi),
                     lambda: (away_from(T(2, 3), [-0.3, 0.6]), C([-0.3]).requires_grad_(), C([0.6, 0.6, 0.6])
                              .requires_grad_()), True),
    "pow_3": (lambda x: x ** 3, lambda: (T(2, 3),), False),
    "pow_2.5": (lambda x: x ** 2.5, lambda: (T(2, 3, low=0.5),), True),
    "pow_-1.5": (lambda x: x ** -1.5, lambda: (T(2, 3, low=0.5),), True),
    "pow_0": (lambda x: x ** 0, lambda: (T(3),), True),
    "sign": (lambda x: x.sign() * x, lambda: (away_from(T(2, 3), [0]),), True),
    "floor": (lambda x: x.floor() * x, lambda: (away_from(T(2, 3), [-2, -1, 0, 1]),), True),
    "ceil": (lambda x: x.ceil() * x, lambda: (away_from(T(2, 3), [-1, 0, 1, 2]),), True),
    "round": (lambda x: x.round() * x, lambda: (away_from(T(2, 3), [-1.5, -0.5, 0.5, 1.5]),), True),
    # ---------------------------------------------------------------- binary, broadcasting
    "add": (lambda a, b: a + b, lambda: (T(2, 3), T(3, seed=1)), True),
    "add_alpha": (lambda a, b: tgrad.add(a, b, alpha=2.5), lambda: (T(2, 1), T(3, seed=1)), True),
    "sub": (lambda a, b: a - b, lambda: (T(2, 1), T(1, 3, seed=1)), True),
    "rsub": (lambda x: 1.5 - x, lambda: (T(2, 3),), True),
    "mul": (lambda a, b: a * b, lambda: (T(2, 3), T(2, 1, seed=1)), True),
    "mul_scalar": (lambda x: x * 3.0, lambda: (T(3),), True),
    "div": (lambda a, b: a / b, lambda: (T(2, 3), T(3, low=0.5, seed=1)), True),
    "number_div": (lambda x: 2.0 / x, lambda: (T(3, low=0.5),), True),
    "pow": (lambda a, b: a ** b, lambda: (T(2, 3, low=0.5), T(3, seed=1)), True),
    "number_pow": (lambda x: 1.7 ** x, lambda: (T(3),), True),
    "maximum": (lambda a, b: tgrad.maximum(a, b), lambda: (T(2, 3), T(3, seed=1)), True),
    "minimum": (lambda a, b: tgrad.minimum(a, b), lambda: (T(2, 1), T(3, seed=1)), True),
    "where": (lambda a, b: tgrad.where(C([True, False, True], tgrad.bool), a, b), lambda: (T(2, 3), T(1, seed=1)),
              True),
    # ---------------------------------------------------------------- reductions
    "sum": (lambda x: x.sum(), lambda: (T(2, 3),), False),
    "sum_dim": (lambda x: x.sum(1, keepdim=True), lambda: (T(2, 3),), True),
    "mean": (lambda x: x.mean(), lambda: (T(2, 3),), True),
    "mean_dims": (lambda x: x.mean((0, 2)), lambda: (T(2, 2, 1),), True),
    "prod": (lambda x: x.prod(), lambda: (T(2, 2, low=0.5),), True),
    "prod_dim": (lambda x: x.prod(0), lambda: (T(2, 3),), True),
    "prod_one_zero": (lambda x: x.prod(), lambda: (C([0.7, 0.0, -1.3]).requires_grad_(),), False),
    "prod_two_zeros": (lambda x: x.prod(1), lambda: (C([[0.0, 1.2, 0.0], [0.5, 0.0, 2.0]]).requires_grad_(),), True),
    "max": (lambda x: x.max(), lambda: (T(2, 3),), True),
    "min": (lambda x: x.min(), lambda: (T(2, 3),), True),
    "max_dim": (lambda x: x.max(1).values, lambda: (T(2, 3),), True),
    "min_dim": (lambda x: x.min(0, keepdim=True)[0], lambda: (T(2, 3),), True),
    "amax": (lambda x: x.amax(1), lambda: (T(2, 3),), True),
    "amin": (lambda x: x.amin((0, 1)), lambda: (T(2, 3),), True),
    "var": (lambda x: x.var(), lambda: (T(2, 3),), True),
    "var_dim": (lambda x: x.var(1, correction=0), lambda: (T(2, 3),), True),
    "std": (lambda x: x.std(), lambda: (T(2, 3),), True),
    "std_dim": (lambda x: x.std(0, keepdim=True), lambda: (T(2, 3),), True),
    "norm_1": (lambda x: x.norm(1), lambda: (away_from(T(2, 3), [0]),), True),
    "norm_2": (lambda x: x.norm(), lambda: (T(2, 3),), True),
    "norm_inf": (lambda x: x.norm(math.inf), lambda: (T(2, 3),), True),
    "norm_3_dim": (lambda x: tgrad.norm(x, 3, 1), lambda: (away_from(T(2, 3), [0]),), True),
    "logsumexp": (lambda x: x.logsumexp(1), lambda: (T(2, 3),), True),
    "softmax": (lambda x: x.softmax(1), lambda: (T(2, 3),), True),
    "log_softmax": (lambda x: x.log_softmax(0), lambda: (T(2, 3),), True),
    # ---------------------------------------------------------------- matrix products
    "matmul": (lambda a, b: a @ b, lambda: (T(2, 3), T(3, 2, seed=1)), True),
    "mm": (lambda a, b: tgrad.mm(a, b), lambda: (T(2, 2), T(2, 3, seed=1)), True),
    "bmm": (lambda a, b: tgrad.bmm(a, b), lambda: (T(2, 1, 2), T(2, 2, 2, seed=1)), True),
    "matmul_broadcast": (lambda a, b: a @ b, lambda: (T(2, 1, 2, 2), T(3, 2, 1, seed=1)), True),
    "dot": (lambda a, b: tgrad.dot(a, b), lambda: (T(3), T(3, seed=1)), True),
    "mv": (lambda a, v: tgrad.mv(a, v), lambda: (T(2, 3), T(3, seed=1)), True),
    "outer": (lambda a, b: tgrad.outer(a, b), lambda: (T(2), T(3, seed=1)), True),
    "vector_matmul": (lambda v, b: v @ b, lambda: (T(2), T(2, 2, 3, seed=1)), True),
    # ---------------------------------------------------------------- movement (cubed: linear ops have no
    # second derivative of their own, so each is composed with a nonlinearity)
    "view": (lambda x: x.view(3, 2) ** 3, lambda: (T(2, 3),), True),
    "reshape": (lambda x: x.t().reshape(-1) ** 3, lambda: (T(2, 3),), True),
    "permute": (lambda x: x.permute(2, 0, 1) ** 3, lambda: (T(2, 1, 3),), True),
    "transpose": (lambda x: x.transpose(0, 1) ** 3, lambda: (T(2, 3),), True),
    "t": (lambda x: x.t() ** 3, lambda: (T(2, 3),), True),
    "squeeze": (lambda x: x.squeeze() ** 3, lambda: (T(2, 1, 3),), True),
    "squeeze_dim": (lambda x: x.squeeze(1) ** 3, lambda: (T(2, 1, 3),), True),
    "unsqueeze": (lambda x: x.unsqueeze(1) ** 3, lambda: (T(2, 3),), True),
    "expand": (lambda x: x.expand(2, 3) ** 3, lambda: (T(1, 3),), True),
    "flatten": (lambda x: x.flatten() ** 3, lambda: (T(2, 1, 3),), True),
    "cat": (lambda a, b: tgrad.cat([a, b * b], 1) ** 2, lambda: (T(2, 1), T(2, 2, seed=1)), True),
    "stack": (lambda a, b: tgrad.stack([a, b], 1) ** 3, lambda: (T(3), T(3, seed=1)), True),
    "split": (lambda x: x.split(2, 1)[1] ** 3, lambda: (T(2, 3),), True),
    "split_sizes": (lambda x: tgrad.cat(x.split([1, 2], 1)[::-1], 1) ** 3, lambda: (T(2, 3),), True),
    "chunk": (lambda x: x.chunk(2)[0] ** 3, lambda: (T(3, 2),), True),
    "unbind": (lambda x: x.unbind(1)[2] ** 3, lambda: (T(2, 3),), True),
    "narrow": (lambda x: x.narrow(1, 1, 2) ** 3, lambda: (T(2, 3),), True),
    "select": (lambda x: x[1] ** 3, lambda: (T(2, 3),), True),
    "slice_step": (lambda x: x[:, ::2] ** 3, lambda: (T(2, 3),), True),
    "none_ellipsis": (lambda x: x[None, ..., 1:] ** 3, lambda: (T(2, 3),), True),
    "advanced_index": (lambda x: x[[0, 1, 1], [2, 0, 2]] ** 3, lambda: (T(2, 3),), True),
    "repeated_index": (lambda x: x[C([1, 1, 0], tgrad.int64)] ** 3, lambda: (T(2, 2),), True),
    "bool_mask_index": (lambda x: x[C([[True, False, True], [False, True, True]], tgrad.bool)] ** 3,
                        lambda: (T(2, 3),), True),
    "index_select": (lambda x: x.index_select(1, C([2, 0, 2], tgrad.int64)) ** 3, lambda: (T(2, 3),), True),
    "gather": (lambda x: x.gather(1, C([[2, 0], [1, 1]], tgrad.int64)) ** 3, lambda: (T(2, 3),), True),
    "masked_fill": (lambda x: x.masked_fill(C([False, True, False], tgrad.bool), 0.5) ** 3, lambda: (T(2, 3),), True),
    "masked_fill_tensor": (lambda x, v: x.masked_fill(C([False, True, False], tgrad.bool), v) ** 3,
                           lambda: (T(2, 3), T(seed=1)), True),
    "sort": (lambda x: x.sort(1).values ** 3, lambda: (T(2, 3),), True),
    "sort_descending": (lambda x: x.sort(0, descending=True)[0] * x, lambda: (T(3, 2),), True),
    # ---------------------------------------------------------------- copies and in-place on non-leaves
    "clone": (lambda x: x.clone() ** 3, lambda: (T(2, 3),), True),
    "contiguous": (lambda x: x.t().contiguous() ** 3, lambda: (T(2, 3),), True),
    "setitem": (lambda x, v: _setitem(x, v), lambda: (T(2, 3), T(3, seed=1)), True),
    "copy_": (lambda x, v: _copy(x, v), lambda: (T(2, 3), T(3, seed=1)), True),
    "advanced_setitem": (lambda x, v: _advanced_setitem(x, v), lambda: (T(2, 3), T(2, seed=1)), True),
    "inplace_op": (lambda x: (x * 1).mul_(x).exp_(), lambda: (T(2, 3),), True),
    "scatter_add": (lambda x, s: x.scatter_add(1, C([[0, 0], [2, 1]], tgrad.int64), s) ** 3,
                    lambda: (T(2, 3), T(2, 2, seed=1)), True),
    # ---------------------------------------------------------------- tgrad.nn.functional
    "linear": (lambda x, w, b: F.linear(x, w, b).tanh(), lambda: (T(2, 3), T(2, 3, seed=1), T(2, seed=2)), True),
    "linear_no_bias": (lambda x, w: F.linear(x, w) ** 2, lambda: (T(3), T(2, 3, seed=1)), True),
    **{f"linear_{act}": ((lambda a: lambda x, w, b: F.linear_act(x, w, b, a))(act),
                         lambda: (T(2, 2), T(2, 2, seed=1), T(2, seed=2, grad=False)), True)
       for act in ("relu", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu")},
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), lambda: (T(2, 3), T(3, seed=1), T(3, seed=2)), True),
    "layer_norm_plain": (lambda x: F.layer_norm(x, (2, 2)), lambda: (T(1, 2, 2),), True),
    "cross_entropy": (lambda x: F.cross_entropy(x, C([2, 0], tgrad.int64)), lambda: (T(2, 3),), True),
    "cross_entropy_weighted": (lambda x, w: F.cross_entropy(x, C([2, 0], tgrad.int64), w, label_smoothing=0.2),
                               lambda: (T(2, 3), T(3, low=0.5, seed=1, grad=False)), True),
    "cross_entropy_ignore_none": (lambda x: F.cross_entropy(x, C([[1, -100]], tgrad.int64), reduction="none"),
                                  lambda: (T(1, 3, 2),), True),
    "cross_entropy_probs": (lambda x, p: F.cross_entropy(x, p),
                            lambda: (T(2, 3), T(2, 3, low=0.1, high=1.0, seed=1)), True),
    "nll_loss": (lambda x: F.nll_loss(x.log_softmax(1), C([1, 2], tgrad.int64)), lambda: (T(2, 3),), True),
    "nll_loss_weighted": (lambda x, w: F.nll_loss(x * x, C([1, 2], tgrad.int64), w, reduction="sum"),
                          lambda: (T(2, 3), T(3, low=0.5, seed=1, grad=False)), True),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), lambda: (T(2, 3), T(2, 3, seed=1)), True),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum") * x.sum(), lambda: (T(2, 3), T(2, 3, seed=1)), True),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.8), lambda: (T(2, 3), T(2, 3, seed=1)), True),
    "huber_loss": (lambda x, y: F.huber_loss(x, y, reduction="none", delta=0.9), lambda: (T(2, 3), T(2, 3, seed=1)),
                   True),
    "bce": (lambda x, y, w: F.binary_cross_entropy(x, y, w),
            lambda: (T(2, 3, low=0.1, high=0.9), T(2, 3, low=0., high=1., seed=1),
                     T(3, low=0.5, seed=2, grad=False)), True),
    "bce_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y, pos_weight=C([0.5, 2.0, 1.0])),
                        lambda: (T(2, 3), T(2, 3, low=0., high=1., seed=1)), True),
    "dropout_p0": (lambda x: F.dropout(x, 0.0) ** 3, lambda: (T(2, 3),), True),
    "dropout_fixed_mask": (lambda x: dropout_fixed(x, 0.4) ** 3, lambda: (T(2, 3),), True),
    "embedding": (lambda w: F.embedding(C([[2, 0], [2, 1]], tgrad.int64), w, padding_idx=1) ** 3,
                  lambda: (T(3, 2),), True),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1).tanh(),
               lambda: (T(1, 1, 2, 3), T(2, 1, 2, 2, seed=1), T(2, seed=2)), True),
    "conv2d_strided_groups": (lambda x, w: F.conv2d(x, w, stride=2, groups=2, dilation=(1, 2)) ** 2,
                              lambda: (T(1, 2, 3, 4), T(2, 1, 2, 2, seed=1)), True),
    "conv2d_same": (lambda x, w: F.conv2d(x[None], w, padding="same") ** 2,
                    lambda: (T(1, 3, 3), T(1, 1, 2, 2, seed=1)), True),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1, padding=1) ** 3, lambda: (T(1, 1, 2, 3),), True),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 2, 1, padding=1, count_include_pad=False) ** 3,
                   lambda: (T(1, 2, 3),), True),
    "batch_norm_train": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                         lambda: (T(3, 2), T(2, seed=1), T(2, seed=2)), True),
    "batch_norm_train_4d": (lambda x: F.batch_norm(x, None, None, training=True), lambda: (T(2, 1, 1, 2),), True),
    "batch_norm_eval": (lambda x, w, b: F.batch_norm(x, C([0.1, -0.2]), C([0.5, 2.0]), w, b) ** 3,
                        lambda: (T(3, 2), T(2, seed=1), T(2, seed=2)), True),
}


def _setitem(x, v):
    y = x * 1
    y[0] = v * v
    y[1, ::2] = y[0, :2].exp()  # exp saves its result, not the view of y that changes next
    return y ** 2


def _copy(x, v):
    y = x + 1
    y[1].copy_(v.sin())
    return y * x


def _advanced_setitem(x, v):
    y = x * x
    y[[0, 1], [2, 0]] = v ** 3
    return y * x


@pytest.mark.parametrize("name", list(CASES))
def test_gradgradcheck(name):
    fn, inputs, fast = CASES[name]
    assert gradgradcheck(fn, inputs(), fast_mode=fast)


# ============================================================================ second derivatives of steps
# A gradient that depends on x only through a step (relu's mask, |x|'s sign, the class nll_loss
# picks) has a zero derivative. PyTorch reports it in one of two ways, op by op: the gradient keeps
# an edge to x and differentiating it gives zeros (relu, abs, leaky_relu, nll_loss, max_pool2d, ...),
# or it has no history and differentiating it raises (clamp, max, where, sort, ...). tgrad matches.

def _step_ops(L, NF):
    zeros = lambda *s: L.zeros(*s, dtype=L.float64)  # noqa: E731
    return {
        "relu": lambda x: x.relu(), "abs": lambda x: x.abs(), "sign": lambda x: x.sign(),
        "round": lambda x: x.round(), "floor": lambda x: x.floor(), "clamp": lambda x: x.clamp(-0.5, 0.5),
        "leaky_relu": lambda x: NF.leaky_relu(x, 0.1), "max": lambda x: x.max(), "amax": lambda x: x.amax(1),
        "max_dim": lambda x: x.max(1)[0], "maximum": lambda x: L.maximum(x, zeros(3)),
        "where": lambda x: L.where(x > 0, x, x * 2), "sort": lambda x: x.sort(1)[0],
        "index": lambda x: x[:, [0, 2]], "masked_fill": lambda x: x.masked_fill(x > 0, 0.),
        "norm_1": lambda x: x.norm(1), "norm_inf": lambda x: x.norm(math.inf),
        "l1_loss": lambda x: NF.l1_loss(x, zeros(2, 3)), "nll_loss": lambda x: NF.nll_loss(x, L.tensor([0, 2])),
        "max_pool2d": lambda x: NF.max_pool2d(x.reshape(1, 1, 2, 3), 2, 1),
        "avg_pool2d": lambda x: NF.avg_pool2d(x.reshape(1, 1, 2, 3), 2, 1),
        "conv2d": lambda x: NF.conv2d(x.reshape(1, 1, 2, 3), L.ones(1, 1, 1, 2, dtype=L.float64)),
        "batch_norm_eval": lambda x: NF.batch_norm(x, zeros(3), L.ones(3, dtype=L.float64)),
        "linear": lambda x: NF.linear(x, L.ones(2, 3, dtype=L.float64)), "sum": lambda x: x.sum(),
    }


def _second_derivative_of_step(L, NF, name):
    x = L.tensor([[-1.3, 2.1, 0.4], [0.3, -0.2, 1.5]], dtype=L.float64, requires_grad=True)
    y = _step_ops(L, NF)[name](x)
    w = L.tensor([0.3, -1.2, 0.7, 1.1, 0.5, -0.4][:y.numel()], dtype=L.float64).reshape(y.shape)
    g, = L.autograd.grad((y * w).sum(), x, create_graph=True)
    try:
        h, = L.autograd.grad((g * x.detach()).sum(), x, allow_unused=True)
    except RuntimeError as e:
        return g.requires_grad, str(e).replace("tgrad", "torch")
    if h is None:
        return g.requires_grad, None
    return g.requires_grad, (L.zeros(tuple(h.shape), dtype=L.float64) + h).reshape(-1).tolist()  # torch: a lazy zero


@pytest.mark.parametrize("name", list(_step_ops(torch, torch.nn.functional)))
def test_second_derivative_of_a_step_matches_pytorch(name):
    ours = _second_derivative_of_step(tgrad, F, name)
    theirs = _second_derivative_of_step(torch, torch.nn.functional, name)
    assert ours == theirs


# ============================================================================ the examples

def test_grad_of_x_cubed_then_its_gradient():
    out = {}
    for L in (tgrad, torch):
        x = L.tensor(3., dtype=L.float64, requires_grad=True)
        g, = L.autograd.grad(x ** 3, x, create_graph=True)
        h, = L.autograd.grad(g, x, create_graph=True)
        k, = L.autograd.grad(h, x)
        out[L] = (g.item(), g.requires_grad, h.item(), h.requires_grad, k.item())
    assert out[tgrad] == out[torch] == (27., True, 18., True, 6.)


def _mlp_pair(sizes, seed=0):
    """A tgrad MLP of nn.Linear layers (float64) and the same weights as torch tensors."""
    tgrad.manual_seed(seed)
    layers = [tgrad.nn.Linear(a, b, dtype=tgrad.float64) for a, b in zip(sizes, sizes[1:])]
    params = [p for layer in layers for p in (layer.weight, layer.bias)]
    return layers, params, [p.detach().torch().clone().requires_grad_() for p in params]


def _mlp(L, NF, params, x):
    h = x
    for k in range(0, len(params), 2):
        h = NF.linear(h, params[k], params[k + 1])
        if k + 2 < len(params):
            h = h.tanh() if k == 0 else NF.relu(h)
    return h


def test_hessian_vector_product_of_an_mlp_loss_matches_torch_hvp():
    layers, params, tparams = _mlp_pair((3, 4, 4, 2))
    xs = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7], [-0.2, 0.8, 0.1]], dtype=torch.float64)
    target = [1, 0, 1]
    vs = [torch.linspace(-1, 1, p.numel(), dtype=torch.float64).reshape(p.shape) * (k + 1)
          for k, p in enumerate(tparams)]

    def model(x):
        h = x
        for k, layer in enumerate(layers):
            h = layer(h)
            if k + 1 < len(layers):
                h = h.tanh() if k == 0 else F.relu(h)
        return h
    loss = F.cross_entropy(model(tgrad.from_torch(xs)), tgrad.tensor(target))
    grads = tgrad.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * tgrad.from_torch(v)).sum() for g, v in zip(grads, vs))
    hv = tgrad.autograd.grad(dot, params)

    def torch_loss(*ps):
        return torch.nn.functional.cross_entropy(_mlp(torch, torch.nn.functional, ps, xs), torch.tensor(target))
    t_loss, t_hv = torch.autograd.functional.hvp(torch_loss, tuple(tparams), tuple(vs))
    assert loss.item() == pytest.approx(t_loss.item(), rel=1e-12)
    for ours, theirs in zip(hv, t_hv):
        torch.testing.assert_close(ours.torch(), theirs, rtol=1e-9, atol=1e-12)


def test_gradient_penalty_backpropagates_to_the_weights_like_torch():
    # loss = mse(f(x), y) + 0.5 ||d mse / d x||^2, backpropagated into every weight
    _, params, tparams = _mlp_pair((3, 5, 4, 1), seed=3)
    xs = torch.tensor([[0.4, -1.1, 0.9], [1.2, 0.2, -0.5]], dtype=torch.float64)
    ys = torch.tensor([[0.3], [-0.8]], dtype=torch.float64)
    results = []
    for L, NF, ps in ((tgrad, F, params), (torch, torch.nn.functional, tparams)):
        x = (tgrad.from_torch(xs.clone()) if L is tgrad else xs.clone()).requires_grad_()
        y = tgrad.from_torch(ys) if L is tgrad else ys
        loss = NF.mse_loss(_mlp(L, NF, ps, x), y)
        gx, = L.autograd.grad(loss, x, create_graph=True)
        total = loss + 0.5 * (gx * gx).sum()
        total.backward()
        results.append([total.item()] + [p.grad.detach().reshape(-1).tolist() for p in ps])
        assert x.grad is not None  # the input is a leaf too: it got its gradient
    ours, theirs = results
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
    for a, b in zip(ours[1:], theirs[1:]):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12)


# ============================================================================ third order
# The backward of a backward is differentiable too: third derivatives against PyTorch.

THIRD_ORDER = {
    "setitem": lambda L, NF, x: _third_setitem(x),
    "conv2d": lambda L, NF, x: NF.conv2d(x.reshape(1, 1, 2, 3), x[:, :2].reshape(1, 1, 2, 2), padding=1) ** 2,
    "max_pool2d": lambda L, NF, x: NF.max_pool2d((x * x).reshape(1, 2, 3), (2, 2), 1, padding=1) ** 3,
    "avg_pool2d": lambda L, NF, x: NF.avg_pool2d(x.reshape(1, 2, 3), 2, 1) ** 3,
    "softmax_index": lambda L, NF, x: x.softmax(1)[:, [2, 0]] * x[:, :2].exp(),
}


def _third_setitem(x):
    y = x * 1
    y[0, 1:] = x[1, :2] ** 3
    return y * y


@pytest.mark.parametrize("name", list(THIRD_ORDER))
def test_third_derivatives_match_pytorch(name):
    data = [[0.7, -1.3, 2.1], [0.4, 1.5, -0.9]]
    got = []
    for L, NF in ((tgrad, F), (torch, torch.nn.functional)):
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        y = THIRD_ORDER[name](L, NF, x)
        w = L.tensor([0.3, -0.7, 1.1, 0.5, -0.2, 0.9, 0.4, -1.0, 0.6, 0.8, -0.3, 0.2][:y.numel()],
                     dtype=L.float64).reshape(y.shape)
        g, = L.autograd.grad((y * w).sum(), x, create_graph=True)
        h, = L.autograd.grad((g * g).sum(), x, create_graph=True)
        k, = L.autograd.grad((h * x).sum(), x)
        got.append([t.detach().reshape(-1).tolist() for t in (g, h, k)])
    for ours, theirs in zip(*got):
        assert ours == pytest.approx(theirs, rel=1e-8, abs=1e-10)


def test_to_another_dtype_and_back_matches_pytorch():
    # ToCopy's backward is a cast back, itself differentiable; float32 in the middle, so the
    # comparison is at float32's precision rather than by finite differences
    got = []
    for L in (tgrad, torch):
        x = L.tensor([0.7, -1.3, 2.1], dtype=L.float64, requires_grad=True)
        y = (x.to(L.float32) ** 3).to(L.float64) * x
        g, = L.autograd.grad((y * y).sum(), x, create_graph=True)
        h, = L.autograd.grad((g * x).sum(), x)
        assert g.dtype == h.dtype == L.float64
        got.append((g.tolist(), h.tolist()))
    for ours, theirs in zip(*got):
        assert ours == pytest.approx(theirs, rel=1e-5)


def test_third_derivatives_of_batch_norm_against_finite_differences():
    # PyTorch 2.13's own third derivative of training-mode batch_norm is wrong (finite differences
    # disagree with it), so tgrad's is checked by gradgradcheck of the first derivative instead
    def first_derivative(x, w):
        y = F.batch_norm(x, None, None, w, None, training=True) ** 2
        return tgrad.autograd.grad((y * y).sum(), (x, w), create_graph=True)
    assert gradgradcheck(first_derivative, (T(3, 2), T(2, seed=1)), fast_mode=True)
