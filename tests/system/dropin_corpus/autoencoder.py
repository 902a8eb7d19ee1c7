"""An MLP autoencoder compressing 12-d points that lie near a 2-d plane; reconstruction error."""
import numpy as np
import torch
from torch import nn

rng = np.random.default_rng(6)
basis = rng.standard_normal((2, 12))
data = torch.tensor(rng.standard_normal((80, 2)) @ basis + 0.01 * rng.standard_normal((80, 12)),
                    dtype=torch.float32)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 2))
        self.decoder = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 12))

    def forward(self, x):
        z = self.encoder(x)
        return self.decoder(z), z


torch.manual_seed(0)
ae = AutoEncoder()
opt = torch.optim.Adam(ae.parameters(), lr=3e-2)
first = None
for step in range(30):
    recon, z = ae(data)
    loss = nn.functional.mse_loss(recon, data)
    opt.zero_grad()
    loss.backward()
    opt.step()
    first = loss.item() if first is None else first
print(ae)
print(z.shape, recon.shape, recon.grad_fn.__class__.__name__)
print("reconstruction improved 3x:", loss.item() < first / 3)
print("~ loss_ratio", f"{loss.item() / first:.3f}", "atol=0.2")
