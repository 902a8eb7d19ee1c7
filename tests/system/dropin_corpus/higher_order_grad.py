"""Gradients of gradients: second derivatives with create_graph, and a gradient penalty."""
import torch

x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = (x ** 3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
print(g, g.grad_fn.__class__.__name__ is not None, g.requires_grad)
(h,) = torch.autograd.grad(g.sum(), x)
print(h)

x = torch.tensor(1.5, requires_grad=True)
f = torch.sin(x) * x
(d1,) = torch.autograd.grad(f, x, create_graph=True)
(d2,) = torch.autograd.grad(d1, x, create_graph=True)
(d3,) = torch.autograd.grad(d2, x)
print(round(d1.item(), 5), round(d2.item(), 5), round(d3.item(), 5))

# WGAN-GP style penalty: ||d critic / d input|| pushed toward 1
torch.manual_seed(0)
critic = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
inp = torch.tensor([[0.1, 0.2, 0.3], [-0.5, 0.4, 1.0]], requires_grad=True)
out = critic(inp)
(gin,) = torch.autograd.grad(out.sum(), inp, create_graph=True)
penalty = ((gin.norm(2, dim=1) - 1) ** 2).mean()
penalty.backward()
print(gin.shape, penalty.grad_fn.__class__.__name__, critic[0].weight.grad.shape)
print("grads:", [p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in critic.parameters()])

w = torch.tensor([1.0, 2.0], requires_grad=True)
loss = (w ** 2).sum()
loss.backward(create_graph=True)
print(w.grad, w.grad.requires_grad)
gnorm = w.grad.pow(2).sum()
w.grad = None
gnorm.backward()
print(w.grad)
