"""nn.RNN / LSTM / GRU, their cells and nn.utils.rnn against torch.nn with copied weights.

torch runs in float64; tgrad in float64 (tight tolerance) and float32. Every backward uses random
upstream gradients on the output and the final states; compared are the outputs, the states, the
gradients of the input, the initial states and every parameter, and the state-dict keys.
"""

import pytest
import torch

import tgrad
from support.modules import assert_param_grads as compare_params, backward_both, flat
from support.modules import module_pair as make_modules
from support.reference import assert_close, make_pair, raises
from tgrad.kernels.runtime.launch import count_launches
from tgrad.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


@pytest.mark.parametrize("kind,kw", [
    ("LSTM", {}),
    ("GRU", {}),
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "bias": False}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 2, "batch_first": True, "bidirectional": True}),
    ("LSTM", {"proj_size": 3, "bidirectional": True}),
    ("LSTM", {"bias": False, "batch_first": True}),
])
def test_module_matches_torch(kind, kw):
    T, B, I, H = 4, 3, 5, 6
    ref, mod = make_modules(kind, I, H, **kw)
    bf = kw.get("batch_first", False)
    x, xr = make_pair((B, T, I) if bf else (T, B, I), tgrad.float64, seed=1)
    L = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    P = kw.get("proj_size", 0) or H
    h0, h0r = make_pair((L, B, P), tgrad.float64, -1, 1, seed=2)
    if kind == "LSTM":
        c0, c0r = make_pair((L, B, H), tgrad.float64, -1, 1, seed=3)
        out, (h, c) = mod(x, (h0, c0))
        outr, (hr, cr) = ref(xr, (h0r, c0r))
        backward_both([out, h, c], [outr, hr, cr])
        assert_close(c0.grad, c0r.grad, msg="grad of c0")
    else:
        out, h = mod(x, h0)
        outr, hr = ref(xr, h0r)
        backward_both([out, h], [outr, hr])
    assert_close(x.grad, xr.grad, msg="grad of input")
    assert_close(h0.grad, h0r.grad, msg="grad of h0")
    compare_params(ref, mod)


def test_float32_and_default_states():
    ref, mod = make_modules("LSTM", 5, 7, dtype=tgrad.float32)
    x, xr = make_pair((3, 2, 5), tgrad.float32, seed=4)
    out, (h, c) = mod(x)
    outr, (hr, cr) = ref(xr)
    backward_both([out, h, c], [outr, hr, cr])
    assert_close(x.grad, xr.grad, rtol=1e-4, atol=1e-5)
    compare_params(ref, mod)


def test_unbatched_input():
    ref, mod = make_modules("GRU", 4, 5)
    x, xr = make_pair((3, 4), tgrad.float64, seed=6)
    out, h = mod(x)
    outr, hr = ref(xr)
    backward_both([out, h], [outr, hr])
    assert_close(x.grad, xr.grad)


def test_packed_sequence_unsorted():
    from torch.nn.utils.rnn import pack_padded_sequence as tpack, pad_packed_sequence as tpad
    ref, mod = make_modules("LSTM", 4, 5, bidirectional=True, batch_first=True)
    lengths = [2, 4, 1]
    x, xr = make_pair((3, 4, 4), tgrad.float64, seed=7)
    h0, h0r = make_pair((2, 3, 5), tgrad.float64, -1, 1, seed=8)
    c0, c0r = make_pair((2, 3, 5), tgrad.float64, -1, 1, seed=9)
    p = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    pr = tpack(xr, lengths, batch_first=True, enforce_sorted=False)
    assert p.batch_sizes.tolist() == pr.batch_sizes.tolist()
    assert p.sorted_indices.tolist() == pr.sorted_indices.tolist()
    assert_close(p.data, pr.data)
    out, (h, c) = mod(p, (h0, c0))
    outr, (hr, cr) = ref(pr, (h0r, c0r))
    padded, lens = pad_packed_sequence(out, batch_first=True, padding_value=0.5, total_length=5)
    paddedr, lensr = tpad(outr, batch_first=True, padding_value=0.5, total_length=5)
    assert lens.tolist() == lensr.tolist()
    backward_both([padded, h, c], [paddedr, hr, cr])
    for a, b, n in ((x, xr, "x"), (h0, h0r, "h0"), (c0, c0r, "c0")):
        assert_close(a.grad, b.grad, msg=f"grad of {n}")
    compare_params(ref, mod)


def test_pad_sequence():
    pairs = [make_pair((n, 2), tgrad.float64, seed=n) for n in (3, 1, 2)]
    for bf, side in ((False, "right"), (True, "left")):
        got = pad_sequence([p[0] for p in pairs], batch_first=bf, padding_value=-1.0, padding_side=side)
        exp = torch.nn.utils.rnn.pad_sequence([p[1] for p in pairs], batch_first=bf, padding_value=-1.0,
                                              padding_side=side)
        backward_both([got], [exp], seed=bf)
    for t, r in pairs:
        assert_close(t.grad, r.grad)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(kind):
    ref, mod = make_modules(kind, 5, 6)
    x, xr = make_pair((3, 5), tgrad.float64, seed=10)
    h, hr = make_pair((3, 6), tgrad.float64, -1, 1, seed=11)
    if kind == "LSTMCell":
        c, cr = make_pair((3, 6), tgrad.float64, -1, 1, seed=12)
        backward_both(mod(x, (h, c)), ref(xr, (hr, cr)))
        assert_close(c.grad, cr.grad)
    else:
        backward_both([mod(x, h)], [ref(xr, hr)])
    assert_close(x.grad, xr.grad)
    assert_close(h.grad, hr.grad)
    compare_params(ref, mod)
    # unbatched, default state
    x1, x1r = make_pair((5,), tgrad.float64, seed=13)
    backward_both(flat([mod(x1)]), flat([ref(x1r)]))


@pytest.mark.parametrize("kw", [{}, {"proj_size": 2}])
def test_double_backward_lstm(kw):
    ref, mod = make_modules("LSTM", 3, 4, **kw)
    x, xr = make_pair((3, 2, 3), tgrad.float64, seed=14)
    out, _ = mod(x)
    outr, _ = ref(xr)
    (g,) = tgrad.autograd.grad(out.sum(), [x], create_graph=True)
    (gr,) = torch.autograd.grad(outr.sum(), [xr], create_graph=True)
    assert_close(g, gr)
    (g * g).sum().backward()
    (gr * gr).sum().backward()
    assert_close(x.grad, xr.grad)
    compare_params(ref, mod)


def test_double_backward_gru_packed_bidirectional():
    from torch.nn.utils.rnn import pack_padded_sequence as tpack
    ref, mod = make_modules("GRU", 3, 4, bidirectional=True)
    x, xr = make_pair((3, 2, 3), tgrad.float64, seed=15)
    out, h = mod(pack_padded_sequence(x, [3, 2]))
    outr, hr = ref(tpack(xr, [3, 2]))
    (g,) = tgrad.autograd.grad((out.data ** 2).sum() + h.sum(), [x], create_graph=True)
    (gr,) = torch.autograd.grad((outr.data ** 2).sum() + hr.sum(), [xr], create_graph=True)
    assert_close(g, gr)
    (g * g).sum().backward()
    (gr * gr).sum().backward()
    assert_close(x.grad, xr.grad)
    compare_params(ref, mod)


def test_dropout_between_layers():
    tgrad.manual_seed(0)
    mod = tgrad.nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = tgrad.randn(3, 2, 3)
    a, _ = mod(x)
    b, _ = mod(x)
    assert not torch.equal(a.torch(), b.torch()), "dropout between layers drew no mask"
    mod.eval()
    a, _ = mod(x)
    b, _ = mod(x)
    assert torch.equal(a.torch(), b.torch())


def test_one_launch_per_step_forward_and_backward():
    """Forward: the input projection, then one launch per step (recurrent matmul + gates);
    backward: one launch per step, then dx / dW_ih / dW_hh from a few matmuls."""
    mod = tgrad.nn.LSTM(4, 5)
    x = tgrad.randn(6, 2, 4, requires_grad=True)
    with count_launches() as c:
        out, _ = mod(x)
    assert c["rnn_step_fwd_kernel"] == 6 and c["matmul_kernel"] == 1 and sum(c.values()) <= 6 + 1 + 2, dict(c)
    with count_launches() as c:
        out.sum().backward()
    assert c["rnn_step_bwd_kernel"] == 6 and sum(c.values()) <= 6 + 4, dict(c)
    proj = tgrad.nn.LSTM(4, 5, proj_size=3)  # the projection: two more matmuls per step
    with count_launches() as c:
        out, _ = proj(x)
    assert c["rnn_step_fwd_kernel"] == 6 and c["matmul_kernel"] == 13


def test_errors():
    with raises(ValueError, "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'."):
        tgrad.nn.RNN(3, 4, nonlinearity="gelu")
    with raises(ValueError, "proj_size has to be smaller than hidden_size"):
        tgrad.nn.LSTM(3, 4, proj_size=4)
    with raises(ValueError, "proj_size argument is only supported for LSTM, not RNN or GRU"):
        tgrad.nn.GRU(3, 4, proj_size=2)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        tgrad.nn.LSTM(3, 4, dropout=0.2)
    mod = tgrad.nn.LSTM(3, 4)
    with raises(ValueError, "LSTM: Expected input to be 2D or 3D, got 4D tensor instead"):
        mod(tgrad.zeros(1, 2, 3, 4))
    with raises(RuntimeError, "input.size(-1) must be equal to input_size. Expected 3, got 5"):
        mod(tgrad.zeros(2, 2, 5))
    with raises(RuntimeError, "Expected hidden[0] size (1, 2, 4), got [1, 3, 4]"):
        mod(tgrad.zeros(2, 2, 3), (tgrad.zeros(1, 3, 4), tgrad.zeros(1, 2, 4)))
    with raises(RuntimeError, "input has inconsistent input_size: got 2 expected 3"):
        tgrad.nn.GRUCell(3, 4)(tgrad.zeros(2, 2))
    for lib in (torch, tgrad):  # the dtype mismatch is a ValueError in both, naming both dtypes
        with pytest.raises(ValueError, match=r"RNN input dtype \(\w+\.float64\) does not match weight dtype"):
            lib.nn.RNN(3, 4)(lib.zeros(2, 5, 3, dtype=lib.float64))
        with pytest.raises(ValueError, match=r"RNN input dtype \(\w+\.float32\) does not match weight dtype"):
            lib.nn.GRU(3, 4).double()(lib.zeros(2, 5, 3))
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_padded_sequence(tgrad.zeros(3, 2, 1), [1, 3])


def test_float32_step_tanh_is_the_float64_tanh_rounded():
    """The fused fp32 step's tanh (kernels/rnn.py ``_tanh``: fp64 (1 - e) / (1 + e), x itself below
    2^-12): within one ulp of tanh computed in float64 and rounded, from tiny to saturated, inf and nan."""
    from tgrad.kernels import rnn as KR
    vals = torch.cat([torch.logspace(-30, 1.5, 400), torch.tensor([2.0 ** -12, 2.0 ** -12 * 0.999, 0.5493, 9.01,
                                                                    float("inf"), float("nan"), 0.0])])
    x = torch.cat([vals, -vals]).reshape(1, -1).to(torch.float32)
    B, H = x.shape
    zeros = torch.zeros(B, H)
    h = torch.empty(B, H)
    out = torch.empty(B, H)
    KR.step_forward(KR.MODES["RNN_TANH"], 0, x, None, zeros, zeros, h, h, out, h, None,
                    w_hh=torch.zeros(H, H), b_hh=None)
    want = torch.tanh(x.double()).float()
    assert torch.equal(out.isnan(), want.isnan())
    ulp = (torch.nextafter(want, torch.full_like(want, float("inf"))) - want).abs()
    ok = ~want.isnan()
    assert ((out - want).abs()[ok] <= ulp[ok]).all()
