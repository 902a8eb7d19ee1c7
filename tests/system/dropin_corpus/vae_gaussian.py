"""A variational autoencoder on 6-d data: Normal posterior with rsample, KL to the prior with
kl_divergence, Bernoulli-free Gaussian reconstruction."""
# needs: torch.distributions.Normal, torch.distributions.kl_divergence
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal, kl_divergence

rng = np.random.default_rng(11)
data = torch.tensor(rng.standard_normal((64, 2)) @ rng.standard_normal((2, 6)), dtype=torch.float32)


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 2 * 2)
        self.dec = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 6))

    def forward(self, x):
        mu, log_sigma = self.enc(x).chunk(2, dim=-1)
        q = Normal(mu, log_sigma.exp())
        z = q.rsample()
        prior = Normal(torch.zeros_like(mu), torch.ones_like(mu))
        kl = kl_divergence(q, prior).sum(-1)
        recon = Normal(self.dec(z), 1.0).log_prob(x).sum(-1)
        return (kl - recon).mean(), z


torch.manual_seed(0)
vae = VAE()
opt = torch.optim.Adam(vae.parameters(), lr=2e-2)
first = None
for step in range(40):
    loss, z = vae(data)
    opt.zero_grad()
    loss.backward()
    opt.step()
    first = first if first is not None else loss.item()
print(z.shape, loss.grad_fn.__class__.__name__, z.requires_grad)
print("elbo improved:", loss.item() < first)
n = Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
print(n.mean, n.stddev, n.variance)
print("~ logp", f"{n.log_prob(torch.tensor([0.5, 0.5])).sum().item():.5f}", "atol=1e-5")
print("~ entropy", f"{n.entropy().sum().item():.5f}", "atol=1e-5")
print(n.sample((3,)).shape, n.rsample().requires_grad, n.batch_shape, n.event_shape)
