"""The convolution / resampling layers, tgrad against PyTorch eager: each layer's forward+backward
on one input, and the digits autoencoder's whole training step (train_examples/autoencoder.py's
network, MSE, Adam), with tgrad's launches per step.

    python benchmarks/conv_resample.py [--device cpu|cuda] [--repeats N] [--batch B]

Defaults: batch 32 of 8x8 images with 16 channels on the CPU (the interpreter), 256 of 32x32 on
CUDA. Both libraries run the same source."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, table, time_ms  # noqa: E402  (first: it pins BLAS threads)

import torch  # noqa: E402
import tgrad  # noqa: E402
import tgrad.nn  # noqa: E402
import tgrad.optim  # noqa: E402

LAYERS = {  # name: (module builder given the library's nn, input channels)
    "ConvTranspose2d 16->16 k3 s2": lambda nn: nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, output_padding=1),
    "Conv1d 16->16 k5 same": lambda nn: nn.Conv1d(16, 16, 5, padding="same"),
    "Conv2d 16->16 k3 reflect": lambda nn: nn.Conv2d(16, 16, 3, padding=1, padding_mode="reflect"),
    "Upsample x2 bilinear": lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
    "AdaptiveAvgPool2d 3x3": lambda nn: nn.AdaptiveAvgPool2d(3),
    "PixelShuffle 2": lambda nn: nn.PixelShuffle(2),
    "Unfold k3 p1": lambda nn: nn.Unfold(3, padding=1),
}


def _layer_step(lib, name, batch, hw, device):
    lib.manual_seed(0)
    layer = LAYERS[name](lib.nn).to(device)
    shape = (batch, 16, hw) if "1d" in name else (batch, 16, hw, hw)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1)).to(device)
    x = (tgrad.from_torch(x) if lib is tgrad else x).requires_grad_()

    def step():
        y = layer(x)
        y.backward(y.detach())  # d(|y|^2 / 2)
    return step


def _autoencoder_step(lib, batch, hw, device):
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.ConvTranspose2d(8, 16, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
        nn.ConvTranspose2d(16, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid()).to(device)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(batch, 1, hw, hw, generator=torch.Generator().manual_seed(1)).to(device)
    x = tgrad.from_torch(x) if lib is tgrad else x

    def step():
        loss = lib.nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def _row(name, shape, make, device, repeats):
    tstep, pstep = make(tgrad), make(torch)
    tstep()
    with tgrad.count_launches() as counts:
        tstep()
    t, pt = time_ms(tstep, device, repeats), time_ms(pstep, device, repeats)
    return (name, shape, f"{t:.2f}", f"{pt:.3f}", f"{t / pt:.0f}x", str(sum(counts.values())))


HEADER = ("fwd+bwd", "input", "tgrad ms", "PyTorch ms", "ratio", "tgrad launches")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU; default 1, as run_all)")
    args = p.parse_args(argv)
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    batch, hw = (args.batch or 256, 32) if args.device == "cuda" else (args.batch or 32, 8)
    print(f"# convolution / resampling layers, forward + backward, on {args.device}: {machine()}")
    rows = []
    for name in LAYERS:
        shape = f"{batch}x16x{hw}" + ("" if "1d" in name else f"x{hw}")
        rows.append(_row(name, shape, lambda lib: _layer_step(lib, name, batch, hw, args.device), args.device,
                         args.repeats))
    rows.append(_row("autoencoder step (Adam)", f"{batch}x1x{hw}x{hw}",
                     lambda lib: _autoencoder_step(lib, batch, hw, args.device), args.device, args.repeats))
    print(table(rows, HEADER))
    return rows


if __name__ == "__main__":
    main()
