"""The sequence-model kernels (RNN steps, attention in its compiled one-head-per-program layout,
row norms, tril/triu, multinomial) compile for sm_90, as tests/test_cuda_compile.py checks the
core's: a CPU workload records each distinct launch, then Triton compiles it for Hopper (no GPU)."""
import pytest
import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import tgrad
import tgrad.nn.functional as F
from test_cuda_compile import _record
from tgrad.kernels import attention as KA
from tgrad.kernels.launch import launch_observers

NAMES = ("rnn_step_fwd_kernel", "rnn_step_bwd_kernel", "add_into_kernel", "attn_fwd_kernel", "attn_bwd_dq_kernel",
         "attn_bwd_dkv_kernel", "row_norm_fwd_kernel", "row_norm_bwd_kernel", "triangle_kernel",
         "multinomial_kernel")


def _workload(monkeypatch):
    gpu_layout = KA._layout
    monkeypatch.setattr(KA, "_layout", lambda *a: gpu_layout(*a[:-1], torch.device("cuda")))
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


def test_sequence_kernels_compile_for_sm90(monkeypatch):
    launches = {}
    observer = _record(launches)
    launch_observers.append(observer)
    try:
        _workload(monkeypatch)
    finally:
        launch_observers.remove(observer)
    mine = {k: v for k, v in launches.items() if k[0] in NAMES}
    assert {k[0] for k in mine} == set(NAMES)
    target = GPUTarget("cuda", 90, 32)
    failures = []
    for (name, _, consts), (kernel, signature, constants, options) in mine.items():
        try:
            assert triton.compile(ASTSource(kernel, signature, constants), target=target, options=options).asm["cubin"]
        except Exception as e:  # collect all, report together
            failures.append(f"{name} {consts[:200]}: {type(e).__name__}: {str(e)[:400]}")
    assert not failures, "kernels that do not compile for sm_90:\n" + "\n".join(failures)


def test_multinomial_of_many_samples_compiles_for_sm90_without_spilling(monkeypatch):
    """8192 samples: an uncapped sample block spilled 35 KB of registers and took 253 s to compile;
    in GPU blocks the search tile stays (16, 256) whatever the count."""
    import os
    import subprocess
    import tempfile
    import tgrad.kernels.multinomial as KM
    blocks = KM._blocks
    monkeypatch.setattr(KM, "_blocks", lambda R, C, k, replace, d: blocks(R, C, k, replace, torch.device("cuda")))
    launches = {}
    observer = _record(launches)
    launch_observers.append(observer)
    try:
        tgrad.multinomial(tgrad.rand(1, 300), 8192, replacement=True)
    finally:
        launch_observers.remove(observer)
    ((kernel, signature, constants, options),) = [v for (name, _, _), v in launches.items() if name == "multinomial_kernel"]
    compiled = triton.compile(ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32), options=options)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "multinomial.cubin")
        with open(path, "wb") as f:
            f.write(compiled.asm["cubin"])
        cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        usage = subprocess.run([cuobjdump, "--dump-resource-usage", path], capture_output=True, text=True,
                               check=True).stdout
    assert " STACK:0 " in usage and " LOCAL:0 " in usage, usage  # no spills
