"""Matrix multiplication (batched, fused epilogues) and small dense linear algebra (Cholesky, triangular
solves, LU with partial pivoting and the solves on its factors)."""
