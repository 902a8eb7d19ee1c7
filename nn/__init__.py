"""tgrad.nn: modules, ``functional``, ``init`` and ``Parameter``, named as in ``torch.nn``."""
from .parameter import Parameter
from . import functional, init
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import modules
# torch.nn.utils: nn/utils/ is installed as tgrad.utils; alias it (and its rnn module) under tgrad.nn
# so `tgrad.nn.utils.rnn` is that same module, not a second copy of the directory
import sys as _sys
import tgrad.utils as utils  # noqa: E402
_sys.modules[__name__ + ".utils"] = utils
_sys.modules[__name__ + ".utils.rnn"] = utils.rnn

__all__ = ["Parameter", "functional", "init", "modules"] + _modules_all
