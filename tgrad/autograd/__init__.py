"""tgrad.autograd: the graph, the engine and grad modes, named as in PyTorch's autograd."""
from .engine import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from ..modes import (detect_anomaly, enable_grad, inference_mode, is_anomaly_check_nan_enabled,  # noqa: F401
                     is_anomaly_enabled, is_grad_enabled, is_inference_mode_enabled, no_grad, set_detect_anomaly,
                     set_grad_enabled)
from ..tensor import Tensor
from . import engine, hooks
from .hooks import RemovableHandle  # noqa: F401
from .variable import Variable  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401,E402
from . import functional  # noqa: F401,E402

# Tensor's autograd verbs: attached here, so that tensor.py knows nothing of the engine
Tensor.backward = engine.tensor_backward
Tensor.register_hook = hooks.register_tensor_hook
Tensor.register_post_accumulate_grad_hook = hooks.register_post_accumulate_hook
