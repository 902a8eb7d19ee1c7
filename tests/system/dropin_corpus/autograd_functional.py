"""torch.autograd.functional: the Jacobian of a small network and the Hessian of its loss,
checked against finite differences and against each other (jvp/vjp/hvp)."""
# needs: torch.autograd.functional.jacobian, torch.autograd.functional.hessian
import torch
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vjp

torch.manual_seed(0)
W = torch.tensor([[0.5, -0.2, 0.1], [0.3, 0.8, -0.5]], dtype=torch.float64)


def f(x):
    return torch.tanh(W @ x)


def loss(x):
    return (f(x) ** 2).sum() + (x ** 3).sum()


x = torch.tensor([0.2, -0.4, 0.7], dtype=torch.float64)
J = jacobian(f, x)
H = hessian(loss, x)
print(J.shape, H.shape, J.dtype)
eps = 1e-6
fd = torch.stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in torch.eye(3, dtype=torch.float64)], 1)
print("jacobian matches finite differences:", bool(((J - fd).abs().max() < 1e-6)))
print("hessian symmetric:", bool(((H - H.T).abs().max() < 1e-10)))
v = torch.tensor([1.0, 0.5, -1.0], dtype=torch.float64)
_, jv = jvp(f, x, v)
_, vj = vjp(f, x, torch.tensor([1.0, -1.0], dtype=torch.float64))
_, hv = hvp(loss, x, v)
print("jvp == J v:", bool(((jv - J @ v).abs().max() < 1e-10)))
print("vjp == u J:", bool(((vj - torch.tensor([1.0, -1.0], dtype=torch.float64) @ J).abs().max() < 1e-10)))
print("hvp == H v:", bool(((hv - H @ v).abs().max() < 1e-10)))
print("~ H00", f"{H[0, 0].item():.8f}", "atol=1e-8")
