"""The per-element terms a reduction folds (``Reduction.term``: x -> what is summed) and the
finishes applied to a row's folded result (``Reduction.finish``: (value, column, divisor) -> the
result), for ``reduce.REDUCTIONS``."""
import triton
import triton.language as tl

__all__ = ["column", "divide", "magnitude", "root", "root_of_quotient", "square"]


@triton.jit
def magnitude(x):
    return tl.abs(x)


@triton.jit
def square(x):
    return x * x


@triton.jit
def divide(value, col, divisor):
    return value / divisor


@triton.jit
def root(value, col, divisor):
    return tl.sqrt(value)


@triton.jit
def root_of_quotient(value, col, divisor):
    return tl.sqrt(value / divisor)


@triton.jit
def column(value, col, divisor):
    return col
