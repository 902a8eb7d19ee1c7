"""Helpers every kernel family shares: strided layout and block shapes, the dtype table, fp64 scalars."""
