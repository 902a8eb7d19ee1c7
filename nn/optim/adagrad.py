"""Adagrad (PyTorch's update), with learning-rate decay, weight decay and maximize. At step t:

    g = -grad if maximize else grad;  g += weight_decay * p;  sum += g^2
    p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps)
"""
from __future__ import annotations

import tgrad
from .optimizer import Optimizer, _check_nonnegative

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_nonnegative(lr, "learning rate")
        _check_nonnegative(lr_decay, "lr_decay value")
        _check_nonnegative(weight_decay, "weight_decay value")
        _check_nonnegative(initial_accumulator_value, "initial_accumulator_value value")
        _check_nonnegative(eps, "epsilon value")
        if differentiable:
            raise NotImplementedError("tgrad optimizers are not differentiable")
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

    def _update_group(self, group, params):
        lr, lr_decay, wd = float(group["lr"]), float(group["lr_decay"]), float(group["weight_decay"])
        states, scalars = [], []
        for p in params:
            state = self.state[p] if "sum" in self.state[p] else self._init_state(p, group)  # a group added later
            t = self._next_step(state)
            scalars.append((lr / (1 + (t - 1) * lr_decay), 0.0))
            states.append([state["sum"]])
        self._launch("adagrad", group, params, states, scalars=scalars, hyper=(wd, float(group["eps"])),
                     weight_decay=wd != 0)
