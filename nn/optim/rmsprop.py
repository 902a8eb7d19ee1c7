"""RMSprop (PyTorch's update), with momentum, centering, weight decay and maximize:

    g = -grad if maximize else grad;  g += weight_decay * p;  sq = alpha sq + (1 - alpha) g^2
    avg = sqrt(sq - ga^2) + eps with ga = ga + (1 - alpha)(g - ga) (centered), else sqrt(sq) + eps
    buf = momentum buf + g / avg;  p -= lr buf     (momentum > 0)
    p -= lr g / avg                                (otherwise)

With ``capturable=True`` the step count lives on the parameter's device, advanced by a kernel.
"""
from __future__ import annotations

import tgrad
from .hyperparameters import check_hyperparameters
from .optimizer import Optimizer, scalar_state

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_hyperparameters(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha,
                              differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group, params, capturing):
        momentum, centered, capturable = float(group["momentum"]), group["centered"], group.get("capturable", False)
        states, steps = [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                self._no_state_during_capture(capturing, "square_avg")
                state["step"] = scalar_state(0.0, p.device) if capturable else tgrad.tensor(0.0)
                state["square_avg"] = self._state_tensor(p)
                if momentum > 0:
                    state["momentum_buffer"] = self._state_tensor(p)
                if centered:
                    state["grad_avg"] = self._state_tensor(p)
            if capturable:  # the update does not read t; the step kernel advances it on the device
                steps.append(self._device_step(state, p, capturing))
            else:
                self._next_step(state)
            states.append([state["square_avg"], state.get("momentum_buffer") if momentum > 0 else None,
                           state.get("grad_avg") if centered else None])
        alpha, wd = float(group["alpha"]), float(group["weight_decay"])
        self._launch("rmsprop", group, params, states,
                     hyper=(float(group["lr"]), alpha, 1.0 - alpha, float(group["eps"]), wd, momentum),
                     steps=steps if capturable else None, capturing=capturing,
                     weight_decay=wd != 0, momentum=momentum > 0, centered=centered)
