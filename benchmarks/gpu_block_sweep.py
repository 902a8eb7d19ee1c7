"""Block shapes for reductions and layer_norm on a GPU, each timed with do_bench against PyTorch
(the sweep behind docs/gpu.md's row-sum and layer_norm figures). It replaces the shape-choosing
functions in tgrad.kernels.reductions.reduce and tgrad.kernels.normalization.layer_norm for the run; CUDA only.

    bash benchmarks/gpu_carry.sh run python3 benchmarks/gpu_block_sweep.py     # writes $OUT/sweep.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402,F401  (first: it makes tgrad importable)
import torch  # noqa: E402
import triton  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn.functional as TF  # noqa: E402
from tgrad.kernels.reductions import reduce as R  # noqa: E402
from tgrad.kernels.normalization import layer_norm as LN  # noqa: E402

out = {}
def t(fn):
    return triton.testing.do_bench(fn, warmup=10, rep=50, return_mode="median")

n = 1 << 26
x = torch.randn(n, device="cuda"); tx = tgrad.from_torch(x.clone())
orig_shape, orig_splits = R.block_shape_2d, R._splits
with tgrad.no_grad():
    out["torch sum rows"] = t(lambda: x.view(-1, 4096).sum(1))
    out["tgrad sum rows default"] = t(lambda: tx.view(-1, 4096).sum(1))
    for br, bc, w in [(1, 4096, 8), (1, 2048, 8), (2, 2048, 8), (4, 1024, 8), (8, 512, 4), (16, 256, 4), (1, 1024, 4), (4, 2048, 8), (8, 1024, 8), (32, 128, 4)]:
        R.block_shape_2d = lambda nr, nc, d, br=br, bc=bc, w=w: (br, bc, w)
        try:
            out[f"tgrad sum rows {br}x{bc} w{w}"] = t(lambda: tx.view(-1, 4096).sum(1))
        except Exception as e:
            out[f"tgrad sum rows {br}x{bc} w{w}"] = repr(e)[:200]
    R.block_shape_2d = orig_shape
    out["torch sum"] = t(lambda: x.sum())
    out["tgrad sum default"] = t(lambda: tx.sum())
    for k in [2, 4, 8, 16, 32]:
        R._splits = lambda op, rp, nc, bc, d, k=k: max(1, min(132 * k, nc // bc))
        out[f"tgrad sum splits {132*k}"] = t(lambda: tx.sum())
    for br, bc, w in [(1, 4096, 8), (1, 2048, 8), (1, 1024, 4), (2, 2048, 8)]:
        R.block_shape_2d = lambda nr, nc, d, br=br, bc=bc, w=w: (br, bc, w)
        for k in [4, 8, 16]:
            R._splits = lambda op, rp, nc, bc, d, k=k: max(1, min(132 * k, nc // bc))
            out[f"tgrad sum {br}x{bc} w{w} splits {132*k}"] = t(lambda: tx.sum())
    R._splits, R.block_shape_2d = orig_splits, orig_shape

orig_ln = LN._row_blocks
for dt in (torch.bfloat16, torch.float32):
    xs = torch.randn(8192, 4096, device="cuda", dtype=dt)
    w = torch.randn(4096, device="cuda", dtype=dt); b = torch.randn(4096, device="cuda", dtype=dt)
    g = torch.randn(8192, 4096, device="cuda", dtype=dt)
    px, pw, pb = (v.clone().requires_grad_() for v in (xs, w, b))
    tx2, tw, tb = (tgrad.from_torch(v.clone()).requires_grad_() for v in (xs, w, b)); tg = tgrad.from_torch(g)
    name = str(dt)[6:]
    out[f"torch ln {name} fwd"] = t(lambda: torch.nn.functional.layer_norm(px, (4096,), pw, pb))
    out[f"torch ln {name} fwd+bwd"] = t(lambda: torch.nn.functional.layer_norm(px, (4096,), pw, pb).backward(g))
    with tgrad.no_grad():
        out[f"tgrad ln {name} fwd default"] = t(lambda: TF.layer_norm(tx2, (4096,), tw, tb))
    out[f"tgrad ln {name} fwd+bwd default"] = t(lambda: TF.layer_norm(tx2, (4096,), tw, tb).backward(tg))
    for br, bc, wp in [(1, 4096, 8), (1, 4096, 16), (2, 4096, 8), (1, 2048, 8), (4, 1024, 8), (1, 1024, 4)]:
        LN._row_blocks = lambda nr, nc, d, br=br, bc=bc, wp=wp: (br, bc, wp)
        try:
            with tgrad.no_grad():
                out[f"tgrad ln {name} fwd {br}x{bc} w{wp}"] = t(lambda: TF.layer_norm(tx2, (4096,), tw, tb))
            out[f"tgrad ln {name} fwd+bwd {br}x{bc} w{wp}"] = t(lambda: TF.layer_norm(tx2, (4096,), tw, tb).backward(tg))
        except Exception as e:
            out[f"tgrad ln {name} {br}x{bc} w{wp}"] = repr(e)[:200]
    LN._row_blocks = orig_ln
for k, v in out.items():
    print(f"{k:45s} {v if isinstance(v, str) else f'{v:.4f} ms'}")
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "sweep.json"), "w"), indent=1)
