"""NAdam (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``). PyTorch keeps the product
of the momentum coefficients, ``mu_product``, as a 0-d float32 tensor multiplied in float32; the
host does the same (numpy float32), so the coefficients agree to the last bit."""
from __future__ import annotations

import numpy as np

import tgrad

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer, scalar_state

__all__ = ["NAdam"]


class NAdam(HostScalarsOptimizer):
    ALGO = "nadam"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["mu_product"] = scalar_state(1.0, "cpu")
        state["exp_avg"] = self._state_tensor(p)
        state["exp_avg_sq"] = self._state_tensor(p)

    def _prepare(self, group, p, state):
        t = self._next_step(state)
        lr, (beta1, beta2), decay = float(group["lr"]), group["betas"], group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (t * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * decay)))
        kept = state["mu_product"]  # float32, or the parameter's dtype after load_state_dict (as PyTorch)
        if kept.dtype is tgrad.float32:
            product = float(np.float32(kept.item()) * np.float32(mu))
        else:
            product = kept.item() * mu
        kept._data.fill_(product)
        product_next = product * mu_next
        scalars = (1 - beta2 ** t, -lr * (1.0 - mu) / (1.0 - product), (-lr * mu_next) / (1.0 - product_next))
        return (state["exp_avg"], state["exp_avg_sq"]), scalars, None

    def _hyper(self, group):
        (beta1, beta2), lr, wd = group["betas"], float(group["lr"]), float(group["weight_decay"])
        return ((1.0 - beta1, float(beta2), 1.0 - beta2, float(group["eps"]), wd, 1.0 - lr * wd),
                dict(weight_decay=wd != 0, decoupled=group["decoupled_weight_decay"]))
