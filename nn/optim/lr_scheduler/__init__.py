"""tgrad.optim.lr_scheduler: learning-rate schedulers, following ``torch.optim.lr_scheduler`` step
for step (including its recursive "chainable" formulas, so the sequences of learning rates agree
to the last bit). By family: the base class (``base.py``), functions of the epoch
(``lambdas.py``), closed-form decays (``decay.py``), cosine and cyclic schedules (``cyclic.py``),
the metric-driven ReduceLROnPlateau (``plateau.py``) and schedulers made of schedulers
(``composition.py``)."""
from .base import LRScheduler, _LRScheduler
from .lambdas import LambdaLR, MultiplicativeLR
from .decay import ConstantLR, ExponentialLR, LinearLR, MultiStepLR, PolynomialLR, StepLR
from .cyclic import CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .plateau import ReduceLROnPlateau
from .composition import ChainedScheduler, SequentialLR

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "MultiplicativeLR",
           "MultiStepLR", "ConstantLR", "PolynomialLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau",
           "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "_LRScheduler"]
