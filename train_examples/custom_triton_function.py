"""Your own Triton kernel as a differentiable tgrad op: a custom ``tgrad.autograd.Function``.

    python train_examples/custom_triton_function.py              # CPU (Triton's interpreter)
    python train_examples/custom_triton_function.py --device cuda

The op is Swish with a learnable slope, fused into one kernel each way:

    forward:   y = x s,                      s = sigmoid(beta x)
    backward:  dL/dx    = g (s + beta x s (1 - s))
               dL/dbeta = sum_i g_i x_i^2 s_i (1 - s_i)

Both kernels are plain ``@triton.jit`` functions launched with ``tgrad.kernels.runtime.launch.launch``, which
compiles them on a CUDA tensor's GPU and interprets them on the CPU, so the same code runs on both.
The backward kernel also reduces dL/dbeta inside each program; tgrad's own sum adds the partials.

The fused backward gives first derivatives. Under ``create_graph=True`` (a second derivative)
``backward`` runs with grad mode on and computes the same formulas with tgrad ops instead, which
record their own history; ``gradgradcheck`` checks that path.

A 1-32-1 MLP with a Swish hidden layer (its beta learned too) then fits y = sin(2x) by Adam.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import torch
import triton
import triton.language as tl

import tgrad
import tgrad.optim
from tgrad import nn
from tgrad.kernels.runtime.launch import launch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Stopwatch, parse_args, progress, report, save_outputs, setup  # noqa: E402


@triton.jit
def swish_fwd_kernel(x_ptr, beta_ptr, y_ptr, numel, COMPUTE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0).to(COMPUTE)
    beta = tl.load(beta_ptr).to(COMPUTE)
    s = 1.0 / (1.0 + tl.exp(-beta * x))
    tl.store(y_ptr + offs, (x * s).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def swish_bwd_kernel(x_ptr, beta_ptr, g_ptr, dx_ptr, dbeta_part_ptr, numel, COMPUTE: tl.constexpr,
                     BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    x = tl.load(x_ptr + offs, mask=mask, other=0).to(COMPUTE)
    g = tl.load(g_ptr + offs, mask=mask, other=0).to(COMPUTE)
    beta = tl.load(beta_ptr).to(COMPUTE)
    s = 1.0 / (1.0 + tl.exp(-beta * x))
    ds = s * (1.0 - s)
    tl.store(dx_ptr + offs, (g * (s + beta * x * ds)).to(dx_ptr.dtype.element_ty), mask=mask)
    part = tl.sum(tl.where(mask, g * x * x * ds, 0.0), axis=0)  # masked lanes add nothing
    tl.store(dbeta_part_ptr + pid, part)


def _block(numel, device):
    # The interpreter pays per program, not per element: one big block on the CPU.
    if device.type == "cpu":
        return min(triton.next_power_of_2(max(numel, 1)), 1 << 16)
    return 1024


def _compute(dtype):
    return tl.float64 if dtype == torch.float64 else tl.float32  # fp16 math runs in fp32


class Swish(tgrad.autograd.Function):
    """``Swish.apply(x, beta)``: x * sigmoid(beta * x), beta a one-element tensor."""

    @staticmethod
    def forward(ctx, x, beta):
        if beta.numel() != 1:
            raise ValueError(f"Swish: beta must have one element, got shape {tuple(beta.shape)}")
        if beta.dtype is not x.dtype or beta.device != x.device:
            raise TypeError(f"Swish: beta must match x's dtype and device ({x.dtype}, {x.device}), "
                            f"got {beta.dtype} on {beta.device}")
        x = x.contiguous()  # the kernels index flat memory
        xs, bs = x.torch(), beta.torch()
        y = torch.empty_like(xs)  # torch only allocates; the kernel computes
        numel = xs.numel()
        if numel:
            block = _block(numel, xs.device)
            launch(swish_fwd_kernel, (triton.cdiv(numel, block),), xs, bs, y, numel,
                   COMPUTE=_compute(xs.dtype), BLOCK=block)
        ctx.save_for_backward(x, beta)
        return tgrad.from_torch(y)

    @staticmethod
    def backward(ctx, g):
        x, beta = ctx.saved_tensors
        if tgrad.is_grad_enabled():  # create_graph: differentiable tgrad ops keep the history
            s = (beta * x).sigmoid()
            ds = s * (1 - s)
            return g * (s + beta * x * ds), (g * x * x * ds).sum().reshape(beta.shape)
        xs, bs, gs = x.torch(), beta.torch(), g.contiguous().torch()
        dx = torch.empty_like(xs)
        numel = xs.numel()
        block = _block(numel, xs.device)
        programs = triton.cdiv(numel, block)
        parts = torch.empty(max(programs, 1), dtype=torch.float64 if xs.dtype == torch.float64 else torch.float32,
                            device=xs.device)
        if numel:
            launch(swish_bwd_kernel, (programs,), xs, bs, gs, dx, parts, numel, COMPUTE=_compute(xs.dtype),
                   BLOCK=block)
        else:
            parts.fill_(0)  # storage fill: an empty input has a zero gradient for beta
        dbeta = None
        if ctx.needs_input_grad[1]:
            dbeta = tgrad.from_torch(parts).sum().to(beta.dtype).reshape(beta.shape)
        return tgrad.from_torch(dx), dbeta


def swish(x, beta):
    return Swish.apply(x, beta)


class SwishMLP(nn.Module):
    """1 -> hidden -> 1 with a learnable-slope Swish after the hidden layer."""

    def __init__(self, hidden=32):
        super().__init__()
        self.l1, self.l2 = nn.Linear(1, hidden), nn.Linear(hidden, 1)
        self.beta = nn.Parameter(tgrad.ones(()))

    def forward(self, x):
        return self.l2(swish(self.l1(x), self.beta))


def plot(X, Y, pred, beta):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(X, Y, "k.", ms=3, label="data: sin(2x)")
    ax.plot(X, pred, "r-", label=f"Swish MLP (beta = {beta:.2f})")
    ax.legend()
    ax.set_title("a custom Triton kernel inside a tgrad.autograd.Function")
    return fig


def main(argv=None):
    args = parse_args(argv, "Swish (own Triton kernels) MLP fits sin(2x)", steps=300)
    setup(args)
    steps = args.steps or (40 if args.quick else 300)
    X_np = np.linspace(-2.0, 2.0, 128, dtype=np.float32).reshape(-1, 1)
    Y_np = np.sin(2.0 * X_np)
    X = tgrad.tensor(X_np, device=args.device)
    Y = tgrad.tensor(Y_np, device=args.device)
    model = SwishMLP().to(args.device)
    opt = tgrad.optim.Adam(model.parameters(), lr=0.02)
    watch = Stopwatch(args.device)
    bar = progress(args, steps, "swish")
    first = None
    for _ in bar:
        with watch:
            loss = ((model(X) - Y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            value = loss.item()
        first = value if first is None else first
        bar.set_postfix(loss=f"{value:.4f}")
    bar.close()
    with tgrad.no_grad():
        pred = model(X)
        final = ((pred - Y) ** 2).mean().item()
    beta = model.beta.item()
    fig = plot(X_np, Y_np, pred.cpu().numpy(), beta)
    png, ckpt = save_outputs(args, "custom_triton_function", fig, model.state_dict())
    report(watch, [f"loss {first:.4f} -> {final:.4f}, learned beta {beta:.3f}"], png, ckpt)
    return {"first_loss": first, "loss": final, "beta": beta, "ms_per_step": watch.ms_per_step,
            "launches_per_step": watch.launches_per_step, "png": png, "checkpoint": ckpt}


if __name__ == "__main__":
    main()
