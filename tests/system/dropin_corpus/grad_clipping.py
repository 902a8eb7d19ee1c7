"""Gradient clipping in a training loop: clip_grad_norm_ (the returned total norm) and
clip_grad_value_."""
# needs: torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad_value_
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(12)
X = torch.tensor(rng.standard_normal((20, 4)) * 10, dtype=torch.float32)
Y = torch.tensor(rng.standard_normal((20, 1)) * 10, dtype=torch.float32)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(np.linspace(-0.5, 0.5, p.numel()).reshape(p.shape), dtype=torch.float32))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss = nn.functional.mse_loss(model(X), Y)
loss.backward()
total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
after = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
print("~ total_norm", f"{total.item():.4f}", "atol=1e-3")
print("clipped to 1:", abs(after.item() - 1.0) < 1e-4, total.shape)
opt.step()
opt.zero_grad()
nn.functional.mse_loss(model(X), Y).backward()
nn.utils.clip_grad_value_(model.parameters(), clip_value=0.1)
print("within 0.1:", all(bool((p.grad.abs() <= 0.1 + 1e-7).all()) for p in model.parameters()))
