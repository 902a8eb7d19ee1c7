"""Three interleaved spirals, told apart by a 2-64-64-3 ReLU MLP trained with softmax cross-entropy
and Adam (full batch).

    python train_examples/spirals.py            # 100 steps on the CPU
    python train_examples/spirals.py --device cuda

Class j's points lie on the arm  r = t,  angle = 4 (j + t) + noise,  t in [0, 1]  (CS231n's
spirals), a classic set no linear model separates. ``F.cross_entropy`` is one fused launch
(log-softmax and NLL together) forward and one backward.
"""
from __future__ import annotations

import numpy as np

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.nn import functional as F

from common import Stopwatch, parse_args, plot_regions, progress, report, save_outputs, setup

CLASSES, PER_CLASS = 3, 100


def make_spirals(rng, per_class=PER_CLASS, classes=CLASSES, noise=0.2):
    """(X float32 (n, 2), y int64 (n,)) with n = per_class * classes."""
    t = np.tile(np.linspace(0.0, 1.0, per_class), classes)
    y = np.repeat(np.arange(classes), per_class)
    angle = 4.0 * (y + t) + noise * rng.standard_normal(t.shape)
    X = np.stack([t * np.sin(angle), t * np.cos(angle)], axis=1)
    return X.astype(np.float32), y.astype(np.int64)


class MLP(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(2, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, CLASSES)

    def forward(self, x):
        x = F.linear_act(x, self.l1.weight, self.l1.bias, "relu")  # ReLU in the matmul's epilogue
        x = F.linear_act(x, self.l2.weight, self.l2.bias, "relu")
        return self.l3(x)


def main(argv=None):
    args = parse_args(argv, "three spirals, MLP 2-64-64-3, cross-entropy, Adam", steps=100)
    rng = setup(args)
    steps = args.steps or (40 if args.quick else 100)
    X_np, y_np = make_spirals(rng)
    X = tgrad.tensor(X_np, device=args.device)
    y = tgrad.tensor(y_np, device=args.device)

    model = MLP().to(args.device)
    opt = tgrad.optim.Adam(model.parameters(), lr=0.02)
    print(f"spirals: {len(y_np)} points in {CLASSES} classes, MLP 2-64-64-3, {steps} Adam steps on {args.device}")
    watch = Stopwatch(args.device)
    bar = progress(args, steps, "spirals")
    for _ in bar:
        with watch:
            logits = model(X)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_value = loss.item()
            acc = (logits.argmax(1) == y).sum().item() / len(y_np)
        bar.set_postfix(loss=f"{loss_value:.4f}", acc=f"{acc:.1%}")
    bar.close()

    with tgrad.no_grad():
        logits = model(X)
        final_loss = F.cross_entropy(logits, y).item()
        final_acc = (logits.argmax(1) == y).sum().item() / len(y_np)

    def predict(points):
        with tgrad.no_grad():
            return model(tgrad.tensor(points, device=args.device)).argmax(1).cpu().numpy()

    fig = plot_regions(predict, X_np, y_np, f"tgrad spirals: training accuracy {final_acc:.1%}")
    png, ckpt = save_outputs(args, "spirals", fig, {"model": model.state_dict(), "optimizer": opt.state_dict()})
    report(watch, [f"final: loss {final_loss:.4f}, training accuracy {final_acc:.1%}"], png, ckpt)
    return {"accuracy": final_acc, "loss": final_loss, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
