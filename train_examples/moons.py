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

from common import Stopwatch, parse_args, plot_regions, progress, report, save_outputs, setup

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


def flatten_parameters(model):
    """Move all parameters into one contiguous vector, each parameter becoming a view of it (the
    optimizer updates them in place, so the vector stays current): the L2 penalty's value is then
    one dot product instead of a square and a sum per parameter."""
    params = list(model.parameters())
    with tgrad.no_grad():
        flat = tgrad.cat([p.reshape(-1) for p in params])
    offset = 0
    for p in params:
        p.data = flat[offset:offset + p.numel()].view(p.shape)
        offset += p.numel()
    return flat


def main(argv=None):
    args = parse_args(argv, "two moons, MLP 2-16-16-1, SVM loss, SGD", steps=100)
    setup(args)
    steps = args.steps or (30 if args.quick else 100)
    X_np, y_np = make_moons(n_samples=100, noise=0.1, random_state=args.seed)
    y_np = y_np * 2 - 1
    X = tgrad.tensor(X_np, dtype=tgrad.float32, device=args.device)
    y = tgrad.tensor(y_np, dtype=tgrad.float32, device=args.device)

    model = MLP().to(args.device)
    flat = flatten_parameters(model)
    opt = tgrad.optim.SGD(model.parameters(), lr=1.0, weight_decay=2 * ALPHA)  # d/dp alpha p^2 = 2 alpha p
    n_params = sum(p.numel() for p in model.parameters())
    print(f"two moons: {len(y_np)} points, MLP 2-16-16-1 ({n_params} parameters), {steps} SGD steps "
          f"on {args.device}")
    watch = Stopwatch(args.device)
    bar = progress(args, steps, "moons")
    for k in bar:
        with watch:  # everything a step costs, the numbers for the bar included
            for group in opt.param_groups:
                group["lr"] = 1.0 - 0.9 * k / steps
            penalty = ALPHA * flat.dot(flat).item()  # of the weights this step's hinge term sees
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
        margins = y * model(X)
        final_acc = (margins > 0).sum().item() / len(y_np)
        final_loss = F.relu(1 - margins).mean().item() + ALPHA * flat.dot(flat).item()

    def predict(points):
        with tgrad.no_grad():
            return (model(tgrad.tensor(points, device=args.device)) > 0).cpu().numpy()

    fig = plot_regions(predict, X_np, y_np, f"tgrad two moons: training accuracy {final_acc:.0%}")
    png, ckpt = save_outputs(args, "moons", fig, model.state_dict())
    report(watch, [f"final: loss {final_loss:.4f}, training accuracy {final_acc:.0%}"], png, ckpt)
    return {"accuracy": final_acc, "loss": final_loss, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt, "model": model}


if __name__ == "__main__":
    main()
