"""tgrad.utils: ``tgrad.utils.data`` (datasets and the DataLoader), as ``torch.utils``."""
from . import data, rnn  # noqa: F401
