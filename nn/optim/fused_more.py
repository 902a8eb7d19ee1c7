"""The shared step of Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop: per-parameter state made on a
parameter's first step, then one fused launch for the group (``tgrad.kernels.optim_more``)."""
from __future__ import annotations

import torch

from tgrad.kernels.optim_more import fused_step_more
from tgrad.tensor import Tensor
from .optimizer import Optimizer

__all__ = ["FusedMoreOptimizer", "check_betas", "scalar_state"]


def check_betas(betas):
    for i in range(2):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def scalar_state(value: float, device) -> Tensor:
    """A 0-d float32 state tensor (PyTorch's ``step``, ``eta``, ``mu``, ``mu_product``)."""
    return Tensor._wrap(torch.full((), float(value), dtype=torch.float32, device=device))


class FusedMoreOptimizer(Optimizer):
    """Subclasses define ``ALGO``, ``_init_state(group, p, state)`` and
    ``_prepare(group, p, state) -> (states, scalars, flag)`` (which also advances the step), and
    ``_hyper(group) -> (coefficients, constexpr flags)``."""

    ALGO = ""

    def __init__(self, params, defaults):
        if defaults.get("differentiable"):
            raise NotImplementedError("tgrad optimizers are not differentiable")
        if defaults.get("capturable"):
            raise NotImplementedError(f"tgrad's {type(self).__name__} does not support capturable=True "
                                      "(Adam, AdamW and RMSprop do)")
        super().__init__(params, defaults)

    def _update_group(self, group, params, capturing):
        states, scalars, flags = [], [], []
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                self._no_state_during_capture(capturing, type(self).__name__ + " state")
                state["step"] = scalar_state(0.0, p.device if self.ALGO == "asgd" else "cpu")
                self._init_state(group, p, state)
            s, c, f = self._prepare(group, p, state)
            states.append([None if t is None else t._data for t in s])
            scalars.append(c)
            flags.append(f)
        hyper, options = self._hyper(group)
        fused_step_more(self.ALGO, [p._data for p in params], [p.grad._data for p in params], states, scalars,
                        flags, hyper, maximize=group.get("maximize", False), **options)
        for p in params:  # each parameter was written in place
            p._version.value += 1
