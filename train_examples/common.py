"""What every training example shares: its command line, a progress bar, the timing and launch
summary, and where the plot and the checkpoint go.

Each example is ``main(argv=None) -> dict`` (its metrics), so the tests run it in-process:

    python train_examples/moons.py [--device cpu|cuda] [--steps N | --epochs N] [--seed S]
                                   [--out DIR] [--quick] [--no-progress]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import matplotlib

matplotlib.use("Agg")  # files only: no display needed, none opened
import numpy as np  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import tgrad  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")

__all__ = ["parse_args", "setup", "progress", "Stopwatch", "plot_regions", "save_outputs", "report"]


def parse_args(argv, description, *, steps=None, epochs=None, extra=None):
    """The shared options, plus ``--steps`` or ``--epochs`` (default None: the example's own full
    or ``--quick`` count) and whatever ``extra(parser)`` adds."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cpu runs the Triton kernels through the interpreter, cuda compiles them")
    if steps is not None:
        p.add_argument("--steps", type=int, default=None, help=f"training steps (default {steps})")
    if epochs is not None:
        p.add_argument("--epochs", type=int, default=None, help=f"training epochs (default {epochs})")
    p.add_argument("--seed", type=int, default=0, help="seeds the data, the initial weights and the batches")
    p.add_argument("--out", default=OUT, help=f"folder for the plot and the checkpoint (default {OUT})")
    p.add_argument("--quick", action="store_true", help="a short configuration (what the tests run)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    if extra is not None:
        extra(p)
    return p.parse_args(argv)


def setup(args):
    """Seed tgrad and numpy; check the device; make the output folder."""
    if args.device == "cuda" and not tgrad.cuda.is_available():
        sys.exit("--device cuda: no CUDA device is available (run on the CPU with --device cpu)")
    tgrad.manual_seed(args.seed)
    os.makedirs(args.out, exist_ok=True)
    return np.random.default_rng(args.seed)


def progress(args, total, desc):
    """A tqdm bar over ``range(total)``; ``bar.set_postfix`` shows the running loss and accuracy."""
    return tqdm(range(total), desc=desc, disable=not args.progress, dynamic_ncols=True, leave=True,
                file=sys.stdout)


class Stopwatch:
    """Wall time and kernel launches of the training steps it wraps (``with watch: ...``), kept
    apart from evaluation and plotting so ms/step and launches/step describe a training step."""

    def __init__(self, device):
        self.device, self.seconds, self.steps = device, 0.0, 0
        self.first_step = None  # seconds: on the CPU, the launches seen first (interpreted, or from the trace cache)
        self.launches: dict = {}
        self._counter = self._t0 = None

    def __enter__(self):
        self._counter = tgrad.count_launches()
        counts = self._counter.__enter__()
        self._counts, self._t0 = counts, time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            tgrad.cuda.synchronize()
        elapsed = time.perf_counter() - self._t0
        self.seconds += elapsed
        if self.first_step is None:
            self.first_step = elapsed
        self._counter.__exit__(*exc)
        for k, v in self._counts.items():
            self.launches[k] = self.launches.get(k, 0) + v
        self.steps += 1
        return False

    @property
    def ms_per_step(self):
        return 1e3 * self.seconds / max(self.steps, 1)

    @property
    def launches_per_step(self):
        return sum(self.launches.values()) / max(self.steps, 1)


def plot_regions(predict, X, y, title):
    """A figure of the classes ``predict`` (an (n, 2) numpy array -> n labels) gives each point of
    the plane around the 2-D points ``X``, with the points coloured by their labels ``y``."""
    import matplotlib.pyplot as plt

    pad, h = 0.5, 0.02 * float(np.ptp(X))
    xx, yy = np.meshgrid(np.arange(X[:, 0].min() - pad, X[:, 0].max() + pad, h),
                         np.arange(X[:, 1].min() - pad, X[:, 1].max() + pad, h))
    z = predict(np.c_[xx.ravel(), yy.ravel()].astype(np.float32)).reshape(xx.shape).astype(np.int64)
    levels = np.arange(max(z.max(), y.max()) + 2) - 0.5  # one flat colour per class
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.contourf(xx, yy, z, levels=levels, cmap=plt.cm.Spectral, alpha=0.8)
    ax.scatter(X[:, 0], X[:, 1], c=y, s=20, cmap=plt.cm.Spectral, edgecolors="k", linewidths=0.5)
    ax.set_title(title)
    return fig


def save_outputs(args, name, fig, checkpoint):
    """Write ``<out>/<name>.png`` and ``<out>/<name>.safetensors``; return their paths."""
    import matplotlib.pyplot as plt

    png = os.path.join(args.out, f"{name}.png")
    ckpt = os.path.join(args.out, f"{name}.safetensors")
    fig.savefig(png, dpi=110, bbox_inches="tight")
    plt.close(fig)
    tgrad.save(checkpoint, ckpt)
    return png, ckpt


def report(watch, lines, png, ckpt):
    """The closing summary: the example's own lines, then time, ms/step, launches/step, files."""
    for line in lines:
        print(line)
    print(f"{watch.steps} steps in {watch.seconds:.1f} s: {watch.ms_per_step:.1f} ms/step, "
          f"{watch.launches_per_step:.0f} kernel launches/step ({watch.device}); the first step "
          f"{1e3 * (watch.first_step or 0.0):.0f} ms")
    print(f"saved {png} and {ckpt}")
