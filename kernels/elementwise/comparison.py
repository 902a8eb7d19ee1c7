"""Comparison, logical and classification formulas, and ``where``, in the conventions of
``arithmetic.py``. They return bool (``tl.int1``) and are not differentiable, except ``where``:

    where    y = c ? a : b            dy/da = [c], dy/db = [not c]
"""
import triton
import triton.language as tl

__all__ = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not", "isnan",
           "isinf", "isfinite", "where", "where_bwd"]


@triton.jit
def eq(a, b, p):
    return a == b

@triton.jit
def ne(a, b, p):
    return a != b

@triton.jit
def lt(a, b, p):
    return a < b

@triton.jit
def le(a, b, p):
    return a <= b

@triton.jit
def gt(a, b, p):
    return a > b

@triton.jit
def ge(a, b, p):
    return a >= b

@triton.jit
def logical_and(a, b, p):
    return (a != 0) & (b != 0)

@triton.jit
def logical_or(a, b, p):
    return (a != 0) | (b != 0)

@triton.jit
def logical_xor(a, b, p):
    return (a != 0) ^ (b != 0)

@triton.jit
def logical_not(x, p):
    return x == 0

@triton.jit
def isnan(x, p):               # NaN is the one value unequal to itself
    return x != x

@triton.jit
def isinf(x, p):
    return (x == float("inf")) | (x == float("-inf"))

@triton.jit
def isfinite(x, p):
    return (x == x) & (x != float("inf")) & (x != float("-inf"))

@triton.jit
def where(c, a, b, p):
    return tl.where(c, a, b)

@triton.jit
def where_bwd(c, g, p):        # y = c ? a : b           dy/da = [c], dy/db = [not c]
    return tl.where(c, g, tl.zeros_like(g)), tl.where(c, tl.zeros_like(g), g)
