"""A character-level GPT trained on a short bundled story (train_examples/data/keeper.txt, written
for tgrad; no download), then sampling new text with ``tgrad.multinomial``.

    python train_examples/gpt.py               # 3 blocks, width 48, context 32, 200 steps: the full run
    python train_examples/gpt.py --quick       # 2 blocks, width 32, context 24, 25 steps (the test's)
    python train_examples/gpt.py --device cuda

The model is a stack of pre-norm transformer blocks (minGPT's layout), each

    h = x + Wo  attention(LN(x) Wqkv)       causal F.scaled_dot_product_attention, fused kernel
    x = h + W2 gelu(W1 LN(h))                GELU in W1's matmul epilogue

between token + position embeddings and a final LN and linear head over the characters. Training
draws random windows of the first 90% of the text, minimises next-character cross-entropy with
AdamW (cosine learning rate) and clips the gradient norm to 1 (``nn.utils.clip_grad_norm_``); the
last 10% is held out. The plot shows the training and held-out losses; the checkpoint holds the
model, the optimizer and the character table.
"""
from __future__ import annotations

import math
import os

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.nn import functional as F

from common import Stopwatch, parse_args, progress, report, save_outputs, setup

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "keeper.txt")
# name -> layers, width, heads, context, batch, steps, learning rate
CONFIG = {"full": (3, 48, 4, 32, 8, 200, 4e-3), "quick": (2, 32, 2, 24, 8, 25, 6e-3)}


class Block(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.linear_act(self.ln2(x), self.fc1.weight, self.fc1.bias, "gelu"))


class GPT(nn.Module):
    def __init__(self, vocab, layers, dim, heads, context, dropout=0.0):
        super().__init__()
        self.context = context
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads, dropout) for _ in range(layers)])
        self.ln_f, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)
        self.register_buffer("positions", tgrad.arange(context), persistent=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(self.positions[:T])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def windows(data, starts, T):
    """(inputs, targets), each (B, T): the characters at starts + [0, T) and the next ones."""
    idx = starts[:, None] + tgrad.arange(T + 1, device=data.device)[None, :]
    chunk = data.index_select(0, idx.reshape(-1)).reshape(starts.shape[0], T + 1)
    return chunk[:, :-1], chunk[:, 1:]


def loss_of(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


@tgrad.no_grad()
def generate(model, prompt, n, temperature=0.8):
    """Extend ``prompt`` (1, t) by ``n`` characters, each drawn from the softmax of the last logits."""
    model.eval()
    idx = prompt
    for _ in range(n):
        logits = model(idx[:, -model.context:])[:, -1, :]
        nxt = tgrad.multinomial(F.softmax(logits / temperature, -1), 1)
        idx = tgrad.cat([idx, nxt], 1)
    model.train()
    return idx


def plot(train_losses, eval_points, sample, name):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, len(train_losses) + 1), train_losses, lw=1, label="training batches")
    ax.plot(*zip(*eval_points), "o-", label="held-out text")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats/char)")
    ax.set_title(f"tgrad character GPT ({name})")
    ax.legend()
    fig.text(0.01, -0.12, "sample: " + sample[:110].replace("\n", " ") + "...", fontsize=8, family="monospace")
    return fig


def main(argv=None):
    def extra(p):
        p.add_argument("--steps", type=int, default=None, help="training steps")
        p.add_argument("--sample", type=int, default=None, help="characters to generate (full 300, quick 40)")

    args = parse_args(argv, "character-level GPT on a bundled text, AdamW, causal attention", extra=extra)
    setup(args)
    name = "quick" if args.quick else "full"
    layers, dim, heads, T, B, steps, lr = CONFIG[name]
    steps = args.steps or steps
    n_sample = args.sample if args.sample is not None else (40 if args.quick else 300)
    with open(TEXT, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = tgrad.tensor([stoi[c] for c in text], dtype=tgrad.int64, device=args.device)
    split = int(0.9 * len(text))
    train, held = data[:split], data[split:]

    model = GPT(len(chars), layers, dim, heads, T).to(args.device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = tgrad.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.99))
    sched = tgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr / 10)
    eval_starts = tgrad.arange(0, len(held) - T - 1, max(1, (len(held) - T - 1) // 8), device=args.device)
    ex, ey = windows(held, eval_starts, T)

    def evaluate():
        model.eval()
        with tgrad.no_grad():
            value = loss_of(model, ex, ey).item()
        model.train()
        return value

    n_params = sum(p.numel() for p in model.parameters())
    print(f"gpt: {len(text)} characters ({len(chars)} distinct), {layers} blocks of width {dim}, {heads} heads, "
          f"context {T} ({n_params} parameters), {steps} steps of batch {B} on {args.device}")
    train_losses, eval_points = [], [(0, evaluate())]
    watch = Stopwatch(args.device)
    bar = progress(args, steps, f"gpt {name}")
    for step in range(1, steps + 1):
        with watch:
            starts = tgrad.randint(0, split - T - 1, (B,), device=args.device)
            x, y = windows(train, starts, T)
            loss = loss_of(model, x, y)
            opt.zero_grad()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            loss_value = loss.item()
        train_losses.append(loss_value)
        if step % max(1, steps // 5) == 0 or step == steps:
            eval_points.append((step, evaluate()))
        bar.update()
        bar.set_postfix(loss=f"{loss_value:.3f}", held_out=f"{eval_points[-1][1]:.3f}", grad_norm=f"{norm.item():.2f}")
    bar.close()

    prompt = data[:1].reshape(1, 1)
    sample = "".join(chars[i] for i in generate(model, prompt, n_sample)[0].tolist())
    print("sample:\n" + sample)
    fig = plot(train_losses, eval_points, sample, name)
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict(),
                  "chars": tgrad.tensor([ord(c) for c in chars], dtype=tgrad.int64)}
    png, ckpt = save_outputs(args, f"gpt_{name}", fig, checkpoint)
    first, last = eval_points[0][1], eval_points[-1][1]
    report(watch, [f"final: held-out loss {last:.3f} nats/char (from {first:.3f}; uniform is "
                   f"{math.log(len(chars)):.3f}), last training batch {train_losses[-1]:.3f}"], png, ckpt)
    return {"loss": train_losses[-1], "held_out": last, "held_out_start": first, "sample": sample,
            "chars": chars, "ms_per_step": watch.ms_per_step, "launches_per_step": watch.launches_per_step,
            "png": png, "checkpoint": ckpt, "model": model}


if __name__ == "__main__":
    main()
