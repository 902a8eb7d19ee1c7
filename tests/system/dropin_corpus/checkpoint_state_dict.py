"""Saving and loading a model's and an optimizer's state_dict, and resuming training."""
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(10)
X = torch.tensor(rng.standard_normal((32, 5)), dtype=torch.float32)
Y = torch.tensor(rng.standard_normal((32, 1)), dtype=torch.float32)


def make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))


model = make()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for _ in range(5):
    opt.zero_grad()
    nn.functional.mse_loss(model(X), Y).backward()
    opt.step()
sd = model.state_dict()
print(list(sd.keys()))
print([tuple(v.shape) for v in sd.values()])
path = os.path.join(tempfile.mkdtemp(), "model.pt")
torch.save(model.state_dict(), path)
loaded = torch.load(path)
print(sorted(loaded) == sorted(sd), all(bool((loaded[k] == sd[k]).all()) for k in sd))

model2 = make()
result = model2.load_state_dict(torch.load(path))
print(result)
with torch.no_grad():
    print("same outputs:", bool((model2(X) == model(X)).all()))

opt_path = os.path.join(os.path.dirname(path), "opt.pt")
torch.save(opt.state_dict(), opt_path)
opt2 = torch.optim.Adam(model2.parameters(), lr=1e-2)
opt2.load_state_dict(torch.load(opt_path))
for m, o in ((model, opt), (model2, opt2)):
    o.zero_grad()
    nn.functional.mse_loss(m(X), Y).backward()
    o.step()
with torch.no_grad():
    print("resumed identically:", bool(((model2(X) - model(X)).abs().max() < 1e-6)))

try:
    model2.load_state_dict({"0.weight": torch.zeros(8, 5)})
except RuntimeError as e:
    print("strict load fails:", "Missing key" in str(e))
print(model2.load_state_dict({"0.weight": torch.zeros(8, 5)}, strict=False).missing_keys)
