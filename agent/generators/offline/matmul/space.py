"""The tiled product's configurations (seed 003): candidates from the shape and dtype, pruned before any run."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.generators.base import LaunchConfig
from agent.generators.offline.render import next_pow2
from agent.generators.offline.space import Space, pruned

TILES_MN = (32, 64, 128, 256)
TILES_K = (32, 64, 128)
WARPS = (4, 8)
STAGES = (2, 3, 4, 5)
GROUP_M = 8
# Shared memory one program may use for its operand ring (H100/H200: 227 KiB per block; A100: 163 KiB).
SHARED_BYTES = 227 * 1024
# float32 accumulator values per thread before registers spill (255 registers, room for addresses and operands).
ACC_PER_THREAD = 128
# Default tiles, largest first: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).
HALF_LADDER = ((128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4))
# Each 16-bit rung's output elements per unit of time, relative to the first (H200): 128x128 from [8192, 3072] @
# [3072, 768] (384 tiles in 0.0731 ms against 192 of 128x256 in 0.0800), 64x128 from the [2049, 1023] x
# [3001, 1023] linear (792 tiles in 0.0585 ms against 204 in 0.0418); 64x64 is an estimate below it.
HALF_RATES = (1.0, 0.82, 0.55, 0.45)
FLOAT_LADDER = ((64, 64, 32, 4, 3), (32, 64, 32, 4, 3), (32, 32, 32, 4, 3))
# Over a short K an epilogue outweighs the product: a tile that lets two programs share an SM (3 stages of 128x128
# operands, 96 KB) runs one's epilogue while the other multiplies. (tile, largest K) per kind of epilogue:
# - one that reads a whole output tile (a residual), 4 warps. x @ w + residual, [8192, K] @ [K, 4096], 128x256 in
#   8 warps against this: H200 K = 128 0.0703 -> 0.0576 ms, K = 256 0.0791 -> 0.0674-0.0681, K = 512 0.0977-0.0988
#   -> 0.0905-0.0910; H100 K = 256 0.0856-0.0864 -> 0.0719-0.0727 (8 warps 0.0748). At K = 768 4% slower.
# - any other work (bias, activation), 8 warps: 4 would hold a 128x128 float32 tile in 128 registers a thread
#   beside the activation's. gelu(linear) on an H100, 128x256 against this: DeiT-Tiny [12608, 192] x [768, 192]
#   0.0396 -> 0.0315 ms, [8192, 256] x [1024, 256] 0.0294 -> 0.0266, DeiT-Small [12608, 384] x [1536, 384] 0.0730
#   -> 0.0636; at K = 512 (T5-small) and 768 (BERT-base) 8-16% slower.
SHORT_K_TILES = {"tile": ((128, 128, 64, 4, 3), 512), "work": ((128, 128, 64, 8, 3), 384)}
# The "work" tile in the persistent TMA kernel: two flattened programs per SM (the halves of a tile stored by TMA
# fit beside two operand rings) run one's epilogue under the other's product, where one warp-specialized 128x256
# program per SM runs them in turn. gelu(linear) on an H100, [M, K] x [4K, K], 128x256 warp-specialized against
# this: T5-small (M 8192, K 512) 0.0631 -> 0.0541 ms, DeiT-Small at 128 images (25216, 384) 0.1216 -> 0.1047,
# BERT-base (8192, 768) 0.1089 -> 0.0940, BERT-large (8192, 1024) 0.1612 -> 0.1468; warp-specialized, two
# programs per SM ran 28-38% slower than flattened (DeiT-Tiny, DeiT-Small by TMA).
SHORT_K_TMA_MAX_K = 1024
# What the product's epilogue does: nothing but a cast (""), read a whole output tile, or other work (a bias, an
# activation, a scale).
Epilogue = Literal["", "tile", "work"]
# From 2^TMA_MIN_FLOPS_LOG2 FLOPs an unbatched product whose epilogue reads no whole tile runs the persistent TMA
# kernel on Hopper (the generated file says why), one program per SM but for the short-K "work" tile's two.
# (Other GPUs have no TMA kernel and run the pointer kernel with the same tile, untested there.)
TMA_MIN_FLOPS_LOG2 = 33
# From here the TMA kernel's descriptors are made on the host, below it in the kernel (the generated file says why).
TMA_HOST_DESCRIPTORS_MIN_FLOPS_LOG2 = 34
# tl.dot takes tiles of at least 16 along each dim.
MIN_TILE = 16


@dataclass(frozen=True)
class ProductFacts:
    """What pruning needs: the largest case's sizes, the operand width and the machine."""

    m: int  # rows of the output, batch folded in where the wrapper folds it
    n: int
    k: int
    batch: int
    itemsize: int  # bytes per operand element (2 for fp16/bf16, 4 for fp32)
    multiprocessors: int

    @property
    def half(self) -> bool:
        """Tell whether the operands are 16-bit (tensor cores; float32 runs IEEE on the CUDA cores)."""
        return self.itemsize == 2


def default_product_config(facts: ProductFacts, weigh_waves: bool = False, epilogue: Epilogue = "") -> LaunchConfig:
    """Return the usual best tile: from a short ladder, the one that gives every SM a tile in the least time.

    16-bit operands (H100, fp16 4096^3): 128x256x64 in 8 warps and 3 stages ran at 0.96x torch.matmul, 128x128 at
    0.89-0.94x; a [1027, 1533] @ [1533, 771] product has 36 such tiles for 132 SMs, and 64x64 ran 2x faster there.
    With `weigh_waves`, among the 16-bit rungs that give every SM a tile, the one with the fewest waves per unit of
    its rate wins (products; the convolution's best tiles on the H200 were ones with part-empty single waves).
    float32 operands run IEEE on the CUDA cores: 64x64x32 in 4 warps. With an `epilogue` ("tile": it reads a whole
    output tile; "work": any other) over a 16-bit K short enough, its SHORT_K_TILES tile wins wherever it gives
    every SM a tile.
    """
    short_tile, short_k = SHORT_K_TILES.get(epilogue, ((), 0))
    if epilogue == "work" and facts.batch == 1 and 2 * facts.m * facts.n * facts.k >= 2**TMA_MIN_FLOPS_LOG2:
        short_k = SHORT_K_TMA_MAX_K  # the persistent TMA kernel, two programs per SM
    if short_tile and facts.half and facts.k <= short_k:
        short = _rung(short_tile, facts)
        if tiles(short, facts) >= facts.multiprocessors:
            return short
    rungs = [_rung(tile, facts) for tile in (HALF_LADDER if facts.half else FLOAT_LADDER)]
    filling = [i for i, rung in enumerate(rungs) if tiles(rung, facts) >= facts.multiprocessors]
    if not filling:
        return rungs[-1]
    if not (weigh_waves and facts.half):
        return rungs[filling[0]]

    def cost(i: int) -> float:
        # Time ~ waves x one tile's time: a smaller tile pays where it fills the last wave of a larger one.
        rung = rungs[i]
        return math.ceil(tiles(rung, facts) / facts.multiprocessors) * rung.block_m * rung.block_size / HALF_RATES[i]

    return rungs[min(filling, key=cost)]


def _rung(tile: tuple[int, int, int, int, int], facts: ProductFacts) -> LaunchConfig:
    # A tile past a small matrix is cut to it, as the wrapper does at run time: the label says what runs.
    bm, bn, bk, warps, stages = tile
    return LaunchConfig(schedule="tiled", block_m=min(bm, max(MIN_TILE, next_pow2(facts.m))),
                        block_size=min(bn, max(MIN_TILE, next_pow2(facts.n))), block_k=bk, group_m=GROUP_M,
                        num_warps=warps, num_stages=stages)


def tiles(config: LaunchConfig, facts: ProductFacts) -> int:
    """Count the output tiles (programs) of a configuration on the facts' largest case."""
    return math.ceil(facts.m / config.block_m) * math.ceil(facts.n / config.block_size) * facts.batch


def shared_bytes(config: LaunchConfig, itemsize: int) -> int:
    """Return the shared memory of a program's operand ring: NUM_STAGES copies of an A and a B tile."""
    return config.num_stages * (config.block_m + config.block_size) * config.block_k * itemsize


def waves(config: LaunchConfig, facts: ProductFacts) -> float:
    """Return the share of the last wave's SMs kept busy (1.0: tiles a multiple of the SMs)."""
    count = tiles(config, facts)
    return count / (math.ceil(count / facts.multiprocessors) * facts.multiprocessors)


def product_space(facts: ProductFacts, preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Enumerate tiles, warps and stages; drop what cannot fit or cannot pay; rank by reuse and wave fill."""
    candidates = [
        LaunchConfig(schedule="tiled", block_m=bm, block_size=bn, block_k=bk, group_m=GROUP_M, num_warps=w,
                     num_stages=s)
        for bm, bn, bk, w, s in itertools.product(TILES_MN, TILES_MN, TILES_K, WARPS, STAGES)
    ]
    return pruned("tiled", candidates, lambda c: drop_reason(c, facts), lambda c: _rank(c, facts), preferred)


def drop_reason(config: LaunchConfig, facts: ProductFacts) -> str | None:
    """Say why a configuration is not worth a run (None to keep it)."""
    if shared_bytes(config, facts.itemsize) > SHARED_BYTES:
        return "operand ring over shared memory"
    threads = config.num_warps * 32
    if config.block_m * config.block_size / threads > ACC_PER_THREAD:
        return "accumulator over the register budget"
    if config.block_m * config.block_size < 64 * threads // 4:
        return "tile too small for the warps"
    if config.block_m > max(2 * MIN_TILE, next_pow2(facts.m)) or config.block_size > max(2 * MIN_TILE,
                                                                                       next_pow2(facts.n)):
        return "tile larger than the matrix"
    if config.block_k > max(2 * MIN_TILE, next_pow2(facts.k)):
        return "K step longer than K"
    if not facts.half and (config.block_m * config.block_size > 128 * 128 or config.block_k > 64):
        return "float32 runs on the CUDA cores: large tiles only spill"
    return None


def _rank(config: LaunchConfig, facts: ProductFacts) -> tuple[float, ...]:
    """Prefer full last waves, then more reuse per byte loaded (larger tiles), then the classic 3-4 stages."""
    reuse = config.block_m * config.block_size / (config.block_m + config.block_size)
    return (-round(waves(config, facts), 1), -reuse, abs(config.num_stages - 3.5), -config.block_k,
            config.num_warps)
