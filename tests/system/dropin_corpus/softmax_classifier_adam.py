"""Three-class spiral data, a small MLP, CrossEntropyLoss and Adam (CS231n's classic toy)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

N, K = 30, 3
rng = np.random.default_rng(3)
X = np.zeros((N * K, 2), dtype=np.float32)
Y = np.zeros(N * K, dtype=np.int64)
for j in range(K):
    ix = range(N * j, N * (j + 1))
    r = np.linspace(0.0, 1, N)
    t = np.linspace(j * 4, (j + 1) * 4, N) + rng.standard_normal(N) * 0.2
    X[ix] = np.c_[r * np.sin(t), r * np.cos(t)]
    Y[ix] = j
X, Y = torch.from_numpy(X), torch.from_numpy(Y)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, K))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for it in range(60):
    scores = model(X)
    loss = F.cross_entropy(scores, Y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
acc = (model(X).argmax(dim=1) == Y).float().mean().item()
print(model)
print("trained:", acc > 0.8, loss.item() < 0.6)
print("~ acc", f"{acc:.3f}", "atol=0.2")
print(scores.shape, scores.dtype, loss.grad_fn.__class__.__name__)
print(sum(p.numel() for p in model.parameters()))
