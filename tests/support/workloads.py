"""What the compile-as-CUDA test (tests/kernels/test_compile_as_cuda.py) runs configured as on a GPU,
compiling each launch for sm_90 and sm_80: the core ops, the convolution / resampling ops and the
sequence-model ops."""
import tgrad
import tgrad.nn.functional as F
from tgrad.nn.utils.rnn import pack_padded_sequence


def core_workload():
    tgrad.manual_seed(0)
    for dtype in (tgrad.float32, tgrad.float64, tgrad.float16):
        x = tgrad.randn(5, 7, dtype=dtype, requires_grad=dtype is not tgrad.float16)
        w = tgrad.randn(7, 3, dtype=dtype, requires_grad=dtype is not tgrad.float16)
        b = tgrad.randn(3, dtype=dtype)
        y = (x @ w + b).relu()
        loss = (y.softmax(-1) * y.log_softmax(-1)).sum() + y.t().exp().mean() + (x[:, ::2] ** 2).amax()
        loss = loss + x.var(0).sum() + x.max(1).values.sum() + x.tanh().logsumexp(1).sum()
        if loss.requires_grad:
            loss.backward()
    # the special functions' series read module constants, which a GPU compile takes only as constexpr
    z = tgrad.rand(6, requires_grad=True) + 0.5
    (z.lgamma().sum() + tgrad.polygamma(2, z).sum()).backward()
    ints = tgrad.arange(10)
    (ints > 3) & (ints < 8)
    tgrad.linspace(0, 1, 7), tgrad.eye(3), tgrad.rand(4), tgrad.randint(0, 5, (6,))


def resample_workload():
    tgrad.manual_seed(0)
    for dtype in (tgrad.float32,):
        x = tgrad.randn(2, 3, 5, 6, dtype=dtype, requires_grad=True)
        w = tgrad.randn(3, 2, 3, 3, dtype=dtype, requires_grad=True)
        b = tgrad.randn(2, dtype=dtype, requires_grad=True)
        y = F.conv_transpose2d(x, w, b, stride=2).sum() + F.conv_transpose2d(x[:, :2], w[:2], stride=2, groups=2).sum()
        for mode in ("constant", "reflect", "replicate", "circular"):
            y = y + F.pad(x, (1, 2, 2, 1), mode=mode).sum()
        y = y + F.adaptive_avg_pool2d(x, (2, 4)).sum() + F.adaptive_max_pool2d(x, (4, 3)).sum()
        for kw in (dict(scale_factor=2), dict(scale_factor=1.5, mode="nearest-exact"),
                   dict(size=(7, 4), mode="bilinear"), dict(scale_factor=2, mode="bilinear", align_corners=True)):
            y = y + F.interpolate(x, **kw).sum()
        y = y + F.fold(F.unfold(x, 2, padding=1), (5, 6), 2, padding=1).sum()
        y.backward()
    # fp64 only changes the linear modes' index arithmetic (fp64 there, as in torch)
    x = tgrad.randn(2, 3, 5, 6, dtype=tgrad.float64, requires_grad=True)
    F.interpolate(x, size=(7, 4), mode="bilinear").sum().backward()
    # grid_sample: its forward and grid-gradient kernels, and (outside deterministic mode on CUDA) the
    # input gradient's scatter-add
    grid = tgrad.randn(2, 4, 3, 2, requires_grad=True)
    x = tgrad.randn(2, 3, 5, 6, requires_grad=True)
    deterministic = tgrad.are_deterministic_algorithms_enabled()
    tgrad.use_deterministic_algorithms(False)
    try:
        for mode, padding in (("bilinear", "reflection"), ("nearest", "zeros")):
            F.grid_sample(x, grid, mode, padding, align_corners=False).sum().backward()
    finally:
        tgrad.use_deterministic_algorithms(deterministic)


def sequence_workload():
    """Run inside as_cuda(), attention takes its compiled one-head-per-program layout."""
    tgrad.manual_seed(0)
    x = tgrad.randn(3, 2, 4, requires_grad=True)
    h0 = tgrad.zeros(1, 2, 5, requires_grad=True)
    for mod in (tgrad.nn.LSTM(4, 5), tgrad.nn.GRU(4, 5), tgrad.nn.RNN(4, 5, nonlinearity="relu")):
        mod(x, (h0, h0) if isinstance(mod, tgrad.nn.LSTM) else h0)[0].sum().backward()
    tgrad.nn.LSTM(4, 5)(pack_padded_sequence(x, [3, 2]))[0].data.sum().backward()
    q = tgrad.randn(1, 2, 5, 8, requires_grad=True)
    F.scaled_dot_product_attention(q, q, q, attn_mask=tgrad.ones(5, 5, dtype=tgrad.bool).tril(),
                                   dropout_p=0.2).sum().backward()
    F.scaled_dot_product_attention(q, q, q, attn_mask=tgrad.zeros(5, 5)).sum().backward()
    F.scaled_dot_product_attention(q, q[:, :1], q[:, :1], is_causal=True, enable_gqa=True).sum().backward()
    y = tgrad.randn(2, 4, 3, requires_grad=True)
    (F.group_norm(y, 2, tgrad.ones(4), tgrad.zeros(4)).sum() + F.rms_norm(y, 3).sum()).backward()
    y.triu(1)
    tgrad.multinomial(tgrad.ones(2, 5), 1)
    tgrad.multinomial(tgrad.ones(2, 5), 3)
