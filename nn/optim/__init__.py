"""tgrad.optim: optimizers and learning-rate schedulers, named and behaving as in ``torch.optim``.

Every optimizer step is one fused Triton kernel per parameter group (``tgrad.kernels.optim.step``)."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from .adadelta import Adadelta
from .adamax import Adamax
from .nadam import NAdam
from .radam import RAdam
from .asgd import ASGD
from .rprop import Rprop
from .lbfgs import LBFGS
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
           "Rprop", "LBFGS", "lr_scheduler"]
