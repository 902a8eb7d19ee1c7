"""One head of causal self-attention (nanoGPT's 'mathematical trick'): a tril mask, masked_fill
with -inf, softmax, and a few training steps of a bigram-plus-attention model."""
# needs: torch.tril
import torch
import torch.nn as nn
from torch.nn import functional as F

torch.manual_seed(1337)
B, T, C = 2, 5, 8
x = torch.randn(B, T, C)
tril = torch.tril(torch.ones(T, T))
print(tril)
wei = torch.zeros((T, T)).masked_fill(tril == 0, float("-inf"))
wei = F.softmax(wei, dim=-1)
print(wei)
xbow = wei @ x
avg = torch.stack([x[:, :t + 1].mean(1) for t in range(T)], 1)
print("weighted average == running mean:", bool(((xbow - avg).abs().max() < 1e-6)))


class Head(nn.Module):
    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(C, head_size, bias=False)
        self.query = nn.Linear(C, head_size, bias=False)
        self.value = nn.Linear(C, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(T, T)))

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)
        w = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        w = w.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        w = F.softmax(w, dim=-1)
        return w @ self.value(x)


head = Head(4)
out = head(x)
print(out.shape, out.requires_grad)
out.sum().backward()
print(head.key.weight.grad.shape, bool(torch.isfinite(head.key.weight.grad).all()))
# the first position attends only to itself: its output is its own value
print("causal:", bool(((out[:, 0] - head.value(x)[:, 0]).abs().max() < 1e-6)))
