"""Fit sin(x) with a cubic: gradients written by hand, then by autograd (the 'learning PyTorch
with examples' tutorial), both on the same numbers."""
import math

import torch

dtype = torch.float
x = torch.linspace(-math.pi, math.pi, 100, dtype=dtype)
y = torch.sin(x)

a, b, c, d = (torch.tensor(v, dtype=dtype) for v in (0.1, -0.2, 0.3, 0.05))
lr = 2e-6
for t in range(40):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum().item()
    grad_y_pred = 2.0 * (y_pred - y)
    grad_a = grad_y_pred.sum()
    grad_b = (grad_y_pred * x).sum()
    grad_c = (grad_y_pred * x ** 2).sum()
    grad_d = (grad_y_pred * x ** 3).sum()
    a -= lr * grad_a
    b -= lr * grad_b
    c -= lr * grad_c
    d -= lr * grad_d
print("~ manual_loss", f"{loss:.3f}", "atol=0.05")
print("~ manual_d", f"{d.item():.5f}", "atol=1e-4")

a2, b2, c2, d2 = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in (0.1, -0.2, 0.3, 0.05))
for t in range(40):
    y_pred = a2 + b2 * x + c2 * x ** 2 + d2 * x ** 3
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        for p in (a2, b2, c2, d2):
            p -= lr * p.grad
            p.grad = None
print("~ autograd_loss", f"{loss.item():.3f}", "atol=0.05")
print("same result:", all(abs(p.item() - q.item()) < 1e-4 for p, q in ((a, a2), (b, b2), (c, c2), (d, d2))))
print(y_pred.grad_fn.__class__.__name__, a2.grad)
