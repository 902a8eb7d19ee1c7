"""tgrad.utils: ``tgrad.utils.data`` (datasets, samplers and the DataLoader), as ``torch.utils``."""
from . import data  # noqa: F401
