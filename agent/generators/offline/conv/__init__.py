"""The offline convolution engine: conv2d as an implicit GEMM."""
