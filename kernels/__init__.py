"""Triton kernels of tgrad. They take and return torch tensors used purely as storage and know
nothing of ``tgrad.Tensor``; ``tgrad.kernels.launch.launch`` runs each one compiled on CUDA or
interpreted on the CPU."""
from .launch import count_launches, launch_counts  # noqa: F401
