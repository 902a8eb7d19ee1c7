"""Launches at GPU-plausible shapes, planned as a GPU would make them and compiled for sm_90/sm_80
without running them: registers, spills and grids per kernel and shape.

``planned()`` configures launches as CUDA ones (``as_cuda()``) and replaces the CPU executor by one
that runs nothing, so a forward and backward at 2 x 256 x 224 x 224 costs only the allocations (the
values computed are garbage, which no launch decision reads). ``SPILL_CASES`` are the shapes issue
23 names (conv 3x3/5x5/7x7 at 64-256 channels and 32-224 px, pools, indexing of 4096 x 1024,
attention at head dims 64/128 and L 1024-4096, in fp32/fp16/bf16) and a linear layer's product at
1000^3 and 4096^3 with a bias alone or with relu, gelu, gelu_tanh or tanh (fp16, bf16, tf32, fp32);
``probe`` compiles each distinct launch of them and reports its resource usage. Run as a script for
the table:

    python tests/support/gpu_shapes.py [--archs 90,80] [--only conv] [--json out.json]
"""
import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import tgrad  # noqa: E402
import tgrad.nn.functional as F  # noqa: E402
from tgrad.kernels import attention as KA  # noqa: E402
from tgrad.kernels.linalg import matmul as KM  # noqa: E402
from tgrad.kernels.runtime import launch as launch_module  # noqa: E402
from tgrad.kernels.runtime.cuda_compile import GRID_LIMITS, CompileObserver, specialise  # noqa: E402
from tgrad.kernels.runtime.launch import launch_observers  # noqa: E402
from tgrad.kernels.runtime.target import as_cuda  # noqa: E402


class _RunsNothing:
    """A CPU executor that runs no launch: planning needs the configurations, not the values."""

    @staticmethod
    def run(kernel, grid, args, meta, keep_alive, recording, site):
        return None

    @staticmethod
    def site_plan(kernel, site):  # no site is ever planned: each launch goes through ``launch``
        return None


@contextmanager
def planned(observer):
    """Inside: CPU launches configured as CUDA ones, shown to ``observer`` and not run."""
    saved = launch_module._cpu_executor
    launch_module._cpu_executor = _RunsNothing
    launch_observers.append(observer)
    try:
        with as_cuda():
            yield
    finally:
        launch_observers.remove(observer)
        launch_module._cpu_executor = saved


def _t(*shape, dtype=tgrad.float32, grad=True):
    return tgrad.empty(*shape, dtype=dtype, requires_grad=grad)


def _backward(y):
    y.backward(tgrad.empty(*y.shape, dtype=y.dtype))


def conv_case(c_in, c_out, k, px, dtype, stride=1, n=2):
    def run():
        x, w, b = _t(n, c_in, px, px, dtype=dtype), _t(c_out, c_in, k, k, dtype=dtype), _t(c_out, dtype=dtype)
        _backward(F.conv2d(x, w, b, stride=stride, padding=k // 2))
    return f"conv2d {c_in}->{c_out} {k}x{k} s{stride} {px}px {_name(dtype)}", run


def pool_case(kind, c, px, dtype, n=2):
    def run():
        x = _t(n, c, px, px, dtype=dtype)
        if kind == "max":
            _backward(F.max_pool2d(x, 3, 2, 1))
        elif kind == "avg":
            _backward(F.avg_pool2d(x, 3, 2, 1))
        else:
            _backward(F.adaptive_avg_pool2d(x, 1))
    return f"{kind}_pool2d {n}x{c}x{px}x{px} {_name(dtype)}", run


def index_case(rows, cols, dtype):
    def run():
        x = _t(rows, cols, dtype=dtype)
        idx = tgrad.zeros(rows, dtype=tgrad.int64)
        _backward(x.index_select(0, idx))
        _backward(x[idx, :cols // 2])
        with tgrad.no_grad():
            x.detach()[idx] = tgrad.empty(rows, cols, dtype=dtype)
    return f"index {rows}x{cols} {_name(dtype)}", run


def attention_case(length, head, dtype, causal, heads=8, n=2):
    """Attention's kernels called directly: bf16 is refused by tgrad's CPU ops, not by the kernels."""
    def run():
        q, k, v, o, do = (torch.empty(n, heads, length, head, dtype=dtype) for _ in range(5))
        lse = torch.empty(n, heads, length, dtype=torch.float32)
        KA.attention_forward(q, k, v, None, KA.MASK_NONE, causal, head ** -0.5)
        KA.attention_backward(q, k, v, o, lse, do, None, KA.MASK_NONE, causal, head ** -0.5)
    return f"attention L{length} E{head} {'causal ' if causal else ''}{_name(dtype)}", run


def matmul_case(n, dtype, activation, tf32=False):
    """A linear layer's product (bias and a fused activation) through the kernel: bf16 is refused by
    tgrad's CPU ops and tf32 is for CUDA tensors, not for the kernel. n = 1000 masks the edge tiles;
    4096 is past the size whose tiles a GPU times (planned here: the first candidate)."""
    def run():
        a, b, bias = torch.empty(n, n, dtype=dtype), torch.empty(n, n, dtype=dtype), torch.empty(n, dtype=dtype)
        KM.matmul(a, b, bias=bias, activation=activation, allow_tf32=tf32)
    return f"matmul {n}^3 {_name(dtype)}{' tf32' if tf32 else ''} + bias{' + ' + activation if activation else ''}", run


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


FLOATS = (torch.float32, torch.float16, torch.bfloat16)
SPILL_CASES = (
    [conv_case(c, c, k, px, d) for k in (3, 5, 7) for c, px in ((64, 224), (256, 56), (256, 32)) for d in FLOATS[:2]]
    + [conv_case(3, 64, 7, 224, d, stride=2) for d in FLOATS[:2]]
    + [pool_case(kind, 64, 112, d) for kind in ("max", "avg") for d in FLOATS[:2]]
    + [pool_case("adaptive_avg", 512, 7, tgrad.float32)]
    + [index_case(4096, 1024, d) for d in FLOATS[:2]]
    + [attention_case(L, E, d, causal) for E in (64, 128) for L in (1024, 4096) for d in FLOATS
       for causal in (False, True) if L == 1024 or not causal]
    + [matmul_case(n, d, act, tf32) for n in (1000, 4096)
       for d, tf32 in ((torch.float16, False), (torch.bfloat16, False), (torch.float32, True), (torch.float32, False))
       for act in (None, "relu", "gelu", "gelu_tanh", "tanh")]
)


def _rows_case(name, op, shape, dtype):
    def run():
        x = _t(*shape, dtype=dtype)
        if op == "cross_entropy":
            _backward(F.cross_entropy(x, tgrad.zeros(shape[0], dtype=tgrad.int64)))
        elif op == "layer_norm":
            _backward(F.layer_norm(x, shape[-1:], _t(shape[-1], dtype=dtype), _t(shape[-1], dtype=dtype)))
        else:
            _backward(getattr(F, op)(x, -1))
    return f"{name} {op} {'x'.join(map(str, shape))} {_name(dtype)}", run


def _pointwise_case(n):
    def run():
        x, y = _t(n), _t(n)
        for out in (x + y, x * 1.5, x.exp(), F.gelu(x), x.sum(), x.amax(), x.view(-1, 4096).sum(1)):
            _backward(out)
        _backward(_t(8192, 4096) + _t(4096))
    return f"gpu_check bandwidth 2^{n.bit_length() - 1}", run


def _matmul_case(n, dtype):
    def run():
        _backward(_t(n, n, dtype=dtype) @ _t(n, n, dtype=dtype))
        _backward(F.relu(F.linear(_t(8192, 4096, dtype=dtype), _t(4096, 4096, dtype=dtype), _t(4096, dtype=dtype))))
    return f"matmul {n}^3 {_name(dtype)}", run


def _mlp_case(sizes, batch, dtype):
    def run():
        nn = tgrad.nn
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b, dtype=dtype), nn.ReLU()]
        model = nn.Sequential(*layers[:-1])
        for opt in (tgrad.optim.Adam(model.parameters(), capturable=True), tgrad.optim.SGD(model.parameters(), 0.1)):
            F.cross_entropy(model(_t(batch, sizes[0], dtype=dtype)), tgrad.zeros(batch, dtype=tgrad.int64)).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    return f"MLP {'-'.join(map(str, sizes))} batch {batch} {_name(dtype)}", run


def _lstm_case(vocab, hidden, seq, batch):
    def run():
        nn = tgrad.nn
        emb, lstm, head = nn.Embedding(vocab, 64), nn.LSTM(64, hidden, batch_first=True), nn.Linear(hidden, vocab)
        tokens = tgrad.zeros(batch, seq, dtype=tgrad.int64)
        out = head(lstm(emb(tokens))[0])
        F.cross_entropy(out.reshape(-1, vocab), tokens.reshape(-1)).backward()
        tgrad.optim.Adam([*emb.parameters(), *lstm.parameters(), *head.parameters()]).step()
    return f"LSTM vocab {vocab} hidden {hidden} seq {seq} batch {batch}", run


def _block_case(d, heads, ff, seq, batch):
    def run():
        nn = tgrad.nn
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True, norm_first=True)
        mask = nn.Transformer.generate_square_subsequent_mask(seq)
        _backward(layer(_t(batch, seq, d), src_mask=mask))
        tgrad.optim.AdamW(layer.parameters()).step()
    return f"transformer block d {d} seq {seq} batch {batch}", run


# the largest shapes benchmarks/ (gpu_check.py's GPU sizes, ops.py, sequence_models.py, mlp_step.py)
# and train_examples/ launch (the examples' own are far smaller: gpt's width 48, digits' batch 32)
GRID_CASES = (
    [_pointwise_case(1 << 26)]
    + [_matmul_case(4096, d) for d in FLOATS[:2]]
    + [_rows_case("gpu_check rows", op, shape, tgrad.float32) for op in ("softmax", "log_softmax", "layer_norm",
                                                                         "cross_entropy")
       for shape in ((8192, 4096), (8192, 32768))]
    + [_mlp_case((784, 1024, 1024, 10), 256, tgrad.float32)]
    + [attention_case(1024, 64, torch.float32, True, heads=8, n=4), attention_case(4096, 64, torch.float32, False, 4, 1)]
    + [_lstm_case(65, 128, 64, 32), _block_case(256, 8, 1024, 128, 16)]
    + [conv_case(32, 32, 3, 8, tgrad.float32, n=32), pool_case("max", 32, 8, tgrad.float32, n=32)]
)


def plan_grids(cases):
    """{case: [(kernel, grid)]} of every launch ``cases`` make, planned as on a GPU and not run."""
    grids, current = {}, [None]

    def observe(kernel, grid, args, meta):
        grids.setdefault(current[0], []).append((kernel.__name__, tuple(grid) + (1,) * (3 - len(tuple(grid)))))

    for name, run in cases:
        current[0] = name
        with planned(observe):
            run()
    return grids


def probe(cases, archs=(90,), log=None):
    """[{case, kernel, arch, grid, blocks, registers, spill_bytes, shared}] for each distinct
    (case, kernel, specialisation): every launch of ``cases`` planned and compiled."""
    current = [None]
    compiler = CompileObserver(archs=tuple(archs), usage=True, context=lambda: current[0])
    rows, seen = [], set()

    def observe(kernel, grid, args, meta):
        compiler(kernel, grid, args, meta)
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        for arch in archs:
            key = specialise(kernel, args, meta, arch)[0]
            if (current[0], key) in seen:
                continue
            seen.add((current[0], key))
            record = compiler.compiled.get(key, {})
            blocks = {k: v for k, v in meta.items() if k.startswith("BLOCK") or k == "num_warps"}
            row = dict(case=current[0], kernel=kernel.__name__, arch=arch, grid=grid, blocks=blocks,
                       grid_ok=all(g <= limit for g, limit in zip(grid, GRID_LIMITS)),
                       **{k: record.get(k) for k in ("registers", "spill_bytes", "shared", "failed")})
            rows.append(row)
            if log:
                log(row)

    for name, run in cases:
        current[0] = name
        with planned(observe):
            run()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archs", default="90")
    parser.add_argument("--only", default="", help="cases whose name contains this")
    parser.add_argument("--json", default=None)
    opts = parser.parse_args(argv)
    cases = [c for c in SPILL_CASES if opts.only in c[0]]

    def log(row):
        print(f"{row['case']:<40} {row['kernel']:<24} sm_{row['arch']} regs {row['registers']} "
              f"spill {row['spill_bytes']} smem {row['shared']} grid {row['grid']} {row['blocks']}"
              + ("" if row["grid_ok"] else "  GRID OVER CUDA'S LIMITS") + (" FAILED" if row["failed"] else ""),
              flush=True)
    rows = probe(cases, [int(a) for a in opts.archs.split(",")], log)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)
    spills = [r for r in rows if r["spill_bytes"]]
    print(f"{len(rows)} launches, {len(spills)} spilling, {sum(not r['grid_ok'] for r in rows)} over the grid limits")


if __name__ == "__main__":
    main()
