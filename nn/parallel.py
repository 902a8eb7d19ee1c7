"""``tgrad.nn.parallel``: ``DataParallel`` as a single-device pass-through (tgrad does not replicate a
module over GPUs); ``DistributedDataParallel`` importable, refusing as PyTorch's does without a
process group (tgrad.distributed never has one)."""
from __future__ import annotations

import warnings

from tgrad import distributed

from .modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


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


class DistributedDataParallel(Module):
    """Needs an initialized process group, which tgrad (one process) never has: PyTorch's error."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, **kwargs):
        super().__init__()
        distributed.get_world_size()  # raises PyTorch's ValueError: no process group
