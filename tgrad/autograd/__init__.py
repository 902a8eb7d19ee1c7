"""tgrad.autograd: the graph, the engine and grad modes, named as in PyTorch's autograd."""
from .engine import backward, grad  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .grad_mode import is_inference_mode_enabled  # noqa: F401
from .anomaly_mode import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly  # noqa: F401,E501
from .hooks import RemovableHandle  # noqa: F401
from .variable import Variable  # noqa: F401
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401,E402


def __getattr__(name):
    # tgrad.autograd.functional builds on Tensor, which imports this package: loaded on first use
    if name == "functional":
        import importlib
        return importlib.import_module(f"{__name__}.functional")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
