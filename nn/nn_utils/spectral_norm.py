"""``tgrad.nn.utils.spectral_norm`` / ``remove_spectral_norm``: PyTorch's hook-based spectral
normalization (``weight_orig`` parameter, ``weight_u`` / ``weight_v`` buffers; ``weight`` recomputed
before each forward, with one power step per forward in training mode). New code uses
``parametrizations.spectral_norm``."""
from __future__ import annotations

import tgrad
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d
from ..modules.module import Module
from ..parameter import Parameter
from .parametrizations import weight_matrix
from .weight_norm import _pre_hooks, remove_hook_reparametrization

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]


class SpectralNorm:
    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps
        self.handle = None

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = weight_matrix(weight, self.dim)
        if do_power_iteration:
            with tgrad.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(tgrad.mv(weight_mat.T, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(tgrad.mv(weight_mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()  # the next power step writes the buffers in place
        return weight / tgrad.dot(u, tgrad.mv(weight_mat, v))

    def remove(self, module: Module) -> None:
        with tgrad.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))
        self.handle.remove()

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        if any(isinstance(h, SpectralNorm) and h.name == name for h in _pre_hooks(module)):
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with tgrad.no_grad():
            h, w = weight_matrix(weight, dim).shape
            u = F.normalize(tgrad.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = F.normalize(tgrad.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        fn.handle = module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    return remove_hook_reparametrization(module, SpectralNorm, "spectral_norm", name)
