"""The ranges the op-table tests draw each tensor argument of a row from (``tests/ops/
test_op_table.py``): away from poles, kinks and the edges of an op's domain, so that the float64
comparison and gradcheck see the smooth part. Keyed by the row's name; a row not listed draws every
argument from (-2, 2)."""

POSITIVE, UNIT, ABOVE_ONE, WIDE = (0.2, 3.0), (-0.9, 0.9), (1.2, 3.0), (-4.0, 4.0)
DEFAULT = (-2.0, 2.0)

DOMAINS = {
    "log": (POSITIVE,), "sqrt": (POSITIVE,), "rsqrt": (POSITIVE,), "reciprocal": (POSITIVE,),
    "log2": (POSITIVE,), "log10": (POSITIVE,), "log1p": ((-0.8, 2.0),),
    "gelu": (WIDE,), "gelu_tanh": (WIDE,), "atan": (WIDE,), "asinh": (WIDE,),
    "tan": ((-1.2, 1.2),), "asin": (UNIT,), "acos": (UNIT,), "atanh": (UNIT,), "acosh": (ABOVE_ONE,),
    "clamp_min": (DEFAULT, (-1.0, 1.0)), "clamp_max": (DEFAULT, (-1.0, 1.0)),
    "relu6": ((-2.0, 8.0),), "hardsigmoid": ((-5.0, 5.0),), "hardswish": ((-5.0, 5.0),),
    "hypot": (DEFAULT, (0.5, 2.0)), "xlogy": (DEFAULT, POSITIVE),
    "fmod": ((-3.0, 3.0), (0.7, 1.3)), "remainder": ((-3.0, 3.0), (0.7, 1.3)),
    "lerp": (DEFAULT, DEFAULT, (-0.5, 1.5)),
    "lgamma": ((-4.0, 14.0),), "digamma": ((-4.0, 14.0),), "erfinv": ((-0.99, 0.99),), "i0": ((-12.0, 12.0),),
}


def domain(row):
    """``(low, high)`` for each tensor argument of ``row`` (the input, then its operands)."""
    return DOMAINS.get(row.name, (DEFAULT,) * (1 + len(row.operands)))
