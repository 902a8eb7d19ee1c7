"""tgrad.nn.utils: gradient clipping, parameter/vector conversion and ``rnn`` (padding and packing
sequences), as ``torch.nn.utils``.

(``tgrad.utils`` is ``torch.utils``, the data loading; this package is installed from
``nn/nn_utils`` as ``tgrad.nn.utils``.)"""
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from . import rnn  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameters_to_vector", "vector_to_parameters"]
