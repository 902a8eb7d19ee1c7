"""tgrad.nn: modules, ``functional``, ``init`` and ``Parameter``, named as in ``torch.nn``."""
from .parameter import Parameter
from . import functional, init
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import modules

__all__ = ["Parameter", "functional", "init", "modules"] + _modules_all
