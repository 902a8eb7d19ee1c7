"""Linear regression with nn.Linear, MSELoss and SGD; data and initial weights from NumPy."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)
x_np = rng.uniform(-1, 1, size=(64, 3)).astype(np.float32)
true_w = np.array([[2.0, -3.0, 0.5]], dtype=np.float32)
y_np = x_np @ true_w.T + 1.5 + 0.01 * rng.standard_normal((64, 1)).astype(np.float32)
x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

model = nn.Linear(3, 1)
with torch.no_grad():
    model.weight.copy_(torch.tensor([[0.1, 0.2, -0.1]]))
    model.bias.fill_(0.0)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
print(model)
print([(n, p.shape) for n, p in model.named_parameters()])

for epoch in range(60):
    pred = model(x)
    loss = criterion(pred, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 20 == 0:
        print("~", f"loss{epoch}", f"{loss.item():.6f}", "atol=1e-4")
print("~ w0", f"{model.weight[0, 0].item():.4f}", "atol=1e-3")
print("~ bias", f"{model.bias.item():.4f}", "atol=1e-3")
print("fit:", bool(loss.item() < 0.01))
print(loss.grad_fn.__class__.__name__, pred.shape, model.weight.grad.shape)
