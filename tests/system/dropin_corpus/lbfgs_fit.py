"""Least-squares curve fitting with optim.LBFGS and its closure."""
# needs: torch.optim.LBFGS
import numpy as np
import torch

rng = np.random.default_rng(8)
x = torch.tensor(np.linspace(-2, 2, 40), dtype=torch.float64)
y = 1.5 * torch.exp(-0.7 * x) + 0.3 + torch.tensor(rng.normal(0, 0.01, 40))
params = torch.tensor([1.0, -0.1, 0.0], dtype=torch.float64, requires_grad=True)
opt = torch.optim.LBFGS([params], lr=1, max_iter=50, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    a, k, c = params
    loss = ((a * torch.exp(k * x) + c - y) ** 2).mean()
    loss.backward()
    return loss


for _ in range(3):
    loss = opt.step(closure)
print("~ a", f"{params[0].item():.4f}", "atol=1e-3")
print("~ k", f"{params[1].item():.4f}", "atol=1e-3")
print("~ c", f"{params[2].item():.4f}", "atol=1e-3")
print("fit:", closure().item() < 1e-3)
