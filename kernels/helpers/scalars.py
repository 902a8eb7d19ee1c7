"""Passing fp64 scalars to kernels exactly.

Triton types a Python float argument as fp32, both compiled and interpreted, so ``0.1`` would lose
precision before an fp64 kernel sees it. Scalars therefore travel as the int64 holding their IEEE
binary64 bits and are reinterpreted inside the kernel."""
import struct

import triton
import triton.language as tl


def f64_bits(x: float) -> int:
    """The IEEE-754 binary64 bits of ``float(x)`` as a signed 64-bit int (pair of ``as_f64``)."""
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


@triton.jit
def as_f64(bits):
    """The fp64 scalar whose IEEE bits are ``bits``. Small bit patterns arrive typed i32 (or as a
    constexpr), so widen to i64 first: the integer's value is the bit pattern."""
    return tl.to_tensor(bits).to(tl.int64).to(tl.float64, bitcast=True)
