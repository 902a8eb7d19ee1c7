"""tgrad.nn: modules, ``functional``, ``init`` and ``Parameter``, named as in ``torch.nn``."""
import sys

from .parameter import Parameter
from . import functional, init
from . import nn_utils as utils
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from . import modules
from . import parallel
from .parallel import DataParallel

# torch.nn.utils is tgrad.nn.utils, kept in nn/nn_utils because nn/utils is tgrad.utils (torch.utils, data
# loading) and would shadow it. The alias (with nn_utils' submodules, all imported by its __init__) makes
# `import tgrad.nn.utils.X` find the modules already loaded instead of loading nn/utils or a second copy.
for _name, _module in list(sys.modules.items()):
    if _name == __name__ + ".nn_utils" or _name.startswith(__name__ + ".nn_utils."):
        sys.modules[__name__ + ".utils" + _name[len(__name__ + ".nn_utils"):]] = _module

__all__ = ["Parameter", "functional", "init", "modules", "utils", "parallel", "DataParallel"] + _modules_all
