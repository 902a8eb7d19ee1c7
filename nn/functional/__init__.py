"""``tgrad.nn.functional``: PyTorch's functional API on fused Triton kernels, one module per concept
(mirroring ``nn/modules``); this file only gathers their names.

Each fused op is a ``tgrad.autograd.Function`` named as PyTorch names its node, whose backward is
itself made of differentiable Functions (or the engine's derivative of a composed form), so
higher-order gradients are exact and each derivative is written once.
"""
from . import activation, attention, conv, ctc, dense, distance, grid, loss, margin, nll, normalization, padding, pooling, resample
from . import sparse, stochastic

__all__ = [*activation.__all__, *dense.__all__, *normalization.__all__, *stochastic.__all__, *sparse.__all__,
           *loss.__all__, *margin.__all__, *nll.__all__, *conv.__all__, *pooling.__all__, *padding.__all__, *resample.__all__,
           *attention.__all__, *distance.__all__, *grid.__all__, *ctc.__all__]

from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .conv import *  # noqa: E402,F401,F403
from .ctc import *  # noqa: E402,F401,F403
from .dense import *  # noqa: E402,F401,F403
from .distance import *  # noqa: E402,F401,F403
from .grid import *  # noqa: E402,F401,F403
from .loss import *  # noqa: E402,F401,F403
from .margin import *  # noqa: E402,F401,F403
from .nll import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .padding import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .resample import *  # noqa: E402,F401,F403
from .sparse import *  # noqa: E402,F401,F403
from .stochastic import *  # noqa: E402,F401,F403
