"""``tgrad.nn.utils.weight_norm`` / ``remove_weight_norm``: PyTorch's deprecated hook-based weight
normalization (``weight_g``, ``weight_v`` parameters; ``weight`` recomputed before each forward).
New code uses ``parametrizations.weight_norm``, whose state dicts these do not share."""
from __future__ import annotations

import warnings

from ..modules.module import Module
from ..parameter import Parameter
from .parametrizations import norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _pre_hooks(module):
    hooks = module._forward_pre_hooks
    return list(hooks.values()) if isinstance(hooks, dict) else list(hooks)


class WeightNorm:
    def __init__(self, name: str, dim: int | None):
        self.name, self.dim = name, -1 if dim is None else dim
        self.handle = None

    def compute_weight(self, module: Module):
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> "WeightNorm":
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        if any(isinstance(h, WeightNorm) and h.name == name for h in _pre_hooks(module)):
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        fn.handle = module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))
        self.handle.remove()

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    WeightNorm.apply(module, name, dim)
    return module


def remove_hook_reparametrization(module: Module, kind: type, what: str, name: str) -> Module:
    """Undo the hook-based reparametrization ``kind`` (WeightNorm, SpectralNorm) of ``module.<name>``."""
    for hook in _pre_hooks(module):
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    return remove_hook_reparametrization(module, WeightNorm, "weight_norm", name)
