"""Schedules given as functions of the epoch: LambdaLR (lr = base_lr * f(epoch)) and
MultiplicativeLR (lr *= f(epoch) every step), as PyTorch's. Their state dicts keep the attributes of
callable objects (plain functions are not state)."""
from __future__ import annotations

import types

from .base import LRScheduler, warn_get_lr_called_outside_step

__all__ = ["LambdaLR", "MultiplicativeLR"]


def _lambda_state(fn):
    """A callable object's attributes; None for a plain function (not state)."""
    return None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()


def _load_lambda_state(fn, saved):
    if saved is not None:
        fn.__dict__.update(saved)


class _LambdaScheduler(LRScheduler):
    """One ``lr_lambda`` per parameter group (one function repeated, or a list of that length)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        self._check_lambdas()
        super().__init__(optimizer, last_epoch)

    def _check_lambdas(self):
        pass

    def state_dict(self):
        return self._state_dict_nesting("lr_lambdas", _lambda_state)

    def load_state_dict(self, state_dict):
        self._load_state_dict_nesting(state_dict, "lr_lambdas", _load_lambda_state)


class LambdaLR(_LambdaScheduler):
    """lr = base_lr * lr_lambda(epoch)."""

    def get_lr(self):
        warn_get_lr_called_outside_step(self)
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr = lr * lr_lambda(epoch) at every step."""

    def _check_lambdas(self):
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")

    def get_lr(self):
        warn_get_lr_called_outside_step(self)
        if self._is_initial:
            return self._group_lrs()
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, self.optimizer.param_groups)]
