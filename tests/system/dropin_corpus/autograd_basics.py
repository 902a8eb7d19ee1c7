"""Autograd mechanics from the 60-minute blitz: grad_fn names, .grad, no_grad, detach."""
import torch

x = torch.ones(2, 2, requires_grad=True)
print(x)
y = x + 2
print(y)
print(y.grad_fn.__class__.__name__)
z = y * y * 3
out = z.mean()
print(z, out)

a = torch.tensor([[0.5, -1.0], [2.0, 3.0]])
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(type(b.grad_fn).__name__)

out.backward()
print(x.grad)

x = torch.tensor([0.5, -1.5, 2.0], requires_grad=True)
y = x * 2
k = 0
while y.data.norm() < 100:
    y = y * 2
    k += 1
print(k, y)
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)

print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
y = x.detach()
print(y.requires_grad)
print(bool((x == y).all()))

# the graph of a small expression, walked through next_functions
w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = torch.tensor(0.5, requires_grad=True)
loss = torch.sigmoid((w * torch.tensor([0.1, 0.2, 0.3])).sum() + b)
node, names = loss.grad_fn, []
while node is not None:
    names.append(type(node).__name__)
    nxt = [f for f, _ in node.next_functions if f is not None]
    node = nxt[0] if nxt else None
print(names)
loss.backward()
print(w.grad, b.grad, w.is_leaf, loss.is_leaf)
