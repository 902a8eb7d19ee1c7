"""Predicting the next value of a sine wave with an nn.LSTM (the time-sequence example)."""
# needs: torch.nn.LSTM
import math

import torch
import torch.nn as nn

T = 12
t = torch.arange(0, 8 * T, dtype=torch.float32).reshape(8, T)
data = torch.sin((t + torch.arange(8).unsqueeze(1) * 3.0) / 4.0)
inp, target = data[:, :-1].unsqueeze(-1), data[:, 1:].unsqueeze(-1)


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 16, batch_first=True)
        self.linear = nn.Linear(16, 1)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.linear(out)


torch.manual_seed(0)
seq = Seq()
out, (h, c) = seq.lstm(inp)
print(out.shape, h.shape, c.shape)
opt = torch.optim.Adam(seq.parameters(), lr=0.05)
first = None
for step in range(15):
    opt.zero_grad()
    loss = nn.functional.mse_loss(seq(inp), target)
    loss.backward()
    opt.step()
    first = first or loss.item()
print("learned:", loss.item() < first / 3, math.isfinite(loss.item()))
