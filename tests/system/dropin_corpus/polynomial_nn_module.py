"""'Learning PyTorch with examples', nn version: x^1..x^3 features by broadcasting pow, a Linear
layer and Flatten(0, 1), trained with RMSprop; then the learned polynomial."""
import math

import torch

x = torch.linspace(-math.pi, math.pi, 100)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
print(xx.shape, xx.dtype)
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.copy_(torch.tensor([[0.1, 0.0, -0.05]]))
    model[0].bias.zero_()
loss_fn = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
for t in range(60):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
linear_layer = model[0]
print(y_pred.shape, y_pred.grad_fn.__class__.__name__)
print("~ loss", f"{loss.item():.3f}", "atol=0.01")
print("~ b", f"{linear_layer.bias.item():.5f}", "atol=1e-4")
print("~ c3", f"{linear_layer.weight[:, 2].item():.5f}", "atol=1e-4")
print(len(list(model.parameters())), "parameter tensors")
