"""The one table from torch dtypes to the Triton dtypes kernels compute in.

fp16/bf16 are computed in fp32 (their rounding happens once, on store); bool stays ``tl.int1`` so
masks and ``where`` conditions keep their meaning; the other dtypes are computed as themselves."""
from __future__ import annotations

import torch
import triton.language as tl

__all__ = ["COMPUTE_DTYPES", "compute_dtype", "accumulate_dtype"]

COMPUTE_DTYPES = {torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float32,
                  torch.bfloat16: tl.float32, torch.int64: tl.int64, torch.int32: tl.int32,
                  torch.int16: tl.int16, torch.int8: tl.int8, torch.uint8: tl.uint8, torch.bool: tl.int1}


def compute_dtype(dtype: torch.dtype):
    """The Triton dtype a kernel computes ``dtype`` values in."""
    return COMPUTE_DTYPES[dtype]


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The torch dtype of a float accumulator (partial sums) for ``dtype`` results: fp64 for fp64,
    fp32 otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32
