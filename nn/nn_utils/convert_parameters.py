"""``parameters_to_vector`` and ``vector_to_parameters``, as ``torch.nn.utils``'s: one flat vector
of every parameter (differentiable: a concatenation of views), and its pieces put back as the
parameters' data."""
from __future__ import annotations

import tgrad
from tgrad.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_device):
    if old_device is None:
        return param.device
    if param.device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_device


def parameters_to_vector(parameters) -> Tensor:
    device, vec = None, []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return tgrad.cat(vec)


def vector_to_parameters(vec, parameters) -> None:
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
