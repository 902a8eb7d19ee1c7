"""tgrad.utils: ``tgrad.utils.data`` (datasets and the DataLoader), as ``torch.utils``; also
``tgrad.nn.utils`` (``nn/__init__.py`` registers this package under that name too): ``rnn``
(padding and packing) and the gradient clipping of ``torch.nn.utils``."""
from . import data, rnn  # noqa: F401
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401  (issue 14, minimal)
