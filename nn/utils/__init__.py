"""tgrad.utils: ``tgrad.utils.data`` (datasets, samplers and the DataLoader) and ``tgrad.utils.hooks``
(hook handles, module backward hooks), as ``torch.utils``."""
from . import data, hooks

__all__ = ["data", "hooks"]
