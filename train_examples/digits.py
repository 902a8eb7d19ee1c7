"""Handwritten digits: scikit-learn's bundled 8x8 images (1797 of them, no download), classified by
an MLP or a small CNN trained with Adam on minibatches, scored on a held-out quarter.

    python train_examples/digits.py                  # MLP 64-128-64-10
    python train_examples/digits.py --model cnn      # Conv-BN-ReLU-MaxPool x2 -> Linear
    python train_examples/digits.py --device cuda

The CNN is (channels x height x width)

    1x8x8  -conv 3x3, pad 1->  16x8x8  -BN, ReLU, maxpool 2->  16x4x4
           -conv 3x3, pad 1->  32x4x4  -BN, ReLU, maxpool 2->  32x2x2  -flatten, linear->  10

with BatchNorm2d's batch statistics in training and its running statistics at evaluation
(``model.eval()``). Minibatches come from a shuffling ``DataLoader`` seeded by ``--seed``.
"""
from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.nn import functional as F
from tgrad.utils.data import DataLoader, TensorDataset

from common import Stopwatch, parse_args, progress, report, save_outputs, setup

# model -> (epochs, batch size, Adam's learning rate (cosine-annealed to 0), --quick's steps)
CONFIG = {"mlp": (10, 64, 1e-2, 40), "cnn": (3, 32, 5e-3, 20)}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 128), nn.Linear(128, 64), nn.Linear(64, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = F.linear_act(x, self.l1.weight, self.l1.bias, "relu")  # ReLU in the matmul's epilogue
        x = F.linear_act(x, self.l2.weight, self.l2.bias, "relu")
        return self.l3(x)


def CNN():  # noqa: N802 - a model constructor, named like a class
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def evaluate(model, X, y):
    """Accuracy and the predicted labels over (X, y), in eval mode."""
    model.eval()
    with tgrad.no_grad():
        pred = model(X).argmax(1)
        acc = (pred == y).sum().item() / len(y)
    model.train()
    return acc, pred.cpu().numpy()


def plot(images, labels, pred, acc, name):
    """The first 40 test digits with their predicted labels (mistakes in red)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 10, figsize=(10, 4.6))
    for ax, img, label, p in zip(axes.ravel(), images, labels, pred):
        ax.imshow(img.reshape(8, 8), cmap="gray_r")
        ax.set_title(str(p), color="black" if p == label else "red", fontsize=10)
        ax.axis("off")
    fig.suptitle(f"tgrad digits ({name}): test accuracy {acc:.1%}")
    return fig


def main(argv=None):
    def extra(p):
        p.add_argument("--model", choices=list(CONFIG), default="mlp")
        p.add_argument("--steps", type=int, default=None, help="stop after this many steps")

    args = parse_args(argv, "8x8 digits, MLP or CNN, Adam", epochs="mlp 10, cnn 3", extra=extra)
    rng = setup(args)
    epochs, batch, lr, quick_steps = CONFIG[args.model]
    epochs = args.epochs or epochs
    max_steps = args.steps or (quick_steps if args.quick else None)

    digits = load_digits()
    X_np = (digits.images / 16.0).astype(np.float32)[:, None]  # (n, 1, 8, 8) in [0, 1]
    X_tr, X_te, y_tr, y_te = train_test_split(X_np, digits.target, test_size=0.25, stratify=digits.target,
                                              random_state=int(rng.integers(1 << 31)))
    to = dict(device=args.device)
    train = TensorDataset(tgrad.tensor(X_tr, **to), tgrad.tensor(y_tr, **to))
    X_test, y_test = tgrad.tensor(X_te, **to), tgrad.tensor(y_te, **to)
    loader = DataLoader(train, batch_size=batch, shuffle=True, drop_last=True)

    model = (MLP() if args.model == "mlp" else CNN()).to(args.device)
    opt = tgrad.optim.Adam(model.parameters(), lr=lr)
    total = min(epochs * len(loader), max_steps or epochs * len(loader))
    epochs = -(-total // len(loader))
    sched = tgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"digits: {len(y_tr)} training and {len(y_te)} test images, {args.model.upper()} "
          f"({n_params} parameters), {total} steps ({epochs} epochs of {len(loader)} batches of {batch}) "
          f"on {args.device}")
    watch = Stopwatch(args.device)
    bar = progress(args, total, f"digits {args.model}")
    for epoch in range(epochs):
        seen = correct = 0
        for xb, yb in loader:
            if watch.steps == total:
                break
            with watch:
                logits = model(xb)
                loss = F.cross_entropy(logits, yb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                correct += (logits.argmax(1) == yb).sum().item()
                seen += len(yb)
                loss_value = loss.item()
            bar.update()
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss_value:.4f}", acc=f"{correct / seen:.1%}")
    bar.close()

    test_acc, pred = evaluate(model, X_test, y_test)
    train_acc = correct / max(seen, 1)
    fig = plot(X_te, y_te, pred, test_acc, args.model.upper())
    png, ckpt = save_outputs(args, f"digits_{args.model}", fig,
                             {"model": model.state_dict(), "optimizer": opt.state_dict(), "epochs": epochs})
    report(watch, [f"final: test accuracy {test_acc:.1%} (last epoch's training batches {train_acc:.1%})"],
           png, ckpt)
    return {"accuracy": test_acc, "train_accuracy": train_acc, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
