"""The attention kernel's configurations: query and key blocks, warps and stages, pruned by memory and registers."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

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
    """What pruning needs: the largest case's query count, head dims, element width, the mask's (0: no mask)."""

    n_queries: int
    head_d: int
    head_dv: int
    itemsize: int
    mask_itemsize: int = 0


def default_attention_config(facts: AttentionFacts) -> LaunchConfig:
    """Return the usual best blocks: 128 queries, 3 stages; from head dim 128 8 warps and 128 keys, else 4 and 64."""
    if facts.itemsize == 4:
        return LaunchConfig(schedule="flash", block_m=64, block_size=32, num_warps=4, num_stages=2)
    # 128 keys a block gained 4-7% over 64 with K and V moved by TMA (H200, head dim 128, 2026-11-27). A mask's
    # tiles take shared memory too: then the first that fits of 64 keys a block, 2 stages, 64 queries.
    if max(facts.head_d, facts.head_dv) >= 128:
        choices = [(128, 128, 8, 3), (128, 64, 8, 3), (128, 64, 8, 2), (64, 64, 4, 2)]
    else:
        choices = [(128, 64, 4, 3), (128, 64, 4, 2), (64, 64, 4, 2)]
    configs = [LaunchConfig(schedule="flash", block_m=m, block_size=n, num_warps=w, num_stages=s)
               for m, n, w, s in choices]
    return next((c for c in configs if shared_bytes(c, facts) <= SHARED_BYTES), configs[-1])


def attention_space(facts: AttentionFacts, preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Enumerate the blocks, warps and stages; drop what does not fit; rank larger query blocks first."""
    candidates = [LaunchConfig(schedule="flash", block_m=bm, block_size=bn, num_warps=w, num_stages=s)
                  for bm, bn, w, s in itertools.product(BLOCKS_M, BLOCKS_N, WARPS, STAGES)]
    return pruned("flash", candidates, lambda c: drop_reason(c, facts),
                  lambda c: (-c.block_m, abs(c.block_size - 64), abs(c.num_stages - 3), c.num_warps), preferred)


def shared_bytes(config: LaunchConfig, facts: AttentionFacts) -> int:
    """Estimate one program's shared memory: the query tile, the key and value ring, and a mask tile a stage."""
    head_d, head_dv = next_pow2(max(16, facts.head_d)), next_pow2(max(16, facts.head_dv))
    ring = config.num_stages * config.block_size * (head_d + head_dv) * facts.itemsize
    mask_tiles = config.num_stages * config.block_m * config.block_size * facts.mask_itemsize
    return ring + config.block_m * head_d * facts.itemsize + mask_tiles


def walks_tiles(config: LaunchConfig, facts: AttentionFacts, block_m: int, causal: bool) -> bool:
    """Say whether the wrapper starts one program per SM that walks the tiles (as its launch_sizes decides)."""
    # Mirrors the generated file: not causal, and a program's query tile and key and value ring (the mask's tiles
    # not counted) over half the SM, at the query block the wrapper clamps to.
    ring = shared_bytes(config.model_copy(update={"block_m": block_m}), replace(facts, mask_itemsize=0))
    return not causal and 2 * ring > SHARED_BYTES


def drop_reason(config: LaunchConfig, facts: AttentionFacts) -> str | None:
    """Say why a configuration is not worth a run (None to keep it)."""
    head_dv = next_pow2(max(16, facts.head_dv))
    if shared_bytes(config, facts) > SHARED_BYTES:
        return "key and value ring over shared memory" + (" with the mask's tiles" if facts.mask_itemsize else "")
    threads = config.num_warps * 32
    if config.block_m * (config.block_size + head_dv) / threads > VALUES_PER_THREAD:
        return "scores and accumulator over the register budget"
    if config.block_m > max(16, next_pow2(facts.n_queries)):
        return "query block larger than the queries"
    return None
