"""Loss kernels: elementwise losses reduced in the same launch, and fused cross-entropy/NLL."""
