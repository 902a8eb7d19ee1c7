"""Mini-batch training with TensorDataset and a shuffling DataLoader (two-moons-like data)."""
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(4)
n = 96
t = rng.uniform(0, np.pi, n)
upper = np.c_[np.cos(t), np.sin(t)]
lower = np.c_[1 - np.cos(t), 0.5 - np.sin(t)]
X = torch.tensor(np.vstack([upper, lower]) + rng.normal(0, 0.05, (2 * n, 2)), dtype=torch.float32)
y = torch.cat([torch.zeros(n, dtype=torch.long), torch.ones(n, dtype=torch.long)])

ds = TensorDataset(X, y)
print(len(ds), ds[0][0].shape, ds[0][1].dtype)
torch.manual_seed(0)
loader = DataLoader(ds, batch_size=32, shuffle=True)
print(len(loader))
model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.03)
loss_fn = nn.CrossEntropyLoss()
seen = []
for epoch in range(4):
    total = 0.0
    for xb, yb in loader:
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    seen.append(total / len(ds))
print("batch", xb.shape, yb.shape, yb.dtype)
with torch.no_grad():
    acc = (model(X).argmax(1) == y).float().mean().item()
print("learned:", acc > 0.85, seen[-1] < seen[0])
print("~ acc", f"{acc:.3f}", "atol=0.15")
