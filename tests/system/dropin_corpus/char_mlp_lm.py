"""A character-level MLP language model (makemore part 2): embeddings of a 3-char context,
a tanh hidden layer, cross-entropy; then sampling."""
import torch
import torch.nn.functional as F

words = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "amelia", "harper", "evelyn", "abigail"]
chars = sorted(set("".join(words)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
vocab = len(stoi)
block = 3
X, Y = [], []
for w in words:
    ctx = [0] * block
    for ch in w + ".":
        X.append(ctx)
        Y.append(stoi[ch])
        ctx = ctx[1:] + [stoi[ch]]
X, Y = torch.tensor(X), torch.tensor(Y)
print(X.shape, X.dtype, Y.shape, vocab)

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab, 6), generator=g)
W1 = torch.randn((block * 6, 32), generator=g) * 0.3
b1 = torch.randn(32, generator=g) * 0.01
W2 = torch.randn((32, vocab), generator=g) * 0.1
b2 = torch.zeros(vocab)
parameters = [C, W1, b1, W2, b2]
for p in parameters:
    p.requires_grad = True
print(sum(p.nelement() for p in parameters))
for i in range(30):
    emb = C[X]
    h = torch.tanh(emb.view(-1, block * 6) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Y)
    if i == 0:
        first = loss.item()
    for p in parameters:
        p.grad = None
    loss.backward()
    for p in parameters:
        p.data += -0.5 * p.grad
print(emb.shape, h.shape, logits.shape)
print("learned:", loss.item() < first * 0.6)
print("~ loss_ratio", f"{loss.item() / first:.2f}", "atol=0.25")
with torch.no_grad():
    out, ctx = [], [0] * block
    for _ in range(12):
        emb = C[torch.tensor([ctx])]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        probs = F.softmax(h @ W2 + b2, dim=1)
        ix = int(probs.argmax(dim=1).item())
        ctx = ctx[1:] + [ix]
        if ix == 0:
            break
        out.append(itos[ix])
print("sampled a string of letters:", all(c in chars for c in out))
