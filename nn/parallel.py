"""``tgrad.nn.parallel``: ``DataParallel`` as a single-device pass-through (tgrad does not replicate a
module over GPUs); there is no ``DistributedDataParallel`` (no torch.distributed in tgrad)."""
from __future__ import annotations

import warnings

from .modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Runs ``module`` as it is, on the device it is on. Its state_dict keys are ``module.*``, as
    PyTorch's DataParallel's, so checkpoints move between the two."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        warnings.warn("tgrad's DataParallel does not split batches over GPUs: it runs the module on one device "
                      "(a pass-through kept so DataParallel scripts run)", UserWarning, stacklevel=2)
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def __getattr__(name):
    if name == "DistributedDataParallel":
        raise AttributeError("tgrad.nn.parallel has no DistributedDataParallel: tgrad has no torch.distributed "
                             "(multi-process training); train the module directly, or wrap it in DataParallel "
                             "(a single-device pass-through)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
