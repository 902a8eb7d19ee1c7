"""Adadelta (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``)."""
from __future__ import annotations

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer

__all__ = ["Adadelta"]


class Adadelta(HostScalarsOptimizer):
    ALGO = "adadelta"

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check_hyperparameters(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["square_avg"] = self._state_tensor(p)
        state["acc_delta"] = self._state_tensor(p)

    def _prepare(self, group, p, state):
        self._next_step(state)
        return (state["square_avg"], state["acc_delta"]), (), None

    def _hyper(self, group):
        rho, wd = float(group["rho"]), float(group["weight_decay"])
        return (float(group["lr"]), rho, 1.0 - rho, float(group["eps"]), wd), dict(weight_decay=wd != 0)
