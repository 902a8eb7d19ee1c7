"""The sequence-model workload (RNN steps, attention in its compiled one-head-per-program layout,
row norms, tril/triu, multinomial) that tests/test_compile_as_cuda.py compiles as a GPU launches
it, and multinomial's many-sample block."""
import tgrad
import tgrad.nn.functional as F
from tgrad.kernels.runtime.cuda_compile import compile_launch, resource_usage
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.runtime.target import as_cuda


def _workload():
    """Run inside as_cuda(), attention takes its compiled one-head-per-program layout."""
    tgrad.manual_seed(0)
    x = tgrad.randn(3, 2, 4, requires_grad=True)
    h0 = tgrad.zeros(1, 2, 5, requires_grad=True)
    for mod in (tgrad.nn.LSTM(4, 5), tgrad.nn.GRU(4, 5), tgrad.nn.RNN(4, 5, nonlinearity="relu")):
        mod(x, (h0, h0) if isinstance(mod, tgrad.nn.LSTM) else h0)[0].sum().backward()
    from tgrad.nn.utils.rnn import pack_padded_sequence
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


def test_multinomial_of_many_samples_compiles_for_sm90_without_spilling():
    """8192 samples: an uncapped sample block spilled 35 KB of registers and took 253 s to compile;
    in GPU blocks the search tile stays (16, 256) whatever the count."""
    launched = []
    launch_observers.append(lambda kernel, grid, args, meta: launched.append((kernel, args, meta)))
    try:
        with as_cuda():
            tgrad.multinomial(tgrad.rand(1, 300), 8192, replacement=True)
    finally:
        launch_observers.pop()
    ((kernel, args, meta),) = [launch for launch in launched if launch[0].__name__ == "multinomial_kernel"]
    assert meta["BLOCK_K"] == 16 and meta["BLOCK_C"] == 256
    usage = resource_usage(compile_launch(kernel, args, meta, 90))
    assert usage["spill_bytes"] == 0, usage
