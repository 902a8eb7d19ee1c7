"""tgrad.nn: modules, ``functional``, ``init`` and ``Parameter``, named as in ``torch.nn``."""
from .parameter import Parameter
from . import functional, init
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import modules
from . import parallel
from .parallel import DataParallel

__all__ = ["Parameter", "functional", "init", "modules", "parallel", "DataParallel"] + _modules_all
