"""Rprop, resilient backpropagation (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``).
The learning rate only sets each element's initial step size."""
from __future__ import annotations

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer

__all__ = ["Rprop"]


class Rprop(HostScalarsOptimizer):
    ALGO = "rprop"

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        check_hyperparameters(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["prev"] = self._state_tensor(p)
        state["step_size"] = self._state_tensor(p, fill=group["lr"])

    def _prepare(self, group, p, state):
        self._next_step(state)
        return (state["prev"], state["step_size"]), (), None

    def _hyper(self, group):
        (minus, plus), (low, high) = group["etas"], group["step_sizes"]
        return (float(minus), float(plus), float(low), float(high)), {}
