"""Adam and AdamW (PyTorch's updates), with amsgrad, weight decay and maximize. At step t:

    g = -grad if maximize else grad
    Adam: g += weight_decay * p            AdamW: p *= 1 - lr * weight_decay
    m = m + (1 - beta1) (g - m);   v = beta2 v + (1 - beta2) g^2;   vmax = max(vmax, v) (amsgrad)
    p -= lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)
"""
from __future__ import annotations

import tgrad
from .optimizer import Optimizer, _check_nonnegative

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_nonnegative(lr, "learning rate")
        _check_nonnegative(eps, "epsilon value")
        for i in range(2):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        _check_nonnegative(weight_decay, "weight_decay value")
        if differentiable:
            raise NotImplementedError("tgrad optimizers are not differentiable")
        defaults = dict(lr=lr, betas=tuple(float(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update_group(self, group, params):
        lr, (beta1, beta2) = float(group["lr"]), group["betas"]
        wd, amsgrad = float(group["weight_decay"]), group["amsgrad"]
        states, scalars = [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = tgrad.tensor(0.0)
                state["exp_avg"] = self._state_tensor(p)
                state["exp_avg_sq"] = self._state_tensor(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = self._state_tensor(p)
            t = self._next_step(state)
            scalars.append((lr / (1 - beta1 ** t), (1 - beta2 ** t) ** 0.5))
            states.append([state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"] if amsgrad else None])
        self._launch("adam", group, params, states, scalars=scalars,
                     hyper=(1.0 - beta1, beta2, 1.0 - beta2, float(group["eps"]), wd, 1.0 - lr * wd),
                     weight_decay=wd != 0, amsgrad=amsgrad, decoupled=group["decoupled_weight_decay"])


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
