"""tgrad: a PyTorch-style autograd engine whose every computation is a Triton kernel.

``import tgrad as torch`` runs PyTorch-style autograd code: tensors, ``backward()``, ``no_grad``,
custom Functions, ``tgrad.nn`` and ``tgrad.optim``. CPU tensors run the kernels through Triton's
interpreter; CUDA tensors run them compiled.
"""
import builtins
import importlib

from ._dtype import (Size, bfloat16, bool, double, dtype, float, float16, float32, float64,  # noqa: F401,A004
                     get_default_device, get_default_dtype, half, int, int8, int16, int32, int64, long,
                     set_default_device, set_default_dtype, short, uint8)
from .tensor import Tensor  # noqa: F401
from . import autograd  # noqa: F401
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled, is_inference_mode_enabled  # noqa: F401
from . import ops as _ops
from .ops import *  # noqa: F401,F403
from .ops import (abs, all, any, max, min, pow, round, sum)  # noqa: F401,A004
from . import amp, backends, cpu, cuda, graphs, random, return_types, viz  # noqa: F401
from .amp.autocast_mode import (autocast, get_autocast_dtype, is_autocast_enabled, set_autocast_dtype,  # noqa: F401
                                set_autocast_enabled)
from . import linalg  # noqa: F401
from .linalg_aliases import (cholesky, cholesky_inverse, cholesky_solve, det, inverse, logdet,  # noqa: F401
                             lu_unpack, matrix_exp, pinverse, qr, slogdet, svd)
from .random import get_rng_state, set_rng_state  # noqa: F401
from .printing import set_printoptions  # noqa: F401
from tgrad.kernels.reductions import segment
from tgrad.kernels.runtime.launch import count_launches  # noqa: F401
from .ops.random import Generator  # noqa: F401
from .serialization import load, save  # noqa: F401
from .torch_format import to_torch  # noqa: F401
import torch as _torch

device = _torch.device
# the threads of torch's storage work (copies, fills); the interpreter's kernels run on one thread
set_num_threads, get_num_threads = _torch.set_num_threads, _torch.get_num_threads
set_num_interop_threads, get_num_interop_threads = _torch.set_num_interop_threads, _torch.get_num_interop_threads
__version__ = "0.1.0"


def use_deterministic_algorithms(mode: builtins.bool) -> None:  # tgrad.bool is the dtype
    """On by default in tgrad: scatter-adds on CUDA (embedding and indexing backward, scatter_add)
    sort their keys and sum each destination in a fixed order instead of using float atomics, so
    training is bit-for-bit repeatable. ``False`` allows the faster atomic path."""
    segment.set_deterministic(mode)


def are_deterministic_algorithms_enabled() -> builtins.bool:
    return segment.deterministic_enabled()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


# `import tgrad as torch; torch.nn.Linear` works as with torch, while the core itself still never
# imports nn/optim/utils: they load on first access (tgrad.stubs lists them from here)
_LAZY_SUBMODULES = ("nn", "optim", "utils", "distributions", "accelerator", "onnx", "linalg", "distributed",
                    "compiler", "special")
_LAZY_ATTRIBUTES = {"compile": "compiler"}  # tgrad.compile is tgrad.compiler.compile (built on nn)


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_ATTRIBUTES:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_ATTRIBUTES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
