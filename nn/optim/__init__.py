"""tgrad.optim: optimizers and learning-rate schedulers, named and behaving as in ``torch.optim``.

Every optimizer step is one fused Triton kernel per parameter group (``tgrad.kernels.optim``)."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .rmsprop import RMSprop
from .adagrad import Adagrad
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
