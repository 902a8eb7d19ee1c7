"""Indexing kernels: advanced indexing, gather/scatter, nonzero, embedding and one_hot, padding, triangles."""
