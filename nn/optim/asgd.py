"""ASGD, averaged SGD (PyTorch's update; the math is in ``tgrad.kernels.optim.updates``). As in
PyTorch, ``eta`` and ``mu`` are 0-d float32 state tensors on the parameter's device, so the
values the update uses are float32-rounded (even after a load casts them to the parameter's dtype)."""
from __future__ import annotations

import numpy as np

from .hyperparameters import check_hyperparameters
from .optimizer import HostScalarsOptimizer, scalar_state

__all__ = ["ASGD"]


class ASGD(HostScalarsOptimizer):
    ALGO = "asgd"

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        check_hyperparameters(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, group, p, state):
        state["eta"] = scalar_state(group["lr"], p.device)
        state["mu"] = scalar_state(1.0, p.device)
        state["ax"] = self._state_tensor(p)

    def _prepare(self, group, p, state):
        t = self._next_step(state)
        eta, mu = state["eta"].item(), state["mu"].item()
        scalars = (eta, mu, 1 - group["lambd"] * eta)
        lr = float(group["lr"])
        # the next step's eta and mu (the update above uses the current ones); PyTorch makes them
        # with torch.as_tensor (float32) before copying them into the state, whatever its dtype
        state["eta"]._data.fill_(float(np.float32(lr / ((1 + group["lambd"] * lr * t) ** group["alpha"]))))
        state["mu"]._data.fill_(float(np.float32(1 / max(1, t - group["t0"]))))
        return (state["ax"], None), scalars, mu != 1

    def _hyper(self, group):
        wd = float(group["weight_decay"])
        return (wd,), dict(weight_decay=wd != 0)
