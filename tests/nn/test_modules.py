"""tgrad.nn modules against torch.nn.

The Module machinery (registration, traversal, state dicts and their error messages, modes, dtype
moves, hooks, repr) is compared with torch on the same architectures. Layers and losses get torch's
weights copied in through ``load_state_dict`` and must give torch's outputs, input gradients and
parameter gradients (and running statistics) under a random upstream gradient. ``nn.init`` and the
default initialisations are checked for their distributions, since the generators differ."""
import copy
import math

import pytest
import torch

import tgrad
import tgrad.nn as nn
from support.reference import TOL, uniform64

# torch's own note that its 'same' padding with an even kernel copies the input
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")


def torch_arch(tnn):
    """One architecture with every kind of layer, built from ``tnn`` (torch.nn or tgrad.nn)."""
    return tnn.Sequential(
        tnn.Conv2d(3, 8, 3, padding=1), tnn.BatchNorm2d(8), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Conv2d(8, 4, (3, 2), stride=2, dilation=(1, 2), groups=4, bias=False), tnn.AvgPool2d(2),
        tnn.Flatten(), tnn.Sequential(tnn.Linear(4, 6), tnn.GELU(), tnn.Dropout(0.1)),
        tnn.ModuleList([tnn.LayerNorm(6), tnn.SiLU()]),
        tnn.ModuleDict({"act": tnn.LeakyReLU(0.2), "id": tnn.Identity()}),
        tnn.Embedding(10, 3, padding_idx=0), tnn.BatchNorm1d(6, momentum=None), tnn.Tanh(), tnn.Sigmoid(),
        tnn.Softmax(dim=1), tnn.LogSoftmax(dim=-1), tnn.CrossEntropyLoss(), tnn.MSELoss())


def to_tgrad_state(state):
    return {k: tgrad.from_torch(v.detach().clone()) for k, v in state.items()}


# ----------------------------------------------------------------------------- machinery

def test_names_state_dict_keys_and_repr_equal_torchs():
    ours, ref = torch_arch(nn), torch_arch(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in ref.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in ref.named_children()]
    assert list(ours.state_dict()) == list(ref.state_dict())
    for (k, a), (_, b) in zip(ours.state_dict().items(), ref.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape) and a.dtype.torch == b.dtype, k
    assert repr(ours) == repr(ref)
    assert repr(nn.Conv2d(2, 3, 3, padding="same")) == repr(torch.nn.Conv2d(2, 3, 3, padding="same"))
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"


def test_load_state_dict_reports_missing_unexpected_and_mis_shaped_keys_like_torch():
    bad = {"0.weight": torch.zeros(8, 3, 3, 3), "0.bias": torch.zeros(5), "1.extra": torch.zeros(1),
           "99.weight": torch.zeros(2)}
    with pytest.raises(RuntimeError) as ref:
        torch_arch(torch.nn).load_state_dict(bad)
    with pytest.raises(RuntimeError) as ours:
        torch_arch(nn).load_state_dict(to_tgrad_state(bad))
    assert str(ours.value) == str(ref.value).replace("torch.Size", "tgrad.Size")
    assert "Missing key(s) in state_dict:" in str(ours.value) and "size mismatch for 0.bias" in str(ours.value)
    # strict=False loads what fits and lists the rest, as torch does
    lin, tlin = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    partial = {"weight": torch.ones(2, 3), "other": torch.ones(1)}
    result = lin.load_state_dict(to_tgrad_state(partial), strict=False)
    ref_result = tlin.load_state_dict(partial, strict=False)
    assert (result.missing_keys, result.unexpected_keys) == (ref_result.missing_keys, ref_result.unexpected_keys)
    assert lin.weight.tolist() == [[1.0] * 3] * 2
    assert repr(lin.load_state_dict(lin.state_dict())) == "<All keys matched successfully>"


def test_state_dict_round_trip_copies_values_and_keeps_parameters():
    src, dst = torch_arch(nn), torch_arch(nn)
    weight = dst[0].weight
    dst.load_state_dict(src.state_dict())
    assert dst[0].weight is weight and isinstance(weight, nn.Parameter) and weight.requires_grad
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert a.torch().tolist() == b.torch().tolist(), k
    sd = src.state_dict()
    assert not sd["0.weight"].requires_grad and sd["0.weight"].data_ptr() == src[0].weight.data_ptr()
    assert src.state_dict(keep_vars=True)["0.weight"] is src[0].weight


def test_registration_rules():
    m = nn.Module()
    m.w = nn.Parameter(tgrad.ones(2))
    m.register_buffer("running", tgrad.zeros(2))
    m.register_buffer("scratch", tgrad.zeros(1), persistent=False)
    m.child = nn.Linear(2, 2)
    m.plain = tgrad.ones(1)  # a plain tensor attribute is neither parameter nor buffer
    assert [n for n, _ in m.named_parameters()] == ["w", "child.weight", "child.bias"]
    assert [n for n, _ in m.named_buffers()] == ["running", "scratch"]
    assert list(m.state_dict()) == ["w", "running", "child.weight", "child.bias"]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["w"]
    with pytest.raises(TypeError, match=r"^cannot assign 'tgrad.FloatTensor' as parameter 'w' \(tgrad.nn.Parameter "
                                        r"or None expected\)$"):
        m.w = tgrad.ones(2)
    with pytest.raises(KeyError, match="attribute 'plain' already exists"):
        m.register_buffer("plain", tgrad.zeros(1))
    with pytest.raises(KeyError, match=r'buffer name can.*t contain "\."'):
        m.register_buffer("a.b", tgrad.zeros(1))
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("x", 3)
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        m.nothing
    with pytest.raises(NotImplementedError, match=r'^Module \[Module\] is missing the required "forward" function$'):
        m(tgrad.ones(1))
    del m.w
    assert [n for n, _ in m.named_parameters()] == ["child.weight", "child.bias"]
    m.child = None
    assert list(m.state_dict()) == ["running"]


def test_parameter_is_a_leaf_sharing_storage():
    data = tgrad.ones(3)
    p = nn.Parameter(data)
    assert p.is_leaf and p.requires_grad and p.grad_fn is None and isinstance(p, tgrad.Tensor)
    assert p.data_ptr() == data.data_ptr()
    assert repr(p) == str(p) == "Parameter containing:\ntensor([1., 1., 1.], requires_grad=True)"
    assert not nn.Parameter(tgrad.ones(1), requires_grad=False).requires_grad
    assert type(p * 2) is tgrad.Tensor


def test_tied_parameters_are_listed_once_and_deepcopy_unties_nothing():
    a = nn.Linear(3, 3)
    m = nn.Sequential(a, nn.ReLU(), a, nn.BatchNorm1d(3))
    assert len(list(m.parameters())) == 4
    assert list(m.state_dict())[:4] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    (a.weight * 2).sum().backward()
    c = copy.deepcopy(m)
    assert c[0] is c[2] and c[0].weight is not a.weight and c[0].weight.tolist() == a.weight.tolist()
    assert isinstance(c[0].weight, nn.Parameter) and c[0].weight.requires_grad
    assert c[3].running_var is not m[3].running_var and c[3].running_var.tolist() == [1.0] * 3
    assert c[3].running_var.data_ptr() != m[3].running_var.data_ptr()


def test_modes_grads_dtypes_apply_and_hooks():
    m = torch_arch(nn)
    assert all(x.training for x in m.modules())
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")
    lin = nn.Linear(3, 2)
    weight = lin.weight
    (lin(tgrad.ones(1, 3)) ** 2).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.tolist() == [[0.0] * 3] * 2
    lin.zero_grad()
    assert lin.weight.grad is None
    lin.double()
    assert lin.weight is weight and lin.weight.dtype is tgrad.float64 and isinstance(lin.weight, nn.Parameter)
    bn = nn.BatchNorm1d(3).to(tgrad.float64)
    assert bn.running_mean.dtype is tgrad.float64 and bn.num_batches_tracked.dtype is tgrad.int64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        bn.to(tgrad.int64)
    assert not any(p.requires_grad for p in lin.requires_grad_(False).parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Sequential" and seen[0] == "Conv2d"  # children first, as torch
    calls = []
    h1 = lin.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out + 1)
    y = lin(tgrad.ones(4, 3, dtype=tgrad.float64))
    assert calls == [tgrad.Size([4, 2])] and y.tolist() == [[b + 1 for b in lin.bias.tolist()]] * 4
    h1.remove()
    h2.remove()
    assert lin(tgrad.zeros(1, 3, dtype=tgrad.float64)).tolist() == [lin.bias.tolist()]


def test_containers():
    layers = [nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)]
    s = nn.Sequential(*layers)
    assert len(s) == 3 and s[-1] is layers[2] and list(s) == layers
    assert isinstance(s[1:], nn.Sequential) and list(s[1:]) == layers[1:] and list(s[1:]._modules) == ["1", "2"]
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0] is layers[1]  # renumbered, as torch
    s.append(nn.Tanh())
    assert list(s._modules) == ["0", "1", "2"]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        s[5]
    ml = nn.ModuleList([nn.Linear(2, 2)])
    ml.append(nn.Linear(2, 3))
    ml += [nn.Identity()]
    assert len(ml) == 3 and list(ml.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md and list(md.state_dict()) == ["a.weight", "a.bias"]
    from collections import OrderedDict
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["fc.weight", "fc.bias"] and named.act is named[1]


# ----------------------------------------------------------------------------- init

def test_init_distributions_and_gains():
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                        ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert nn.init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        nn.init.calculate_gain("foo")
    tgrad.manual_seed(0)
    w = tgrad.empty(400, 150)
    fan_in, fan_out = 150, 400

    def moments():
        d = w.torch().double()
        return d.abs().max().item(), d.mean().item(), d.std().item()

    nn.init.uniform_(w, -0.5, 1.5)
    mx, mean, std = moments()
    assert w.torch().min() >= -0.5 and w.torch().max() < 1.5
    assert abs(mean - 0.5) < 0.01 and abs(std - 2 / 12 ** 0.5) < 0.01
    nn.init.normal_(w, 2.0, 0.5)
    _, mean, std = moments()
    assert abs(mean - 2.0) < 0.01 and abs(std - 0.5) < 0.01
    for fn, kwargs, bound in [(nn.init.kaiming_uniform_, dict(a=math.sqrt(5)), 1 / math.sqrt(fan_in)),
                              (nn.init.kaiming_uniform_, dict(nonlinearity="relu", mode="fan_out"),
                               math.sqrt(6 / fan_out)),
                              (nn.init.xavier_uniform_, dict(gain=2.0), 2 * math.sqrt(6 / (fan_in + fan_out)))]:
        fn(w, **kwargs)
        mx, mean, std = moments()
        assert 0.99 * bound < mx <= bound and abs(mean) < 0.01 * bound and abs(std - bound / 3 ** 0.5) < 0.02 * bound
    for fn, kwargs, sd in [(nn.init.kaiming_normal_, dict(nonlinearity="relu"), math.sqrt(2 / fan_in)),
                           (nn.init.xavier_normal_, {}, math.sqrt(2 / (fan_in + fan_out)))]:
        fn(w, **kwargs)
        _, mean, std = moments()
        assert abs(mean) < 0.01 * sd and abs(std - sd) < 0.02 * sd

    def truncated_mean(mu, a, b):  # of N(mu, 1) restricted to [a, b]
        pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
        cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
        return mu + (pdf(a - mu) - pdf(b - mu)) / (cdf(b - mu) - cdf(a - mu))

    nn.init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.0)
    d = w.torch()
    assert d.min() >= -1.0 and d.max() <= 1.0 and abs(d.mean().item() - truncated_mean(0.5, -1, 1)) < 0.01
    nn.init.trunc_normal_(w, std=1.0, a=2.0, b=3.0)  # a narrow tail window: the uniform-proposal branch
    d = w.torch()
    assert d.min() >= 2.0 and d.max() <= 3.0 and abs(d.mean().item() - truncated_mean(0, 2, 3)) < 0.01
    nn.init.constant_(w, 0.25)
    assert w.torch().eq(0.25).all()
    nn.init.zeros_(w[:, ::3])  # through a strided view
    assert w.torch()[:, ::3].eq(0).all() and w.torch()[:, 1::3].eq(0.25).all()
    nn.init.ones_(w)
    assert w.torch().eq(1).all()
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "):
        nn.init.xavier_uniform_(tgrad.empty(3))


def test_init_is_reproducible_and_in_place_on_parameters():
    tgrad.manual_seed(123)
    a = nn.Linear(30, 20)
    tgrad.manual_seed(123)
    b = nn.Linear(30, 20)
    c = nn.Linear(30, 20)
    assert a.weight.tolist() == b.weight.tolist() and a.weight.tolist() != c.weight.tolist()
    p = a.weight
    v = p._version_value
    out = nn.init.normal_(p)
    assert out is p and p.requires_grad and p._version_value == v + 1


@pytest.mark.parametrize("make,fan_in", [(lambda: nn.Linear(200, 300), 200),
                                         (lambda: nn.Conv2d(16, 64, (5, 3), groups=2), 8 * 15)])
def test_default_initialisation_matches_torchs_distribution(make, fan_in):
    tgrad.manual_seed(1)
    m = make()
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and the bias rule both give this bound
    w = m.weight.torch().double()
    assert 0.98 * bound < w.abs().max().item() <= bound and abs(w.std().item() - bound / 3 ** 0.5) < 0.02 * bound
    assert m.bias.torch().abs().max().item() <= bound
    emb = nn.Embedding(300, 200, padding_idx=-1)
    e = emb.weight.torch().double()
    assert emb.padding_idx == 299 and e[299].eq(0).all() and abs(e[:299].std().item() - 1) < 0.01
    ln, bn = nn.LayerNorm(4), nn.BatchNorm2d(3)
    assert ln.weight.tolist() == [1.0] * 4 and ln.bias.tolist() == [0.0] * 4
    assert bn.running_var.tolist() == [1.0] * 3 and bn.num_batches_tracked.item() == 0


# ----------------------------------------------------------------------------- layers vs torch

def _compare(ref_module, our_module, inputs, dtype=torch.float64, train=True, seed=0, tol=None):
    """Copy ``ref_module``'s state into ``our_module``; run both on ``inputs`` (float64 torch
    tensors; integer ones are passed as they are); compare outputs, input gradients, parameter
    gradients and buffers."""
    ref_module = ref_module.to(dtype)
    our_module.load_state_dict(to_tgrad_state(ref_module.state_dict()))
    our_module.to(tgrad.float64 if dtype == torch.float64 else tgrad.float32)
    ref_module.train(train)
    our_module.train(train)
    t_in, g_in = [], []
    for x in inputs:
        if x.is_floating_point():
            x = x.to(dtype)
            t_in.append(x.clone().requires_grad_())
            g_in.append(tgrad.from_torch(x.clone()).requires_grad_())
        else:
            t_in.append(x)
            g_in.append(tgrad.from_torch(x.clone()))
    rtol, atol = tol or TOL[dtype]
    ref, out = ref_module(*t_in), our_module(*g_in)
    torch.testing.assert_close(out.torch().double(), ref.detach().double(), rtol=rtol, atol=atol)
    up = uniform64(tuple(ref.shape), -1, 1, seed + 77).to(dtype)
    ref.backward(up)
    out.backward(tgrad.from_torch(up.clone()))
    for a, b in zip(t_in, g_in):
        if a.is_floating_point():
            torch.testing.assert_close(b.grad.torch().double(), a.grad.double(), rtol=rtol, atol=atol)
    ours = dict(our_module.named_parameters())
    for name, p in ref_module.named_parameters():
        torch.testing.assert_close(ours[name].grad.torch().double(), p.grad.double(), rtol=rtol, atol=atol, msg=name)
    ours = dict(our_module.named_buffers())
    for name, b in ref_module.named_buffers():
        torch.testing.assert_close(ours[name].torch().double(), b.double(), rtol=rtol, atol=atol, msg=name)


def _x(*shape, seed=0, low=-2.0, high=2.0):
    return uniform64(shape, low, high, seed)


LAYERS = [
    ("linear", lambda t: t.Linear(7, 5), [_x(3, 7)]),
    ("linear-3d-nobias", lambda t: t.Linear(4, 3, bias=False), [_x(2, 3, 4)]),
    ("conv", lambda t: t.Conv2d(3, 4, 3), [_x(2, 3, 7, 6)]),
    ("conv-strided-grouped", lambda t: t.Conv2d(4, 6, (3, 2), stride=2, padding=(1, 0), dilation=(1, 2), groups=2),
     [_x(2, 4, 9, 8)]),
    ("conv-same", lambda t: t.Conv2d(2, 3, 4, padding="same", bias=False), [_x(1, 2, 5, 6)]),
    ("maxpool", lambda t: t.MaxPool2d(2), [_x(2, 3, 6, 7)]),
    ("maxpool-padded", lambda t: t.MaxPool2d(3, stride=2, padding=1), [_x(1, 2, 7, 5)]),
    ("avgpool", lambda t: t.AvgPool2d(2), [_x(2, 3, 6, 7)]),
    ("avgpool-nopadcount", lambda t: t.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), [_x(1, 2, 7, 5)]),
    ("flatten", lambda t: t.Flatten(), [_x(2, 3, 4)]),
    ("embedding", lambda t: t.Embedding(10, 4, padding_idx=2), [torch.tensor([[1, 2, 9], [2, 0, 1]])]),
    ("layernorm", lambda t: t.LayerNorm(6), [_x(3, 4, 6)]),
    ("layernorm-2d-noaffine", lambda t: t.LayerNorm((4, 6), elementwise_affine=False), [_x(3, 4, 6)]),
    ("batchnorm1d", lambda t: t.BatchNorm1d(5), [_x(8, 5)]),
    ("batchnorm1d-3d-cumulative", lambda t: t.BatchNorm1d(5, momentum=None), [_x(4, 5, 3)]),
    ("batchnorm2d", lambda t: t.BatchNorm2d(3), [_x(4, 3, 5, 5)]),
    ("relu", lambda t: t.ReLU(), [_x(4, 5)]),
    ("leaky_relu", lambda t: t.LeakyReLU(0.2), [_x(4, 5)]),
    ("gelu", lambda t: t.GELU(), [_x(4, 5)]),
    ("gelu-tanh", lambda t: t.GELU("tanh"), [_x(4, 5)]),
    ("silu", lambda t: t.SiLU(), [_x(4, 5)]),
    ("tanh", lambda t: t.Tanh(), [_x(4, 5)]),
    ("sigmoid", lambda t: t.Sigmoid(), [_x(4, 5)]),
    ("softmax", lambda t: t.Softmax(dim=1), [_x(4, 5)]),
    ("log_softmax", lambda t: t.LogSoftmax(dim=-1), [_x(3, 4, 5)]),
    ("identity", lambda t: t.Identity(7), [_x(4, 5)]),
    ("dropout-eval", lambda t: t.Dropout(0.5), [_x(4, 5)]),
]


@pytest.mark.parametrize("name,make,inputs", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_matches_torch_float64(name, make, inputs):
    _compare(make(torch.nn), make(nn), inputs, train=not name.endswith("eval"))


@pytest.mark.parametrize("name,make,inputs", [LAYERS[i] for i in (0, 3, 11, 15)],
                         ids=[LAYERS[i][0] for i in (0, 3, 11, 15)])
def test_layer_matches_torch_float32(name, make, inputs):
    _compare(make(torch.nn), make(nn), inputs, dtype=torch.float32, tol=(1e-4, 1e-5))


def test_batchnorm_eval_uses_running_stats_after_training_steps():
    ref, ours = torch.nn.BatchNorm2d(3).double(), nn.BatchNorm2d(3).double()
    for step in range(3):
        x = _x(4, 3, 2, 3, seed=step)
        ref(x)
        ours(tgrad.from_torch(x.clone()))
    assert ours.num_batches_tracked.item() == 3
    _compare(ref, ours, [_x(2, 3, 4, 4, seed=9)], train=False)


def test_batchnorm_input_checks():
    with pytest.raises(ValueError, match=r"^expected 4D input \(got 3D input\)$"):
        nn.BatchNorm2d(3)(tgrad.ones(2, 3, 4))
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 4D input\)$"):
        nn.BatchNorm1d(3)(tgrad.ones(2, 3, 4, 4))


def test_dropout_in_training_zeroes_and_rescales():
    tgrad.manual_seed(5)
    x = tgrad.ones(200, 100)
    y = nn.Dropout(0.3)(x).torch()
    kept = y.ne(0)
    assert abs(kept.double().mean().item() - 0.7) < 0.01 and torch.allclose(y[kept], torch.tensor(1 / 0.7))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def _targets():
    g = torch.Generator().manual_seed(3)
    return {"cls": torch.randint(0, 5, (6,), generator=g), "cls_ignored": torch.tensor([1, -100, 4, 0, -100, 2]),
            "prob": uniform64((6, 5), 0.05, 0.95, 11), "real": uniform64((6, 5), -2, 2, 12),
            "bits": torch.randint(0, 2, (6, 5), generator=g).double()}


LOSSES = [
    ("cross_entropy", lambda t: t.CrossEntropyLoss(), "real", "cls"),
    ("cross_entropy-weighted-ignore-smooth",
     lambda t: t.CrossEntropyLoss(weight=_weight(t), ignore_index=-100, label_smoothing=0.1), "real", "cls_ignored"),
    ("cross_entropy-sum", lambda t: t.CrossEntropyLoss(reduction="sum"), "real", "cls"),
    ("nll", lambda t: t.NLLLoss(weight=_weight(t)), "real", "cls"),
    ("mse", lambda t: t.MSELoss(), "real", "real2"),
    ("l1-none", lambda t: t.L1Loss(reduction="none"), "real", "real2"),
    ("smooth_l1", lambda t: t.SmoothL1Loss(beta=0.5), "real", "real2"),
    ("huber", lambda t: t.HuberLoss(delta=0.7, reduction="sum"), "real", "real2"),
    ("bce", lambda t: t.BCELoss(), "prob", "bits"),
    ("bce_logits-pos_weight", lambda t: t.BCEWithLogitsLoss(pos_weight=_weight(t)), "real", "bits"),
]


def _weight(tnn):
    w = uniform64((5,), 0.5, 1.5, 21)
    return w if tnn is torch.nn else tgrad.from_torch(w.clone())


@pytest.mark.parametrize("name,make,x,y", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(name, make, x, y):
    data = _targets()
    data["real2"] = uniform64((6, 5), -2, 2, 13)
    target = data[y]
    ref, ours = make(torch.nn), make(nn)
    if ref.state_dict():
        assert list(ours.state_dict()) == list(ref.state_dict())
    # the target is data, not a parameter: compare the input gradient only
    xt = data[x].clone().requires_grad_()
    xg = tgrad.from_torch(data[x].clone()).requires_grad_()
    tg = tgrad.from_torch(target.clone())
    r, o = ref(xt, target), ours(xg, tg)
    torch.testing.assert_close(o.torch(), r.detach(), rtol=1e-10, atol=1e-12)
    up = uniform64(tuple(r.shape), -1, 1, 5)
    r.backward(up)
    o.backward(tgrad.from_torch(up.clone()))
    torch.testing.assert_close(xg.grad.torch(), xt.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (6, 2, 2), (5, 5)])
def test_orthogonal_init_as_pytorchs(shape):
    """Q of a Gaussian draw's QR (signs fixed by R's diagonal), times the gain: W W^T = gain^2 I
    for wide W, W^T W for tall, as PyTorch's; and PyTorch's error for a vector."""
    gain = 1.5
    ours = tgrad.nn.init.orthogonal_(tgrad.empty(*shape, dtype=tgrad.float64), gain=gain).torch().reshape(shape[0], -1)
    theirs = torch.nn.init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=gain).reshape(shape[0], -1)
    for w in (ours, theirs):
        small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        torch.testing.assert_close(small, gain ** 2 * torch.eye(small.shape[0], dtype=torch.float64))
    for lib in (torch, tgrad):
        with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
            lib.nn.init.orthogonal_(lib.empty(3))
