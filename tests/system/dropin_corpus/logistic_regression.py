"""Binary classification of two Gaussian blobs: logistic regression with BCEWithLogitsLoss."""
import numpy as np
import torch
from torch import nn, optim

rng = np.random.default_rng(2)
n = 60
x0 = rng.normal([-1.0, -1.0], 0.7, size=(n, 2))
x1 = rng.normal([1.0, 1.2], 0.7, size=(n, 2))
X = torch.tensor(np.vstack([x0, x1]), dtype=torch.float32)
y = torch.cat([torch.zeros(n), torch.ones(n)]).unsqueeze(1)


class LogisticRegression(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 1)

    def forward(self, x):
        return self.linear(x)


model = LogisticRegression()
with torch.no_grad():
    model.linear.weight.zero_()
    model.linear.bias.zero_()
loss_fn = nn.BCEWithLogitsLoss()
opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
for step in range(40):
    opt.zero_grad()
    logits = model(X)
    loss = loss_fn(logits, y)
    loss.backward()
    opt.step()
with torch.no_grad():
    p = torch.sigmoid(model(X))
    acc = ((p > 0.5).float() == y).float().mean().item()
print(model)
print("~ loss", f"{loss.item():.5f}", "atol=1e-4")
print("~ acc", f"{acc:.4f}", "atol=1e-6")
print("probs", p.shape, p.dtype, "in [0,1]:", bool(((p >= 0) & (p <= 1)).all()))
print(loss.grad_fn.__class__.__name__)
