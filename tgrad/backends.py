"""Switches that change numerics, named as PyTorch's (``tgrad.backends.cuda.matmul.allow_tf32``), and
the flags scripts set for cuDNN and MPS (accepted; tgrad uses neither library)."""
from types import SimpleNamespace

import torch as _torch

# TF32 only when asked for: fp32 matmuls on CUDA use IEEE fp32 products unless this is set.
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=_torch.backends.cuda.is_built)

# torch.backends.cudnn: tgrad's convolutions are Triton kernels, not cuDNN, so these flags are kept
# (scripts set and read them) but change nothing; tgrad's kernels are deterministic already.
cudnn = SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)

# torch.backends.mps: Apple's Metal backend; tgrad runs on CPU and CUDA only.
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
