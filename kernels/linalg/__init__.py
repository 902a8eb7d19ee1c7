"""Matrix multiplication (batched, fused epilogues) and small dense linear algebra (Cholesky, triangular
solves)."""
