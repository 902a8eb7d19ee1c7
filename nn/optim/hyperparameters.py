"""``check_hyperparameters``: the constructor checks the optimizers share, with PyTorch's messages."""
from __future__ import annotations

from .optimizer import _check_nonnegative, check_betas

__all__ = ["check_hyperparameters"]

_WHAT = {"lr": "learning rate", "eps": "epsilon value"}


def check_hyperparameters(**values):
    """Checks each keyword in the order given: ``betas`` each in [0, 1), ``rho`` in [0, 1],
    ``differentiable`` false (tgrad's optimizers are not differentiable), any other nonnegative.
    Raises PyTorch's ValueError (NotImplementedError for ``differentiable``) for the first that fails."""
    for name, value in values.items():
        if name == "betas":
            check_betas(value)
        elif name == "rho":
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"Invalid rho value: {value}")
        elif name == "differentiable":
            if value:
                raise NotImplementedError("tgrad optimizers are not differentiable")
        else:
            _check_nonnegative(value, _WHAT.get(name, f"{name} value"))
