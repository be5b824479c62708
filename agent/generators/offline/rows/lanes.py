"""Lanes of a strided tile: the inner positions a program reads side by side from each row of the reduced dims."""

from __future__ import annotations

from agent.generators.offline.render import next_pow2

from .facts import RowFacts

# A strided tile's lanes should cover a 128-byte line of each row they read (H200, mean over dim 1 of
# [64, 512, 1024] fp32: 32-byte runs 52% of the copy bandwidth, 64-byte 69-77%, 128-byte 79-83%).
STRIDED_RUN_BYTES = 128
# Lanes (inner positions) of a strided tile: the contiguous dim, so wide tiles coalesce.
STRIDED_LANES = 64


def strided_lanes(facts: RowFacts) -> int:
    """Return the lanes of one strided tile (1 for rows along the last dim): up to 64 of the inner positions."""
    return min(STRIDED_LANES, next_pow2(facts.n_inner)) if facts.strided else 1


def run_lanes(facts: RowFacts) -> int:
    """Return the lanes of a strided tile that read each row's 128-byte line whole (32 fp32, 64 half)."""
    return min(STRIDED_RUN_BYTES // facts.itemsize, next_pow2(facts.n_inner))


def strided_read_once(facts: RowFacts) -> bool:
    """Say whether a strided row is reduced once and read once (a sum, mean, max or norm; not a scan or softmax)."""
    return facts.strided and not facts.ascend and facts.passes == 1 and facts.levels == 1


def strided_whole_lanes(facts: RowFacts) -> int:
    """Return a strided whole-row tile's lanes: a 128-byte line per row, more for short rows, at most 16K values."""
    row = next_pow2(facts.n_reduce)
    widest = max(1, min(64, 16384 // row))
    if not strided_read_once(facts):
        # A softmax across a strided dim keeps its narrow whole rows: read once, they beat a looped row read twice
        # (H200, softmax over dim 1 of [16, 2048, 1024] fp32: 0.097 ms with 8 lanes, 0.119-0.246 looped).
        return widest
    # One read of each row: 128-byte runs, and tiles of at least 2048 values for short rows (H200, sum over dim 1
    # of [256, 128, 1024] fp32: 32 lanes on 4 warps 0.0389 ms, 64 lanes on 16 as before 0.0508).
    return min(widest, max(run_lanes(facts), 2048 // row), next_pow2(facts.n_inner))


def lanes_filling_the_sms(facts: RowFacts) -> int:
    """Return the most rows or lanes per program (a power of two) that still leave every SM a program."""
    per_sm = max(1, facts.n_lanes // max(1, facts.multiprocessors))
    return 1 << (per_sm.bit_length() - 1)


def narrow_strided_row(facts: RowFacts) -> bool:
    """Say whether a strided row read once is too long for a whole-row tile of 128-byte runs that fill the SMs."""
    # Where the SMs' share cuts the lanes below a run, the looped row would read short runs too (no gain measured).
    return (strided_read_once(facts) and lanes_filling_the_sms(facts) >= run_lanes(facts)
            and strided_whole_lanes(facts) < run_lanes(facts))
