"""train() and eval(): BatchNorm's batch statistics and running averages, Dropout's scaling."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(9)
x = torch.tensor(rng.normal(2.0, 3.0, (16, 4)), dtype=torch.float32)
bn = nn.BatchNorm1d(4)
print(bn, bn.training, bn.running_mean, bn.running_var, bn.num_batches_tracked)
y = bn(x)
print("~ batch_mean", f"{y.mean().item():.5f}", "atol=1e-5")
print("~ batch_std", f"{y.std(0, unbiased=False).mean().item():.4f}", "atol=1e-4")
print("~ running_mean0", f"{bn.running_mean[0].item():.5f}", "atol=1e-5")
print("~ running_var0", f"{bn.running_var[0].item():.5f}", "atol=1e-4")
print(bn.num_batches_tracked)
bn.eval()
z = bn(x)
print(bn.training, z.shape)
print("~ eval_out00", f"{z[0, 0].item():.5f}", "atol=1e-4")

drop = nn.Dropout(p=0.5)
ones = torch.ones(1000)
torch.manual_seed(0)
d = drop(ones)
kept = (d != 0).float().mean().item()
print("scaled by 2:", bool(((d == 0) | (d == 2)).all()), "~half kept:", 0.4 < kept < 0.6)
drop.eval()
print("eval is identity:", bool((drop(ones) == ones).all()))

model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 1))
model.train()
print([m.training for m in model])
model.eval()
print([m.training for m in model])
with torch.no_grad():
    a, b = model(x), model(x)
print("eval deterministic:", bool((a == b).all()), a.requires_grad)

bn2 = nn.BatchNorm2d(3)
img = torch.tensor(rng.normal(0, 1, (2, 3, 5, 5)), dtype=torch.float32, requires_grad=True)
out = bn2(img)
out.sum().backward()
print(out.grad_fn.__class__.__name__, img.grad.shape, bn2.weight.grad.shape)
print("~ grad_sum", f"{img.grad.abs().sum().item():.5f}", "atol=1e-4")
