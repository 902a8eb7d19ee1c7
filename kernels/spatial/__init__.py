"""Kernels over spatial dims: convolution (implicit GEMM, im2col/col2im), pooling, interpolation."""
