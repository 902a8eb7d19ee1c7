"""Normalisation kernels: layer norm, batch norm, RMS norm and group norm."""
