"""A one-block attention model learns to reverse sequences of tokens (vocabulary 8, length 6).

    python train_examples/sequence.py           # 100 AdamW steps on fresh batches of 16
    python train_examples/sequence.py --device cuda

Output position i must copy input position L-1-i, which only attention can route: the model is
one pre-norm transformer block, with the attention written out from matmuls,

    h = tok[x] + pos[0..L-1]                                      Embedding x2, B L rows of D
    q, k, v = LN(h) Wqkv                                          one Linear, then three views
    h = h + (softmax(q k^T / sqrt(D) + M) v) Wo                   single head
    h = h + W2 relu(W1 LN(h))                                     the MLP (ReLU fused in W1's matmul)
    logits = LN(h) Whead                                          (B, L, vocab)

trained with token-level cross-entropy. The batch's sequences are packed into one matrix of B L
rows and attend through the block-diagonal mask M (0 within a sequence, -inf across), as packed
("varlen") attention does: two 2-d matmuls instead of two batched ones of B tiny (L, L) products,
which the CPU interpreter would run as B programs each. Every batch is new random sequences, so the score on a
held-out batch measures the learned rule, not memory. The plot shows the attention weights of one
held-out sequence: an anti-diagonal once the model has learned to reverse.
"""
from __future__ import annotations

import math

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.nn import functional as F

from common import Stopwatch, parse_args, progress, report, save_outputs, setup

VOCAB, LENGTH, DIM, BATCH, HELD_OUT = 8, 6, 32, 16, 256


class Reverser(nn.Module):
    def __init__(self, vocab=VOCAB, length=LENGTH, dim=DIM):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(length, dim)
        self.ln1, self.ln2, self.ln_out = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("positions", tgrad.arange(length))
        self.scale = 1.0 / math.sqrt(dim)
        self._masks = {}

    def mask(self, n, length, device):
        """(n L, n L) additive mask, 0 between tokens of one sequence and -inf across sequences."""
        if (n, device) not in self._masks:
            seq = tgrad.arange(n * length, device=device) // length
            same = seq[:, None] == seq[None, :]
            self._masks[n, device] = tgrad.where(same, 0.0, float("-inf"))
        return self._masks[n, device]

    def forward(self, x, return_attention=False):
        n, length = x.shape
        h = (self.tok(x) + self.pos(self.positions)).reshape(n * length, -1)  # the batch's tokens as rows
        q, k, v = self.qkv(self.ln1(h)).chunk(3, dim=-1)
        att = F.softmax((q * self.scale) @ k.t() + self.mask(n, length, x.device), dim=-1)
        h = h + self.proj(att @ v)
        h = h + self.fc2(F.linear_act(self.ln2(h), self.fc1.weight, self.fc1.bias, "relu"))
        logits = self.head(self.ln_out(h)).view(n, length, -1)
        return (logits, att) if return_attention else logits


def batch_of(n, device, generator=None):
    """n random sequences and their reversals, (n, LENGTH) int64 each."""
    x = tgrad.randint(0, VOCAB, (n, LENGTH), device=device, generator=generator)
    return x, x[:, tgrad.arange(LENGTH - 1, -1, -1, device=device)]


def token_accuracy(logits, y):
    return (logits.argmax(-1) == y).sum().item() / y.numel()


def plot(x, y, att, acc):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    ax.imshow(att, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(LENGTH), [f"{i}: {t}" for i, t in enumerate(x)])
    ax.set_yticks(range(LENGTH), [f"{i}: {t}" for i, t in enumerate(y)])
    ax.set_xlabel("input position: token (keys)")
    ax.set_ylabel("output position: target (queries)")
    ax.set_title(f"tgrad reverse: attention, token acc {acc:.1%}", fontsize=10)
    return fig


def main(argv=None):
    args = parse_args(argv, "reverse token sequences with one attention block, AdamW", steps=100)
    setup(args)
    steps = args.steps or (40 if args.quick else 100)
    held_out = tgrad.Generator(device=args.device).manual_seed(10_000 + args.seed)
    x_test, y_test = batch_of(HELD_OUT, args.device, held_out)

    model = Reverser().to(args.device)
    opt = tgrad.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
    sched = tgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"reverse: vocab {VOCAB}, length {LENGTH}, one attention block ({n_params} parameters), "
          f"{steps} AdamW steps of {BATCH} fresh sequences on {args.device}")
    watch = Stopwatch(args.device)
    bar = progress(args, steps, "reverse")
    for _ in bar:
        with watch:
            x, y = batch_of(BATCH, args.device)
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_value, acc = loss.item(), token_accuracy(logits, y)
        bar.set_postfix(loss=f"{loss_value:.4f}", acc=f"{acc:.1%}")
    bar.close()

    model.eval()
    tokens = sequences = 0
    with tgrad.no_grad():
        for i in range(0, HELD_OUT, BATCH):  # in training-sized batches: the mask grows as B^2
            logits, att = model(x_test[i:i + BATCH], return_attention=True)
            hit = logits.argmax(-1) == y_test[i:i + BATCH]
            tokens += hit.sum().item()
            sequences += hit.all(1).sum().item()
            if i == 0:
                first = att[:LENGTH, :LENGTH].cpu().numpy()
    test_acc, seq_acc = tokens / (HELD_OUT * LENGTH), sequences / HELD_OUT
    fig = plot(x_test[0].tolist(), y_test[0].tolist(), first, test_acc)
    png, ckpt = save_outputs(args, "sequence", fig, {"model": model.state_dict(), "optimizer": opt.state_dict()})
    report(watch, [f"final: held-out token accuracy {test_acc:.1%}, whole sequences reversed {seq_acc:.1%}"],
           png, ckpt)
    return {"accuracy": test_acc, "sequence_accuracy": seq_acc, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
