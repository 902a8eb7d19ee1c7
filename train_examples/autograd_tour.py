"""The seed tutorials' autograd, run on tgrad: every number below is computed by Triton kernels.

    python train_examples/autograd_tour.py

Part 1 is seed 000 (the legacy ``Variable`` API), part 2 seed 003 (the 60-minute blitz). Both print
what PyTorch prints, with ``tgrad`` in place of ``torch``.
"""
import tgrad as torch
from tgrad.autograd import Variable

torch.manual_seed(0)

# ---------------------------------------------------------------- part 1: Variable (seed 000)
x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)
y = x + 2
print(y)
print(x.grad_fn, y.grad_fn)  # x was made by the user: None; y by an addition
z = y * y * 3
out = z.mean()
print(z, out)
out.backward()
print(x.grad)

x = Variable(torch.randn(3), requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
try:
    y.backward()  # y is a vector: backward needs the vector of a vector-Jacobian product
except RuntimeError as e:
    print(f"RuntimeError: {e}")
print(x.grad)
y.backward(torch.FloatTensor([0.1, 1.0, 0.0001]))
print(x.grad)

for weights in ([1, 1, 1], [3, 2, 1]):
    x = Variable(torch.FloatTensor([1, 2, 3]), requires_grad=True)
    y = x * x
    y.backward(torch.FloatTensor(weights))
    print(y, x.grad)  # x.grad = 2 x * weights

# ---------------------------------------------------------------- part 2: the blitz (seed 003)
x = torch.ones(2, 2, requires_grad=True)
print(x)
y = x + 2
print(y)
print(y.grad_fn)
z = y * y * 3
out = z.mean()
print(z, out)

a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

out.backward()
print(x.grad)  # d(out)/dx = 3/2 (x + 2) = 4.5

x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)  # a vector-Jacobian product
print(x.grad)

print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
