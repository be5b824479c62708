"""The attention kernel's configurations: query and key blocks, warps and stages, pruned by memory and registers."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from agent.generators.base import LaunchConfig
from agent.generators.offline.render import next_pow2
from agent.generators.offline.space import Space, pruned

BLOCKS_M = (64, 128)
BLOCKS_N = (32, 64, 128)
WARPS = (4, 8)
STAGES = (2, 3, 4)
# Shared memory one program may use for its key and value ring (H100/H200: 227 KiB per block).
SHARED_BYTES = 227 * 1024
# float32 values per thread for the scores tile and the output accumulator before registers spill.
VALUES_PER_THREAD = 192


@dataclass(frozen=True)
class AttentionFacts:
    """What pruning needs: the largest case's query count, head dims, element width."""

    n_queries: int
    head_d: int
    head_dv: int
    itemsize: int


def default_attention_config(facts: AttentionFacts) -> LaunchConfig:
    """Return the usual best blocks: 128 queries, 3 stages; from head dim 128 8 warps and 128 keys, else 4 and 64."""
    if facts.itemsize == 4:
        return LaunchConfig(schedule="flash", block_m=64, block_size=32, num_warps=4, num_stages=2)
    # 128 keys a block gained 4-7% over 64 with K and V moved by TMA (H200, head dim 128, 2026-11-27).
    if max(facts.head_d, facts.head_dv) >= 128:
        return LaunchConfig(schedule="flash", block_m=128, block_size=128, num_warps=8, num_stages=3)
    return LaunchConfig(schedule="flash", block_m=128, block_size=64, num_warps=4, num_stages=3)


def attention_space(facts: AttentionFacts, preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Enumerate the blocks, warps and stages; drop what does not fit; rank larger query blocks first."""
    candidates = [LaunchConfig(schedule="flash", block_m=bm, block_size=bn, num_warps=w, num_stages=s)
                  for bm, bn, w, s in itertools.product(BLOCKS_M, BLOCKS_N, WARPS, STAGES)]
    return pruned("flash", candidates, lambda c: drop_reason(c, facts),
                  lambda c: (-c.block_m, abs(c.block_size - 64), abs(c.num_stages - 3), c.num_warps), preferred)


def drop_reason(config: LaunchConfig, facts: AttentionFacts) -> str | None:
    """Say why a configuration is not worth a run (None to keep it)."""
    head_d, head_dv = next_pow2(max(16, facts.head_d)), next_pow2(max(16, facts.head_dv))
    ring = config.num_stages * config.block_size * (head_d + head_dv) * facts.itemsize
    if ring + config.block_m * head_d * facts.itemsize > SHARED_BYTES:
        return "key and value ring over shared memory"
    threads = config.num_warps * 32
    if config.block_m * (config.block_size + head_dv) / threads > VALUES_PER_THREAD:
        return "scores and accumulator over the register budget"
    if config.block_m > max(16, next_pow2(facts.n_queries)):
        return "query block larger than the queries"
    return None
