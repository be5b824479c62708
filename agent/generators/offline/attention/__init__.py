"""The offline attention engine: FlashAttention-style forward kernels."""
