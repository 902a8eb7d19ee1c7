"""Karpathy's bigram language model tutorial end to end, in tgrad and in PyTorch: CPU time per phase.

    python benchmarks/bigram.py [--steps 200] [--eval-batches 120] [--tokens 500] [--profile tgrad]

The tutorial as written (``bigram.py`` of "Let's build GPT"): a character-level model whose
logits table is ``nn.Embedding(vocab, vocab)``, ``F.cross_entropy`` on (B*T, C) logits, AdamW at
lr 1e-2, ``get_batch`` drawing random windows (batch 32, context 8) with ``randint`` and
``stack``, ``estimate_loss`` under ``no_grad`` in eval mode (half of the evaluation batches on the
train split, half on the validation split, each loss read with ``.item()``), and ``generate``
(the whole context through the model, the last position's softmax, ``multinomial``, ``cat``) from
a single zero token. The text is this repository's docs/*.md concatenated (offline, ~100 KB).

The same source runs on both libraries (``lib`` is ``tgrad`` or ``torch``), one after the other
in one process; PyTorch uses one thread. Reported: CPU time (``time.process_time``) of each
phase, the total, and tgrad / PyTorch. ``--profile tgrad`` prints cProfile's top functions of
the tgrad run instead.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, machine, table  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.nn.functional  # noqa: E402
import tgrad.optim  # noqa: E402

BATCH, CONTEXT, LR = 32, 8, 1e-2


def corpus() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))


def tutorial(lib, text: str, steps: int, eval_batches: int, tokens: int):
    """The tutorial in ``lib``; returns {phase: CPU seconds} and the final losses and sample."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(1337)
    chars = sorted(set(text))
    vocab = len(chars)
    stoi, itos = {c: i for i, c in enumerate(chars)}, dict(enumerate(chars))
    data = lib.tensor([stoi[c] for c in text], dtype=lib.long)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]

    def get_batch(split):
        source = train_data if split == "train" else val_data
        ix = lib.randint(len(source) - CONTEXT, (BATCH,))
        x = lib.stack([source[i:i + CONTEXT] for i in ix])
        y = lib.stack([source[i + 1:i + CONTEXT + 1] for i in ix])
        return x, y

    class BigramLanguageModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.token_embedding_table = nn.Embedding(vocab, vocab)

        def forward(self, idx, targets=None):
            logits = self.token_embedding_table(idx)  # (B, T, C)
            if targets is None:
                return logits, None
            B, T, C = logits.shape
            logits = logits.view(B * T, C)
            return logits, F.cross_entropy(logits, targets.view(B * T))

        def generate(self, idx, max_new_tokens):
            for _ in range(max_new_tokens):
                logits, _ = self(idx)
                probs = F.softmax(logits[:, -1, :], dim=-1)
                idx = lib.cat((idx, lib.multinomial(probs, num_samples=1)), dim=1)
            return idx

    model = BigramLanguageModel()
    optimizer = lib.optim.AdamW(model.parameters(), lr=LR)

    @lib.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        per_split = eval_batches // 2
        for split in ("train", "val"):
            losses = lib.zeros(per_split)
            for k in range(per_split):
                X, Y = get_batch(split)
                _, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    times = {}
    t0 = time.process_time()
    for _ in range(steps):
        xb, yb = get_batch("train")
        _, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    times["train"] = time.process_time() - t0
    t0 = time.process_time()
    losses = estimate_loss()
    times["evaluate"] = time.process_time() - t0
    t0 = time.process_time()
    sample = "".join(itos[i] for i in model.generate(lib.zeros((1, 1), dtype=lib.long), tokens)[0].tolist())
    times["generate"] = time.process_time() - t0
    return times, losses, sample


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--eval-batches", type=int, default=120)
    parser.add_argument("--tokens", type=int, default=500)
    parser.add_argument("--profile", choices=("tgrad",), default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    text = corpus()
    run = (text, args.steps, args.eval_batches, args.tokens)
    if args.profile:
        tutorial(tgrad, text, 2, 2, 2)  # warm: the first launches of each site interpret and record
        profiler = cProfile.Profile()
        profiler.runcall(tutorial, tgrad, *run)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
        return
    print(machine())
    print(f"text: docs/*.md, {len(text)} characters, {len(set(text))} distinct; batch {BATCH}, context {CONTEXT}, "
          f"{args.steps} steps, {args.eval_batches} evaluation batches, {args.tokens} tokens")
    results = {}
    for lib in (torch, tgrad):
        times, losses, _ = tutorial(lib, *run)
        results[lib] = times
        print(f"{lib.__name__}: train loss {losses['train']:.3f}, val loss {losses['val']:.3f}")
    phases = list(results[torch]) + ["total"]
    for lib in results:
        results[lib]["total"] = sum(results[lib].values())
    rows = [(phase, f"{results[tgrad][phase]:.2f}", f"{results[torch][phase]:.2f}",
             f"{results[tgrad][phase] / results[torch][phase]:.1f}x") for phase in phases]
    print(table(rows, ("phase (CPU time)", "tgrad s", "PyTorch s", "ratio")))


if __name__ == "__main__":
    main()
