"""RAdam (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``). Whether a step is
rectified (rho_t > 5) depends on the step count only, so the host decides it per parameter."""
from __future__ import annotations

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer

__all__ = ["RAdam"]


class RAdam(HostScalarsOptimizer):
    ALGO = "radam"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["exp_avg"] = self._state_tensor(p)
        state["exp_avg_sq"] = self._state_tensor(p)

    def _prepare(self, group, p, state):
        t = self._next_step(state)
        beta1, beta2 = group["betas"]
        bias1, bias2 = 1 - beta1 ** t, 1 - beta2 ** t
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * t * (beta2 ** t) / bias2
        rectified = rho_t > 5.0
        rect = (((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                if rectified else 0.0)
        return (state["exp_avg"], state["exp_avg_sq"]), (bias1, bias2 ** 0.5, rect), rectified

    def _hyper(self, group):
        (beta1, beta2), lr, wd = group["betas"], float(group["lr"]), float(group["weight_decay"])
        return ((1.0 - beta1, float(beta2), 1.0 - beta2, float(group["eps"]), wd, 1.0 - lr * wd, lr),
                dict(weight_decay=wd != 0, decoupled=group["decoupled_weight_decay"]))
