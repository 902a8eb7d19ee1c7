"""Adagrad (PyTorch's update), with learning-rate decay, weight decay and maximize. At step t:

    g = -grad if maximize else grad;  g += weight_decay * p;  sum += g^2
    p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps)

Adagrad has no capturable flag (as in PyTorch). A step can be graph-captured when lr_decay is 0:
the update then reads no step count, and ``state["step"]`` (on the host) counts only the steps run
outside a capture. With lr_decay != 0 a capture raises: the decayed lr would be frozen.
"""
from __future__ import annotations

import tgrad
from .hyperparameters import check_hyperparameters
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_hyperparameters(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                              initial_accumulator_value=initial_accumulator_value, eps=eps,
                              differentiable=differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:  # PyTorch creates Adagrad's state up front
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = tgrad.tensor(0.0)
        state["sum"] = self._state_tensor(p, group["initial_accumulator_value"])
        return state

    def _update_group(self, group, params, capturing):
        lr, lr_decay, wd = float(group["lr"]), float(group["lr_decay"]), float(group["weight_decay"])
        if capturing and lr_decay != 0:
            raise RuntimeError(f"Adagrad with lr_decay={group['lr_decay']} cannot be graph-captured: its learning "
                               "rate lr / (1 + (step - 1) * lr_decay) is computed on the host from the step count "
                               "and would be frozen into the graph. Use lr_decay=0 (or a learning-rate scheduler "
                               "outside the graph).")
        states, scalars = [], []
        for p in params:
            if "sum" not in self.state[p]:  # a group added later
                self._no_state_during_capture(capturing, "sum")
                self._init_state(p, group)
            state = self.state[p]
            if capturing:
                # The step lives on the host (PyTorch's placement) and the update reads it only
                # through lr_decay, 0 here: a captured step leaves it alone, so it counts the steps
                # run outside captures (replays do not advance it).
                scalars.append((lr,))
                states.append([state["sum"]])
                continue
            t = self._next_step(state)
            scalars.append((lr / (1 + (t - 1) * lr_decay),))
            states.append([state["sum"]])
        self._launch("adagrad", group, params, states, scalars=scalars, hyper=(wd, float(group["eps"])),
                     cached=lr_decay == 0, capturing=capturing, weight_decay=wd != 0)
