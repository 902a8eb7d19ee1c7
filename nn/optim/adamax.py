"""Adamax (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``)."""
from __future__ import annotations

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer

__all__ = ["Adamax"]


class Adamax(HostScalarsOptimizer):
    ALGO = "adamax"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["exp_avg"] = self._state_tensor(p)
        state["exp_inf"] = self._state_tensor(p)

    def _prepare(self, group, p, state):
        t = self._next_step(state)
        clr = float(group["lr"]) / (1 - group["betas"][0] ** t)
        return (state["exp_avg"], state["exp_inf"]), (clr,), None

    def _hyper(self, group):
        beta1, beta2 = group["betas"]
        wd = float(group["weight_decay"])
        return (1.0 - beta1, float(beta2), float(group["eps"]), wd), dict(weight_decay=wd != 0)
