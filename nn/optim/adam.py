"""Adam and AdamW (PyTorch's updates), with amsgrad, weight decay and maximize. At step t:

    g = -grad if maximize else grad
    Adam: g += weight_decay * p            AdamW: p *= 1 - lr * weight_decay
    m = m + (1 - beta1) (g - m);   v = beta2 v + (1 - beta2) g^2;   vmax = max(vmax, v) (amsgrad)
    p -= lr / (1 - beta1^t) * m / (sqrt(v or vmax) / sqrt(1 - beta2^t) + eps)

With ``capturable=True`` the step count t lives on the parameter's device and the kernel computes
the two bias corrections from it (see ``tgrad.kernels.optim.step``), so a step can be graph-captured.
"""
from __future__ import annotations

import tgrad
from .hyperparameters import check_hyperparameters
from .optimizer import Optimizer, scalar_state

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        check_hyperparameters(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, differentiable=differentiable)
        defaults = dict(lr=lr, betas=tuple(float(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update_group(self, group, params, capturing):
        lr, (beta1, beta2) = float(group["lr"]), group["betas"]
        wd, amsgrad, capturable = float(group["weight_decay"]), group["amsgrad"], group.get("capturable", False)
        states, scalars, steps = [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                self._no_state_during_capture(capturing, "exp_avg, exp_avg_sq")
                # PyTorch's placement: a float32 step on the parameter's device when capturable
                state["step"] = scalar_state(0.0, p.device) if capturable else tgrad.tensor(0.0)
                state["exp_avg"] = self._state_tensor(p)
                state["exp_avg_sq"] = self._state_tensor(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = self._state_tensor(p)
            if capturable:  # the kernel computes the bias corrections from the device step
                steps.append(self._device_step(state, p, capturing))
            else:
                t = self._next_step(state)
                scalars.append((lr / (1 - beta1 ** t), (1 - beta2 ** t) ** 0.5))
            states.append([state["exp_avg"], state["exp_avg_sq"], state["max_exp_avg_sq"] if amsgrad else None])
        hyper = (1.0 - beta1, beta2, 1.0 - beta2, float(group["eps"]), wd, 1.0 - lr * wd)
        self._launch("adam", group, params, states, scalars=scalars or None,
                     hyper=hyper + (lr, beta1) if capturable else hyper, steps=steps if capturable else None,
                     bias_correction=capturable, capturing=capturing, weight_decay=wd != 0, amsgrad=amsgrad,
                     decoupled=group["decoupled_weight_decay"])


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
