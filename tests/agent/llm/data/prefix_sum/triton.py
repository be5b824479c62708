"""Inclusive prefix sum along the last dimension, one program per row."""

import os

import torch


def resolve_device() -> str:
    """Pick cuda, npu or cpu at run time; KERNELGEN_DEVICE overrides the choice."""
    wanted = os.environ.get("KERNELGEN_DEVICE", "auto")
    if wanted != "auto":
        return wanted
    if torch.cuda.is_available():
        return "cuda"
    try:
        import torch_npu  # noqa: F401

        if torch.npu.is_available():
            return "npu"
    except ImportError:
        pass
    return "cpu"


DEVICE = resolve_device()
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

BLOCK_SIZE = 1024
NUM_WARPS = 4


@triton.jit
def prefix_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    """Scan one row tile by tile, carrying the running total in float32."""
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        values = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.cumsum(values, axis=0) + carry
        tl.store(out_ptr + base + cols, scanned.to(out_ptr.dtype.element_ty), mask=mask)
        carry = carry + tl.sum(values, axis=0)


def prefix_sum(x):
    """Return the inclusive prefix sum of x along its last dimension."""
    x = x.contiguous()
    out = torch.empty_like(x)
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    prefix_sum_kernel[(rows,)](x, out, n_cols, BLOCK_SIZE=BLOCK_SIZE, num_warps=NUM_WARPS)
    return out
