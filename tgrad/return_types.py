"""Named tuples returned by ops that give values and indices (``tgrad.max(x, 0).values``)."""
from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
min = namedtuple("min", ["values", "indices"])  # noqa: A001
