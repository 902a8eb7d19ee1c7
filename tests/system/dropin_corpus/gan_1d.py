"""A tiny GAN: the generator learns to move N(0,1) noise toward N(3, 0.5) samples."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(7)
real_pool = torch.tensor(rng.normal(3.0, 0.5, (64, 1)), dtype=torch.float32)
torch.manual_seed(0)
G = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
D = nn.Sequential(nn.Linear(1, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
criterion = nn.BCELoss()
opt_g = torch.optim.Adam(G.parameters(), lr=2e-2, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-2, betas=(0.5, 0.999))
ones, zeros = torch.ones(64, 1), torch.zeros(64, 1)
for step in range(15):
    noise = torch.randn(64, 1)
    fake = G(noise)
    # discriminator: real -> 1, fake -> 0 (fake detached: G gets no gradient from this step)
    opt_d.zero_grad()
    d_loss = criterion(D(real_pool), ones) + criterion(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()
    if step == 0:
        print("G got no grad from the D step:", all(p.grad is None for p in G.parameters()))
    # generator: make D call fakes real
    opt_g.zero_grad()
    g_loss = criterion(D(fake), ones)
    g_loss.backward()
    opt_g.step()
print(fake.shape, fake.grad_fn.__class__.__name__, d_loss.grad_fn.__class__.__name__)
with torch.no_grad():
    m = G(torch.randn(256, 1)).mean().item()
print("losses finite:", bool(torch.isfinite(d_loss)) and bool(torch.isfinite(g_loss)))
print("moved toward the data:", m > 1.0)
