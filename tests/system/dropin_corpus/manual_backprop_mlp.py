"""A two-layer net's backward pass written out by hand (as in CS231n/makemore) and checked
against autograd, gradient by gradient."""
import numpy as np
import torch

rng = np.random.default_rng(1)
N, D, H, C = 7, 5, 9, 4
x = torch.tensor(rng.standard_normal((N, D)), dtype=torch.float32)
yi = torch.tensor(rng.integers(0, C, N))
W1 = torch.tensor(rng.standard_normal((D, H)) * 0.5, dtype=torch.float32, requires_grad=True)
b1 = torch.tensor(rng.standard_normal(H) * 0.1, dtype=torch.float32, requires_grad=True)
W2 = torch.tensor(rng.standard_normal((H, C)) * 0.5, dtype=torch.float32, requires_grad=True)
b2 = torch.tensor(rng.standard_normal(C) * 0.1, dtype=torch.float32, requires_grad=True)

hpre = x @ W1 + b1
h = torch.tanh(hpre)
logits = h @ W2 + b2
logit_maxes = logits.max(1, keepdim=True).values
norm_logits = logits - logit_maxes
counts = norm_logits.exp()
counts_sum = counts.sum(1, keepdim=True)
probs = counts / counts_sum
logprobs = probs.log()
loss = -logprobs[torch.arange(N), yi].mean()
for t in (hpre, h, logits, probs, logprobs):
    t.retain_grad()
loss.backward()
print("loss grad_fn:", loss.grad_fn.__class__.__name__)

# by hand: softmax cross-entropy, then the layers
dlogits = probs.detach().clone()
dlogits[torch.arange(N), yi] -= 1
dlogits /= N
dW2 = h.detach().T @ dlogits
db2 = dlogits.sum(0)
dh = dlogits @ W2.detach().T
dhpre = (1.0 - h.detach() ** 2) * dh
dW1 = x.T @ dhpre
db1 = dhpre.sum(0)


def cmp(name, dt, t):
    ex = bool((dt == t.grad).all())
    app = (dt - t.grad).abs().max().item() < 1e-5
    print(f"{name:8s} | approximate: {app} | shape {tuple(dt.shape)}")


cmp("logits", dlogits, logits)
cmp("W2", dW2, W2)
cmp("b2", db2, b2)
cmp("h", dh, h)
cmp("hpre", dhpre, hpre)
cmp("W1", dW1, W1)
cmp("b1", db1, b1)
print("~ loss", f"{loss.item():.5f}", "atol=1e-5")
