"""``tgrad.autograd.grad_mode``, as in PyTorch: the grad-mode context managers (``tgrad.modes``)."""
from ..modes import (_inference_mode_enabled, enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                     is_inference_mode_enabled, no_grad, set_grad_enabled)
