"""``LRScheduler``, the base of every learning-rate scheduler, as ``torch.optim.lr_scheduler``'s:
``step()`` advances ``last_epoch`` and writes each group's new ``lr``; ``get_last_lr()`` returns what
was written. Learning rates are host-side Python floats: nothing here touches a tensor.

Its instance attributes are PyTorch's (``state_dict()`` holds the same keys), and so are the hooks
composite schedulers use: ``_initial_step()`` (the step a constructor makes) and
``_update_lr(epoch)`` (a step without the ordering checks, which ``SequentialLR`` calls).
"""
from __future__ import annotations

import warnings
import weakref
from functools import wraps

from ..optimizer import Optimizer

__all__ = ["LRScheduler", "_LRScheduler", "EPOCH_DEPRECATION_WARNING", "warn_get_lr_called_outside_step"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def warn_get_lr_called_outside_step(scheduler):
    """PyTorch's warning when ``get_lr()`` (which may change state) is called from user code."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=3)


class LRScheduler:
    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0.\nThis typically happens when:\n1. You're "
                                   "trying to resume training from a checkpoint but haven't properly loaded the "
                                   "optimizer state\n2. You're using last_epoch >= 0 for a fresh training run "
                                   "(not recommended)")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._wrap_optimizer_step()
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _wrap_optimizer_step(self):
        """Mark the optimizer's step so ``step()`` can warn when the scheduler runs first."""
        opt = self.optimizer
        if hasattr(opt.step, "_wrapped_by_lr_sched"):
            return
        opt_ref, func = weakref.ref(opt), opt.step.__func__

        @wraps(func)
        def wrapper(*args, **kwargs):
            o = opt_ref()
            o._opt_called = True
            return func.__get__(o, o.__class__)(*args, **kwargs)

        wrapper._wrapped_by_lr_sched = True
        opt.step = wrapper

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict):
        self.__dict__.update(state_dict)

    def _state_dict_nesting(self, key, save):
        """The state dict with the list attribute ``key`` saved item by item (``save(item)``)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", key)}
        state[key] = [save(item) for item in getattr(self, key)]
        return state

    def _load_state_dict_nesting(self, state_dict, key, load):
        """Loads what ``_state_dict_nesting`` saved: ``load(item, saved)`` for each item of ``key``."""
        state_dict = dict(state_dict)
        saved = state_dict.pop(key)
        self.__dict__.update(state_dict)
        for item, item_state in zip(getattr(self, key), saved):
            load(item, item_state)

    def get_last_lr(self) -> list:
        return self._last_lr

    def get_lr(self) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def _group_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def step(self, epoch=None):
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
                              "and later, you should call them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the "
                              "first value of the learning rate schedule. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            self._set_lrs(self.get_lr)
        else:
            self.last_epoch = epoch
            self._set_lrs(self._get_closed_form_lr if hasattr(self, "_get_closed_form_lr") else self.get_lr)

    def _set_lrs(self, compute):
        """Every group's lr := ``compute()``, called as from ``step`` (so ``get_lr`` does not warn)."""
        self._get_lr_called_within_step = True
        try:
            values = compute()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._group_lrs()


class _LRScheduler(LRScheduler):
    """The old name of ``LRScheduler`` (custom schedulers still subclass it)."""
