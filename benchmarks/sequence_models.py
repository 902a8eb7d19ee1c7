"""Sequence models, tgrad against PyTorch eager on the same source: launches per step, ms per step
and the ratio tgrad / torch for

  - an LSTM training step of a character-level model (embedding, nn.LSTM, linear head,
    cross-entropy, Adam): the issue's hidden 128, sequence 64, batch 32 on CUDA;
  - scaled_dot_product_attention forward + backward, and the memory the autograd graph keeps
    between them: the fused kernel's (B, H, L) statistics against the naive form's (B, H, L, S)
    weights, at a sequence length where those dominate (and, on CUDA, the peak allocated memory);
  - a transformer block training step (nn.TransformerEncoderLayer, causal mask, AdamW);
  - a GRU classifier step (embedding, nn.GRU, linear head on the last hidden state, cross-entropy,
    Adam).

    python benchmarks/sequence_models.py [--device cpu|cuda] [--repeats N] [--threads N]
                                         [--only lstm,sdpa,block,gru] [--no-memory]

On the CPU (Triton's interpreter) the attention and transformer sizes are smaller (printed with the
results); the LSTM runs the issue's size on both.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.nn.functional  # noqa: E402
import tgrad.optim  # noqa: E402
from tgrad.nn.functional.attention import _sdpa_composed  # noqa: E402
from tgrad.kernels import attention as KA  # noqa: E402


def _data(lib, *shape, device, integer=None):
    gen = torch.Generator().manual_seed(sum(shape))
    t = torch.randint(0, integer, shape, generator=gen) if integer else torch.randn(*shape, generator=gen)
    t = t.to(device)
    return tgrad.from_torch(t) if lib is tgrad else t


def _recurrent_model(lib, device, cell, vocab, hidden, outputs):
    """(embedding, recurrent layer, linear head, Adam over the three) on ``device``."""
    nn = lib.nn
    lib.manual_seed(0)
    emb, rnn, head = nn.Embedding(vocab, 64), cell(64, hidden, batch_first=True), nn.Linear(hidden, outputs)
    for m in (emb, rnn, head):
        m.to(device)
    return emb, rnn, head, lib.optim.Adam([p for m in (emb, rnn, head) for p in m.parameters()], lr=1e-3)


def lstm_step(lib, device, vocab, hidden, seq, batch):
    emb, lstm, head, opt = _recurrent_model(lib, device, lib.nn.LSTM, vocab, hidden, vocab)
    x = _data(lib, batch, seq, device=device, integer=vocab)
    y = _data(lib, batch, seq, device=device, integer=vocab)

    def step():
        out, _ = lstm(emb(x))
        loss = lib.nn.functional.cross_entropy(head(out).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def gru_step(lib, device, vocab, hidden, seq, batch, classes):
    """A classifier: the head reads the GRU's last hidden state."""
    emb, gru, head, opt = _recurrent_model(lib, device, lib.nn.GRU, vocab, hidden, classes)
    x = _data(lib, batch, seq, device=device, integer=vocab)
    y = _data(lib, batch, device=device, integer=classes)

    def step():
        _, h = gru(emb(x))
        loss = lib.nn.functional.cross_entropy(head(h[-1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def attention_step(lib, device, B, H, L, E, causal=True, composed=False):
    F = lib.nn.functional
    q, k, v = (_data(lib, B, H, L, E, device=device) for _ in range(3))
    for t in (q, k, v):
        t.requires_grad_()
    g = _data(lib, B, H, L, E, device=device)

    def forward():
        if composed:  # the naive form: the (L, S) weights materialised and kept for the backward
            return _sdpa_composed(q, k, v, None, KA.MASK_NONE, causal, E ** -0.5, 0.0, 0, 0, None)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def step():
        out = forward()
        out.backward(g)
    return step, forward


def block_step(lib, device, d, heads, ff, seq, batch):
    nn = lib.nn
    lib.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True, norm_first=True).to(device)
    opt = lib.optim.AdamW(layer.parameters(), lr=1e-3)
    x = _data(lib, batch, seq, d, device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(seq, device=device)

    def step():
        out = layer(x, src_mask=mask, is_causal=True)
        loss = (out * out).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def graph_bytes(root):
    """Bytes of tensors the autograd graph under ``root`` holds for its backward (saved tensors
    and the torch tensors a node keeps as attributes), each storage counted once."""
    seen_nodes, seen, total = set(), set(), 0
    stack = [root.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        held = []
        for s in getattr(node, "_saved", None) or ():
            if s is not None and hasattr(s, "tensor"):
                held.append(s.tensor._data)
        for value in vars(node).values():
            for t in value if isinstance(value, tuple) else (value,):
                if isinstance(t, torch.Tensor):
                    held.append(t)
        for t in held:
            key = t.untyped_storage().data_ptr()
            if key not in seen:
                seen.add(key)
                total += t.untyped_storage().nbytes()
        stack.extend(n for n, _ in node.next_functions)
    return total


def measure(make, device, repeats):
    """(launches, tgrad ms, torch ms) wall, plus on the CPU (tgrad, torch) CPU ms."""
    tstep, pstep = make(tgrad), make(torch)
    tstep()
    with tgrad.count_launches() as counts:
        tstep()
    t = time_ms(tstep, device, repeats, warmup=1)
    p = time_ms(pstep, device, repeats, warmup=1)
    cpu = tuple(time_ms(f, device, repeats, warmup=0, clock=time.process_time) for f in (tstep, pstep)) \
        if device == "cpu" else None
    return sum(counts.values()), t, p, cpu


def _row(name, measured, steps=None):
    n, t, p, cpu = measured
    row = [name, n, f"{n / steps:.1f}" if steps else "-", f"{t:.2f}", f"{p:.2f}", f"{t / p:.1f}"]
    return row + ([f"{cpu[0]:.2f}", f"{cpu[1]:.2f}", f"{cpu[0] / cpu[1]:.1f}"] if cpu else ["-", "-", "-"])


def bench(dev, repeats, only=("lstm", "sdpa", "block", "gru"), memory=True):
    """The step table and the attention-memory table: (rows, header, mem_rows, mem_header, mem_title)."""
    cuda = dev == "cuda"
    rows = []
    if "lstm" in only:
        lstm = dict(vocab=65, hidden=128, seq=64, batch=32)  # the character-level model, on both
        rows.append(_row(f"LSTM step (hidden {lstm['hidden']}, seq {lstm['seq']}, batch {lstm['batch']})",
                         measure(lambda lib: lstm_step(lib, dev, **lstm), dev, repeats), lstm["seq"]))
    if "sdpa" in only:
        att = dict(B=4, H=8, L=1024, E=64) if cuda else dict(B=2, H=2, L=64, E=16)
        rows.append(_row(f"SDPA fwd+bwd causal (B {att['B']}, H {att['H']}, L=S {att['L']}, E {att['E']})",
                         measure(lambda lib: attention_step(lib, dev, **att)[0], dev, repeats)))
    if "block" in only:
        blk = dict(d=256, heads=8, ff=1024, seq=128, batch=16) if cuda else dict(d=32, heads=2, ff=64, seq=16,
                                                                                   batch=4)
        rows.append(_row(f"Transformer block step (d {blk['d']}, heads {blk['heads']}, seq {blk['seq']}, "
                         f"batch {blk['batch']})", measure(lambda lib: block_step(lib, dev, **blk), dev, repeats)))
    if "gru" in only:
        gru = dict(vocab=65, hidden=128, seq=64, batch=32, classes=10)
        rows.append(_row(f"GRU classifier step (hidden {gru['hidden']}, seq {gru['seq']}, batch {gru['batch']}, "
                         f"{gru['classes']} classes)", measure(lambda lib: gru_step(lib, dev, **gru), dev, repeats),
                         gru["seq"]))
    header = ["step", "tgrad launches", "launches per time step", "tgrad ms", "torch ms", "tgrad / torch",
              "tgrad CPU ms", "torch CPU ms", "CPU ratio"]

    mem = dict(B=1, H=4, L=4096, E=64) if cuda else dict(B=1, H=2, L=512, E=16)
    mem_rows = []
    for composed in (False, True) if memory else ():
        _, forward = attention_step(tgrad, dev, **mem, composed=composed)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        out = forward()
        held = graph_bytes(out)
        peak = ""
        if cuda:
            out.backward(tgrad.ones_like(out))
            torch.cuda.synchronize()
            peak = f"{(torch.cuda.max_memory_allocated() - base) / 2**20:.1f}"
        mem_rows.append(["naive (composed ops)" if composed else "fused kernel", f"{held / 2**20:.2f}", peak])
        del out
    mem_title = (f"attention memory at B {mem['B']}, H {mem['H']}, L=S {mem['L']}, E {mem['E']} (fp32; the (L, S) "
                 f"weights alone are {mem['B'] * mem['H'] * mem['L'] ** 2 * 4 / 2**20:.0f} MiB)")
    mem_header = ["form", "MiB held by the graph for backward", "peak MiB fwd+bwd (CUDA)"]
    return rows, header, mem_rows, mem_header, mem_title


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu", choices=["cpu", "cuda"])
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads on the CPU (default 1: on a "
                    "busy machine idle OpenMP workers make small calls far slower)")
    ap.add_argument("--only", default="lstm,sdpa,block,gru", help="the steps to time, comma-separated")
    ap.add_argument("--no-memory", action="store_true", help="skip the attention-memory table")
    args = ap.parse_args(argv)
    dev, cuda = args.device, args.device == "cuda"
    if not cuda:
        torch.set_num_threads(args.threads)
    print(machine())
    rows, header, mem_rows, mem_header, mem_title = bench(dev, args.repeats or (20 if cuda else 2),
                                                          args.only.split(","), not args.no_memory)
    print(table(rows, header))
    if mem_rows:
        print("\n" + mem_title)
        print(table(mem_rows, mem_header))

if __name__ == "__main__":
    main()
