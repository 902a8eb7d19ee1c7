"""Linear algebra the toy models use: a Gaussian-process regression fitted by its marginal
likelihood (cholesky, cholesky_solve, logdet), PCA by SVD, least squares (lstsq, solve, pinv, qr),
an affine normalising flow scored by slogdet, and eigh of a covariance; data from NumPy, float64."""
# needs: torch.linalg.cholesky, torch.cholesky_solve, torch.linalg.svd, torch.linalg.lstsq, torch.linalg.slogdet
import math

import numpy as np
import torch

rng = np.random.default_rng(0)

# Gaussian-process regression: RBF kernel, the log marginal likelihood's gradient fits the hyperparameters
x = torch.from_numpy(rng.uniform(-3, 3, size=(12, 1)))
y = torch.sin(x[:, 0]) + 0.05 * torch.from_numpy(rng.standard_normal(12))
log_ls = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
log_noise = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
opt = torch.optim.Adam([log_ls, log_noise], lr=0.05)
for step in range(30):
    d2 = (x - x.T) ** 2
    K = torch.exp(-0.5 * d2 / torch.exp(2 * log_ls)) + torch.exp(2 * log_noise) * torch.eye(12, dtype=torch.float64)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y[:, None], L)
    nll = 0.5 * (y[:, None] * alpha).sum() + 0.5 * torch.logdet(K) + 6 * math.log(2 * math.pi)
    log_ls.grad, log_noise.grad = torch.autograd.grad(nll, [log_ls, log_noise])
    opt.step()
    if step % 10 == 0:
        print("~", f"gp_nll{step}", f"{nll.item():.6f}", "atol=1e-6")
print("~ gp_lengthscale", f"{log_ls.exp().item():.6f}", "atol=1e-6")
print("~ gp_logdet_via_L", f"{2 * torch.log(torch.diagonal(L)).sum().item():.6f}", "atol=1e-6")

# PCA: the principal directions of correlated data and the variance they explain
data = torch.from_numpy(rng.standard_normal((40, 3)) @ np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.5, 0.2]]))
centred = data - data.mean(0)
U, S, Vh = torch.linalg.svd(centred, full_matrices=False)
explained = S ** 2 / (S ** 2).sum()
print("~ pca_explained0", f"{explained[0].item():.8f}", "atol=1e-8")
print("~ pca_direction0_abs", f"{Vh[0].abs().sum().item():.8f}", "atol=1e-8")
print("pca shapes:", tuple(U.shape), tuple(S.shape), tuple(Vh.shape))
print("~ svdvals_sum", f"{torch.linalg.svdvals(centred).sum().item():.8f}", "atol=1e-8")

# least squares three ways
A = torch.from_numpy(rng.standard_normal((20, 4)))
b = torch.from_numpy(rng.standard_normal((20, 1)))
x_ls = torch.linalg.lstsq(A, b).solution
x_ne = torch.linalg.solve(A.T @ A, A.T @ b)
x_pinv = torch.linalg.pinv(A) @ b
Q, R = torch.linalg.qr(A)
x_qr = torch.linalg.solve_triangular(R, Q.T @ b, upper=True)
print("~ lstsq_x0", f"{x_ls[0, 0].item():.8f}", "atol=1e-8")
print("agree:", all(torch.allclose(x_ls, z, atol=1e-8) for z in (x_ne, x_pinv, x_qr)))
print("~ residual", f"{torch.linalg.vector_norm(A @ x_ls - b).item():.8f}", "atol=1e-8")

# an affine flow z = W x + c trained by maximum likelihood under a standard normal base
W = torch.eye(2, dtype=torch.float64).requires_grad_()
c = torch.zeros(2, dtype=torch.float64, requires_grad=True)
samples = torch.from_numpy(rng.standard_normal((64, 2)) @ np.array([[2.0, 0.0], [0.6, 0.5]]) + np.array([1.0, -1.0]))
opt = torch.optim.Adam([W, c], lr=0.05)
for step in range(40):
    z = samples @ W.T + c
    log_prob = -0.5 * (z ** 2).sum(1) - math.log(2 * math.pi) + torch.linalg.slogdet(W).logabsdet
    loss = -log_prob.mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("~ flow_nll", f"{loss.item():.6f}", "atol=1e-6")
print("~ flow_det", f"{torch.linalg.det(W).item():.6f}", "atol=1e-6")
print("~ flow_inv_trace", f"{torch.linalg.inv(W).trace().item():.6f}", "atol=1e-6")

# the covariance's spectrum
cov = centred.T @ centred / 39
evals, evecs = torch.linalg.eigh(cov)
print("~ eig_max", f"{evals[-1].item():.8f}", "atol=1e-8")
print("ascending:", bool((evals[1:] >= evals[:-1]).all()), "orthonormal:",
      torch.allclose(evecs.T @ evecs, torch.eye(3, dtype=torch.float64), atol=1e-10))
print(type(torch.linalg.slogdet(cov)).__name__, torch.linalg.matrix_rank(cov).item())
