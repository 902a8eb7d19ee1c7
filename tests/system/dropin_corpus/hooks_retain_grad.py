"""Tensor hooks, retain_grad on intermediates, and module forward/backward hooks."""
import torch
import torch.nn as nn

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = x * 2
y.retain_grad()
seen = []
h = y.register_hook(lambda g: seen.append(g.clone()))
x.register_hook(lambda g: g * 10)
z = (y ** 2).sum()
z.backward()
print(y.grad, x.grad, seen[0], y.retains_grad, x.is_leaf, y.is_leaf)
h.remove()

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
acts = {}


def save(name):
    def hook(module, inputs, output):
        acts[name] = output.detach()
    return hook


handles = [m.register_forward_hook(save(str(i))) for i, m in enumerate(net)]
out = net(torch.ones(5, 3))
print(sorted(acts), [tuple(a.shape) for _, a in sorted(acts.items())])
print("relu output non-negative:", bool((acts["1"] >= 0).all()))
for hd in handles:
    hd.remove()
acts.clear()
net(torch.ones(1, 3))
print(acts)

grads = []
hh = net[2].weight.register_hook(lambda g: grads.append(tuple(g.shape)))
net(torch.ones(2, 3)).sum().backward()
print(grads)
