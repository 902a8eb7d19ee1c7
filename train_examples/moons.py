"""The classic micrograd demo on tgrad: a 2-16-16-1 ReLU MLP separates scikit-learn's two moons.

    python train_examples/moons.py              # 100 full-batch SGD steps on the CPU, a few seconds
    python train_examples/moons.py --device cuda

Labels are y = +-1 and the model's score s is trained with the SVM max-margin loss plus L2:

    loss = mean_i relu(1 - y_i s_i) + alpha sum_p p^2,   alpha = 1e-4
    lr_k = 1.0 - 0.9 k / 100                              (plain SGD, step k of 100)

It reaches 100% training accuracy and plots the decision boundary. On the CPU every kernel
launch runs through Triton's interpreter, so the step is written to launch few kernels: each
layer's ReLU is fused into its matmul (``F.linear_act``), and the L2 term's gradient 2 alpha p is
SGD's ``weight_decay`` (inside the one fused optimizer launch) instead of a graph of squares.
"""
from __future__ import annotations

import numpy as np
from sklearn.datasets import make_moons

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.nn import functional as F

from common import Stopwatch, parse_args, progress, report, save_outputs, setup

ALPHA = 1e-4


class MLP(nn.Module):
    """2 -> 16 -> 16 -> 1, ReLU after each hidden layer (fused into the layer's matmul)."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(2, 16), nn.Linear(16, 16), nn.Linear(16, 1)

    def forward(self, x):
        x = F.linear_act(x, self.l1.weight, self.l1.bias, "relu")
        x = F.linear_act(x, self.l2.weight, self.l2.bias, "relu")
        return self.l3(x).view(-1)


def l2_penalty(model):
    """alpha sum_p p^2 as a number: all parameters in one vector (a storage copy), one dot."""
    with tgrad.no_grad():
        flat = tgrad.cat([p.reshape(-1) for p in model.parameters()])
        return ALPHA * flat.dot(flat).item()


def plot(model, X, y, device, acc):
    import matplotlib.pyplot as plt

    h = 0.05
    xs = np.arange(X[:, 0].min() - 0.5, X[:, 0].max() + 0.5, h)
    ys = np.arange(X[:, 1].min() - 0.5, X[:, 1].max() + 0.5, h)
    xx, yy = np.meshgrid(xs, ys)
    grid = tgrad.tensor(np.c_[xx.ravel(), yy.ravel()], dtype=tgrad.float32, device=device)
    with tgrad.no_grad():
        z = (model(grid) > 0).cpu().numpy().reshape(xx.shape)
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.contourf(xx, yy, z, cmap=plt.cm.Spectral, alpha=0.8)
    ax.scatter(X[:, 0], X[:, 1], c=y, s=30, cmap=plt.cm.Spectral, edgecolors="k")
    ax.set_title(f"tgrad two moons: decision boundary, train acc {acc:.0%}")
    return fig


def main(argv=None):
    args = parse_args(argv, "two moons, MLP 2-16-16-1, SVM loss, SGD", steps=100)
    setup(args)
    steps = args.steps or (30 if args.quick else 100)
    X_np, y_np = make_moons(n_samples=100, noise=0.1, random_state=args.seed)
    y_np = y_np * 2 - 1
    X = tgrad.tensor(X_np, dtype=tgrad.float32, device=args.device)
    y = tgrad.tensor(y_np, dtype=tgrad.float32, device=args.device)

    model = MLP().to(args.device)
    opt = tgrad.optim.SGD(model.parameters(), lr=1.0, weight_decay=2 * ALPHA)  # d/dp alpha p^2 = 2 alpha p
    watch = Stopwatch(args.device)
    bar = progress(args, steps, "moons")
    for k in bar:
        with watch:  # everything a step costs, the numbers for the bar included
            for group in opt.param_groups:
                group["lr"] = 1.0 - 0.9 * k / steps
            penalty = l2_penalty(model)  # of the weights this step's hinge term sees
            margins = y * model(X)
            data_loss = F.relu(1 - margins).mean()
            opt.zero_grad()
            data_loss.backward()
            opt.step()
            loss = data_loss.item() + penalty
            acc = (margins > 0).sum().item() / len(y_np)
        bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.0%}")
    bar.close()

    with tgrad.no_grad():
        final_acc = ((y * model(X)) > 0).sum().item() / len(y_np)
        final_loss = F.relu(1 - y * model(X)).mean().item() + l2_penalty(model)
    fig = plot(model, X_np, y_np, args.device, final_acc)
    png, ckpt = save_outputs(args, "moons", fig, model.state_dict())
    report(watch, [f"final: loss {final_loss:.4f}, training accuracy {final_acc:.0%}"], png, ckpt)
    return {"accuracy": final_acc, "loss": final_loss, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
