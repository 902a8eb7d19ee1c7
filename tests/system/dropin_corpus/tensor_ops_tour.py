"""Everyday tensor ops in scripts: gather, scatter_add, masked_fill, where, sort, argsort, cat,
chunk, split, clamp, comparisons, reductions with dims, in-place updates, one_hot."""
import torch
import torch.nn.functional as F

x = torch.tensor([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
print(x.gather(1, torch.tensor([[2, 0], [1, 1]])))
print(torch.zeros(3).scatter_add(0, torch.tensor([0, 2, 0, 1]), torch.tensor([1.0, 2.0, 3.0, 4.0])))
print(x.masked_fill(x < 0, 0.0), torch.where(x > 1, x, torch.zeros_like(x)))
v, i = x.sort(dim=1, descending=True)
print(v, i, x.argsort(dim=0))
print(torch.cat([x, x], 0).shape, [c.shape for c in x.chunk(3, dim=1)], [s.shape for s in x.split([1, 2], dim=1)])
print(x.clamp(-0.5, 2.5), x.abs().sum(), x.max(dim=0), x.min(), x.argmax())
print(x.mean(1), x.var(1), x.std(), x.prod(1), x.norm(), torch.logsumexp(x, 1))
print((x > 0).sum(), (x > 0).float().mean(), (x > 0).any(), (x > 0).all(dim=1))
y = x.clone()
y[0, 1] = 10.0
y[:, 0] += 1
y.mul_(2).sub_(1)
print(y, x)
print(F.one_hot(torch.tensor([0, 2, 1]), num_classes=4))
print(torch.stack([torch.arange(3), torch.arange(3) * 2], dim=1))
print(x.t().contiguous().view(-1), x.reshape(3, 2).T.shape, x.flatten().unsqueeze(0).shape)
print(((torch.softmax(x, dim=1).sum(1) - 1).abs() < 1e-6).all(), torch.softmax(x, dim=1).shape)
print(x.exp().log().sub(x).abs().max() < 1e-6, torch.sigmoid(torch.tensor(0.0)), torch.tanh(torch.tensor([0.0, 1.0])))
print(x.numpy().dtype, x.tolist(), torch.tensor(x.numpy()).dtype, x.long(), x.int().dtype)
