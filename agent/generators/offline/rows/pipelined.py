"""Pipelined whole rows: a few programs per SM walk the row tiles while the next tiles' loads land in shared memory."""

from __future__ import annotations

from agent.generators.base import LaunchConfig

from .facts import RowFacts

# What the staged tiles may take of an SM's shared memory (227 KB on an H100 or H200; Triton needs some itself).
STAGED_BYTES = 192 * 1024


def pipelines(strided: bool, total: bool) -> bool:
    """Say whether a kernel can walk its tiles pipelined: rows along the last dim, no partial sums per program."""
    return not strided and not total


def pipelining_applies(facts: RowFacts) -> bool:
    """Say whether the rows may be pipelined: as `pipelines` allows, on CUDA (measured there only)."""
    return pipelines(facts.strided, facts.total) and not facts.ascend


def staged_bytes(config: LaunchConfig, tile: int, facts: RowFacts) -> int:
    """Return the shared memory the pipeliner takes: a buffer per stage for every tensor read along the rows."""
    return config.num_stages * tile * facts.widest * facts.streams


def pipelined_full_tile(facts: RowFacts, tile: int) -> LaunchConfig | None:
    """Return the pipelined configuration for rows that fill the largest whole-row tile alone, where it fits.

    Such a tile leaves one program per SM, which reads nothing while it reduces. On an H200 (docs/results.md),
    softmax over [4096, 32000] fp16 ran at 73% of copy so and at 91% pipelined (three stages, 32 warps); rows of
    half that length were faster as they were (softmax [8192, 16000] bf16: 92% against 83-88%, log_softmax
    [4096, 16000] fp32: 97% against 90%), as were shorter rows and normalizations read with their weights.
    """
    pipelined = LaunchConfig(schedule="whole_row", block_m=1, num_warps=32, num_stages=3, programs_per_sm=1)
    if not pipelining_applies(facts) or staged_bytes(pipelined, tile, facts) > STAGED_BYTES:
        return None
    return pipelined
