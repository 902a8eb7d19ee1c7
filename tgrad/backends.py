"""Switches that change numerics, named as PyTorch's (``tgrad.backends.cuda.matmul.allow_tf32``)."""
from types import SimpleNamespace

# TF32 only when asked for: fp32 matmuls on CUDA use IEEE fp32 products unless this is set.
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False))
