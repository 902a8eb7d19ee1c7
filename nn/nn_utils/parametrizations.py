"""``tgrad.nn.utils.parametrizations``, as ``torch.nn.utils.parametrizations``: ``weight_norm``
and ``spectral_norm`` registered through ``parametrize``.

weight_norm:   w = g * v / ||v||, the norm over every dim but ``dim`` (over all of v when dim is None);
               originals ``original0 = g`` (shape 1 but along ``dim``), ``original1 = v``.
spectral_norm: w = W / sigma, sigma = u . (W_mat v) with u, v the buffers a power iteration
               (under no_grad, in training mode) moves toward W_mat's top singular vectors;
               W_mat is W with ``dim`` moved first and the rest flattened.
Both are compositions of differentiable ops, so their gradients (of any order) come from those.
"""
from __future__ import annotations

import tgrad
from tgrad import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (over all of v if dim is -1)."""
    if dim == -1:
        return tgrad.linalg.vector_norm(v)
    dim = dim % v.ndim
    return tgrad.linalg.vector_norm(v, 2, dim=[d for d in range(v.ndim) if d != dim], keepdim=True)


def weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as the matrix spectral norm measures: ``dim`` first, the other dims flattened."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.flatten(1)


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as magnitude times direction (``original0``, ``original1``)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = tgrad.randn(h, dtype=weight.dtype, device=weight.device)
            v = tgrad.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        return weight_matrix(weight, self.dim)

    def _power_method(self, weight_mat, n_power_iterations):
        with tgrad.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(tgrad.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(tgrad.mv(weight_mat.T, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # the power method writes the buffers in place
        sigma = tgrad.vdot(u, tgrad.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
