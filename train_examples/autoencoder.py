"""A convolutional autoencoder on scikit-learn's bundled 8x8 digits (no download): strided Conv2d
layers squeeze each 64-pixel image into a 32-number code, ConvTranspose2d layers paint it back,
trained with Adam (cosine-annealed) on the pixels' mean squared error, scored on a held-out quarter.

    python train_examples/autoencoder.py                 # 20 epochs
    python train_examples/autoencoder.py --quick         # 40 steps (what the tests run)
    python train_examples/autoencoder.py --device cuda

The network is (channels x height x width)

    encoder  1x8x8  -conv 3x3, stride 2, pad 1->  16x4x4  -ReLU, conv 3x3, stride 2, pad 1->  8x2x2
             -ReLU (the code: 32 numbers)
    decoder  8x2x2  -conv^T 3x3, stride 2, pad 1, output_padding 1->  16x4x4  -ReLU,
             conv^T 3x3, stride 2, pad 1, output_padding 1->  1x8x8  -sigmoid

The plot shows test digits above their reconstructions; the report compares the test error with
the error of always answering the mean training image.
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

EPOCHS, BATCH, LR, QUICK_STEPS, CODE_CHANNELS = 20, 32, 2e-2, 40, 8
CODE = CODE_CHANNELS * 2 * 2


class AutoEncoder(nn.Module):
    def __init__(self, code_channels=CODE_CHANNELS):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, code_channels, 3, stride=2, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(code_channels, 16, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


def evaluate(model, X):
    """Mean squared error over X and the reconstructions, in eval mode."""
    model.eval()
    with tgrad.no_grad():
        recon = model(X)
        mse = F.mse_loss(recon, X).item()
    model.train()
    return mse, recon.cpu().numpy()


def plot(images, recon, mse, baseline):
    """Two rows of 10 test digits, each above its reconstruction."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 10, figsize=(10, 4.6))
    for i in range(20):
        row, col = 2 * (i // 10), i % 10
        for r, img in ((row, images[i]), (row + 1, recon[i])):
            axes[r, col].imshow(img.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
            axes[r, col].axis("off")
    for r, label in enumerate(("test", "rebuilt", "test", "rebuilt")):
        axes[r, 0].set_title(label, fontsize=8, loc="left")
    fig.suptitle(f"tgrad conv autoencoder ({CODE}-number code): test MSE {mse:.4f} "
                 f"(mean image {baseline:.4f})")
    return fig


def main(argv=None):
    def extra(p):
        p.add_argument("--steps", type=int, default=None, help="stop after this many steps")

    args = parse_args(argv, "8x8 digits, convolutional autoencoder, Adam", epochs=str(EPOCHS), extra=extra)
    rng = setup(args)
    max_steps = args.steps or (QUICK_STEPS if args.quick else None)

    digits = load_digits()
    X_np = (digits.images / 16.0).astype(np.float32)[:, None]  # (n, 1, 8, 8) in [0, 1]
    X_tr, X_te = train_test_split(X_np, test_size=0.25, stratify=digits.target,
                                  random_state=int(rng.integers(1 << 31)))
    baseline = float(((X_te - X_tr.mean(0)) ** 2).mean())
    to = dict(device=args.device)
    loader = DataLoader(TensorDataset(tgrad.tensor(X_tr, **to)), batch_size=BATCH, shuffle=True, drop_last=True)
    X_test = tgrad.tensor(X_te, **to)

    model = AutoEncoder().to(args.device)
    opt = tgrad.optim.Adam(model.parameters(), lr=LR)
    epochs = args.epochs or EPOCHS
    total = min(epochs * len(loader), max_steps or epochs * len(loader))
    epochs = -(-total // len(loader))
    sched = tgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"autoencoder: {len(X_tr)} training and {len(X_te)} test images, {n_params} parameters, {total} steps "
          f"({epochs} epochs of {len(loader)} batches of {BATCH}) on {args.device}")
    watch = Stopwatch(args.device)
    bar = progress(args, total, "autoencoder")
    loss_value = float("nan")
    for epoch in range(epochs):
        for (xb,) in loader:
            if watch.steps == total:
                break
            with watch:
                loss = F.mse_loss(model(xb), xb)
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                loss_value = loss.item()
            bar.update()
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss_value:.4f}")
    bar.close()

    mse, recon = evaluate(model, X_test)
    fig = plot(X_te, recon, mse, baseline)
    png, ckpt = save_outputs(args, "autoencoder", fig,
                             {"model": model.state_dict(), "optimizer": opt.state_dict(), "epochs": epochs})
    report(watch, [f"final: test MSE {mse:.4f} ({mse / baseline:.0%} of the mean image's {baseline:.4f}; "
                   f"last training batch {loss_value:.4f})"], png, ckpt)
    return {"mse": mse, "baseline_mse": baseline, "train_loss": loss_value, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt, "model": model}


if __name__ == "__main__":
    main()
