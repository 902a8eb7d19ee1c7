"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (PyTorch's update):

    g = -grad if maximize else grad;  g += weight_decay * p
    buf = g (first step) | momentum * buf + (1 - dampening) * g;  g = g + momentum * buf (nesterov) | buf
    p -= lr * g

SGD has no capturable flag (as in PyTorch) and needs none: with its momentum buffers made (one
step before capturing) a step reads no host value that changes, so it can be graph-captured.
"""
from __future__ import annotations

from .hyperparameters import check_hyperparameters
from .optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        check_hyperparameters(lr=lr, momentum=momentum, weight_decay=weight_decay, differentiable=differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update_group(self, group, params, capturing):
        momentum = float(group["momentum"])
        states, firsts = [], []
        for p in params:
            if momentum == 0:
                states.append([])
                firsts.append(False)
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer")
            firsts.append(buf is None)  # the first buffer is the gradient itself, undamped
            if buf is None:
                self._no_state_during_capture(capturing, "momentum_buffer")
                buf = state["momentum_buffer"] = self._state_tensor(p)
            states.append([buf])
        wd = float(group["weight_decay"])
        # the table holds no per-step value once the buffers exist: reuse it (and capture it)
        self._launch("sgd", group, params, states, flags=firsts if momentum != 0 else None,
                     hyper=(float(group["lr"]), wd, momentum, 1.0 - float(group["dampening"])),
                     cached=True, capturing=capturing,
                     weight_decay=wd != 0, momentum=momentum != 0, nesterov=group["nesterov"])
