"""The offline matmul engine: tiled products with fused epilogues."""
