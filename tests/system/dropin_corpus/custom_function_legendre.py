"""A custom autograd Function (the tutorial's LegendrePolynomial3) trained to fit sin(x), plus
gradcheck on it in float64."""
import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


x = torch.linspace(-math.pi, math.pi, 100)
y = torch.sin(x)
a = torch.full((), 0.0, requires_grad=True)
b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True)
d = torch.full((), 0.3, requires_grad=True)
lr = 1e-5
P3 = LegendrePolynomial3.apply
for t in range(40):
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t == 0:
        mul = y_pred.grad_fn.next_functions[1][0]
        print(y_pred.grad_fn.__class__.__name__, mul.__class__.__name__,
              mul.next_functions[1][0].__class__.__name__)
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= lr * p.grad
            p.grad = None
print("~ loss", f"{loss.item():.4f}", "atol=0.01")
print("~ d", f"{d.item():.5f}", "atol=1e-4")

inp = torch.linspace(-1, 1, 7, dtype=torch.double, requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(LegendrePolynomial3.apply, (inp,)))


class MulConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = MulConstant.apply(t, 4.0)
out.sum().backward()
print(out, t.grad)
