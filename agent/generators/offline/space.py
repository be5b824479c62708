"""The launch configurations worth measuring for each schedule, pruned by shape and hardware."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.generators.base import LaunchConfig, Schedule
from agent.generators.offline.render import next_pow2

BLOCK_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3)
PROGRAMS_PER_SM = (1, 2, 4, 8)
ROW_BLOCKS_N = (64, 128, 256, 512, 1024, 2048, 4096)
ROW_BLOCKS_M = (1, 2, 4, 8, 16, 32, 64)
# Each thread should move at least one 128-bit vector per input.
VECTOR_BYTES = 16
# fp32 values a thread may hold across all inputs and the output before registers spill.
REGISTER_BUDGET = 128
# SMs assumed when the job runs without an accelerator (an H100).
REFERENCE_MULTIPROCESSORS = 132
# Ascend's unified buffer holds every input and output tile of a program (192 KiB; keep half free).
ASCEND_TILE_BYTES = 96 * 1024
# One tuning run measures at most this many configurations.
MAX_CONFIGS = 16


@dataclass(frozen=True)
class ShapeFacts:
    """What pruning needs to know about the workload and the machine."""

    largest_elements: int  # output elements of the largest spec case
    n_cols: int  # last output dimension of the largest case
    n_rows: int  # largest_elements // n_cols
    narrowest_itemsize: int  # bytes per element of the narrowest dtype case
    n_tensors: int  # inputs + output
    multiprocessors: int
    ascend: bool = False


@dataclass
class Space:
    """The configurations kept, and how many each pruning rule dropped (for the round record)."""

    schedule: Schedule
    kept: list[LaunchConfig]
    candidates: int
    dropped: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        """Say how the space was pruned, in one line."""
        reasons = ", ".join(f"{n} {why}" for why, n in self.dropped.most_common())
        return f"{self.candidates} {self.schedule} configurations, {len(self.kept)} kept" + (
            f"; dropped: {reasons}" if reasons else ""
        )


def config_space(facts: ShapeFacts, schedule: Schedule, preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Enumerate a schedule's configurations, drop the ones the rules rule out, rank and cap the rest."""
    return pruned(schedule, list(_candidates(schedule, facts)), lambda c: _drop_reason(c, facts),
                  lambda c: _rank(c, facts), preferred)


def pruned(schedule: Schedule, candidates: list[LaunchConfig], drop_reason: Callable[[LaunchConfig], str | None],
           rank: Callable[[LaunchConfig], Any], preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Keep the candidates no rule drops (counting why the others went), ranked, preferred first, capped."""
    space = Space(schedule=schedule, kept=[], candidates=len(candidates))
    for config in candidates:
        reason = drop_reason(config)
        if reason is None:
            space.kept.append(config)
        else:
            space.dropped[reason] += 1
    space.kept.sort(key=rank)
    wanted: list[LaunchConfig] = []  # LaunchConfig is not hashable: no dict.fromkeys
    for config in preferred:
        if config.schedule == schedule and config in space.kept and config not in wanted:
            wanted.append(config)
    space.kept = (wanted + [c for c in space.kept if c not in wanted])[:MAX_CONFIGS]
    return space


def _candidates(schedule: Schedule, facts: ShapeFacts) -> list[LaunchConfig]:
    warps = (4,) if facts.ascend else WARPS  # Ascend has no warps: one value, not a search axis
    if schedule == "rows":
        return [LaunchConfig(schedule="rows", block_size=n, block_m=m, num_warps=w)
                for n, m, w in itertools.product(ROW_BLOCKS_N, ROW_BLOCKS_M, warps)]
    if schedule == "persistent":
        stages = (1,) if facts.ascend else STAGES
        return [LaunchConfig(schedule="persistent", block_size=b, num_warps=w, num_stages=s, programs_per_sm=p)
                for b, w, s, p in itertools.product(BLOCK_SIZES, warps, stages, PROGRAMS_PER_SM)]
    return [LaunchConfig(schedule="flat", block_size=b, num_warps=w) for b, w in itertools.product(BLOCK_SIZES, warps)]


def tile_elements(config: LaunchConfig) -> int:
    """Count the output elements one program computes per tile."""
    return config.block_size * (config.block_m if config.schedule == "rows" else 1)


def _drop_reason(config: LaunchConfig, facts: ShapeFacts) -> str | None:
    tile = tile_elements(config)
    if tile > 2 * next_pow2(facts.largest_elements):
        return "tile larger than the tensor"
    if config.schedule == "rows":
        if config.block_size > next_pow2(facts.n_cols):
            return "BLOCK_N wider than the last dimension"
        if config.block_m > next_pow2(facts.n_rows):
            return "BLOCK_M taller than the rows"
        if not 512 <= tile <= 16384:
            return "row tile outside 512-16384 elements"
        if config.block_size * facts.narrowest_itemsize < 256 <= facts.n_cols * facts.narrowest_itemsize:
            return "BLOCK_N under 256 bytes of a longer row (partial cache lines)"
    if facts.ascend:
        if tile * 4 * facts.n_tensors > ASCEND_TILE_BYTES:
            return "tiles overflow Ascend's unified buffer"
    else:
        per_thread = tile / (32 * config.num_warps)
        if per_thread * facts.narrowest_itemsize < VECTOR_BYTES:
            return "under 16 bytes per thread (no full vector access)"
        if per_thread * facts.n_tensors > REGISTER_BUDGET:
            return "too many values per thread (register spills)"
    tiles = math.ceil(facts.largest_elements / tile)
    if tiles < facts.multiprocessors and tile > BLOCK_SIZES[0] * 4:
        return "fewer tiles than SMs"
    if config.schedule == "persistent" and config.programs_per_sm * facts.multiprocessors >= tiles:
        return "persistent grid as large as the tile count (same as flat)"
    return None


def _rank(config: LaunchConfig, facts: ShapeFacts) -> tuple[float, ...]:
    """Order configurations by a streaming kernel's usual sweet spot: 2-4 vectors per thread, 4-8 warps."""
    per_thread_bytes = tile_elements(config) / (32 * config.num_warps) * facts.narrowest_itemsize
    vectors = per_thread_bytes / VECTOR_BYTES
    row_width = abs(math.log2(config.block_size) - 10) if config.schedule == "rows" else 0.0
    return (abs(math.log2(vectors) - 1.0), row_width, abs(math.log2(config.num_warps) - 2.5),
            config.num_stages, abs(math.log2(config.programs_per_sm) - 2))
