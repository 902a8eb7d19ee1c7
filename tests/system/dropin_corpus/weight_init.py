"""nn.init: Xavier and Kaiming initialisers, their statistics, calculate_gain, and a model
initialised through apply()."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
w = torch.empty(200, 300)
nn.init.xavier_uniform_(w)
bound = math.sqrt(6 / (200 + 300))
print("xavier bound:", bool((w.abs() <= bound).all()))
print("~ xavier_std", f"{w.std().item():.3f}", "atol=0.003")
nn.init.kaiming_normal_(w, mode="fan_in", nonlinearity="relu")
print("~ kaiming_std", f"{w.std().item():.3f}", "atol=0.004")
nn.init.normal_(w, mean=1.0, std=0.5)
print("~ normal_mean", f"{w.mean().item():.2f}", "atol=0.02")
nn.init.uniform_(w, -2, 2)
print("uniform in range:", bool(((w >= -2) & (w <= 2)).all()))
nn.init.constant_(w, 0.3)
print(bool((w == 0.3).all()))
print(round(nn.init.calculate_gain("relu"), 6), round(nn.init.calculate_gain("tanh"), 6),
      round(nn.init.calculate_gain("leaky_relu", 0.2), 6))
e = torch.empty(3, 4)
nn.init.eye_(e)
print(e)
model = nn.Sequential(nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 2))


def init_weights(m):
    if type(m) == nn.Linear:
        nn.init.xavier_normal_(m.weight)
        m.bias.data.fill_(0.01)


model.apply(init_weights)
print(model[0].bias, model[2].weight.shape, model[2].weight.requires_grad)
