"""The row engine's launch configurations worth measuring, pruned by row length and the register budget."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from agent.generators.base import LaunchConfig, Schedule
from agent.generators.offline.render import next_pow2
from agent.generators.offline.space import Space, pruned

from .facts import RowFacts
from .lanes import lanes_filling_the_sms, run_lanes, strided_lanes, strided_read_once, strided_whole_lanes
from .pipelined import STAGED_BYTES, pipelined_full_tile, pipelining_applies, staged_bytes

ROWS_PER_PROGRAM = (1, 2, 4, 8, 16, 32, 64)
CHUNKS = (256, 512, 1024, 2048, 4096, 8192, 16384)
# A strided looped row's step down the reduced dims: a few of its rows at a time across wide lanes (torch.compile's
# pick for the mean over dim 1 of [64, 512, 1024] fp32 on an H200 was 8 rows of 64 lanes on 4 warps).
STRIDED_CHUNKS = (8, 16, 32, 64, 128)
WARPS = (1, 2, 4, 8, 16, 32)
# A pipelined whole row's stages (buffers in shared memory) and programs per SM.
PIPELINE_STAGES = (2, 3, 4)
PIPELINE_PROGRAMS_PER_SM = (1, 2)
# A split row's programs per SM over all its rows' spans.
SPLIT_PROGRAMS_PER_SM = (1, 2, 4, 8, 16)
# A split row's chunk in bytes of the input (4096 fp32 or 8192 fp16 elements).
SPLIT_CHUNK_BYTES = 16384
# fp32 values one thread may hold per live tile before registers spill (a row kernel keeps two or three tiles).
REGISTER_BUDGET = 64
# A whole-row tile holds at most this many elements (the wrapper caps rows per program to stay under it).
MAX_TILE_ELEMENTS = 32768


def _tile_rows_and_chunk(config: LaunchConfig, facts: RowFacts) -> tuple[int, int]:
    """Return the rows and the chunk length of one program's tile, as the wrapper will launch it."""
    if config.schedule == "whole_row":
        chunk = next_pow2(facts.n_reduce)
        return max(1, min(config.block_m, MAX_TILE_ELEMENTS // chunk)), chunk
    return config.block_m, min(config.block_size, next_pow2(facts.n_reduce))


def _tile(config: LaunchConfig, facts: RowFacts) -> int:
    rows, chunk = _tile_rows_and_chunk(config, facts)
    return rows * chunk


def row_programs(facts: RowFacts, block_m: int = 0) -> int:
    """Return the programs an unsplit row schedule launches: one per row, or per tile of strided lanes."""
    lanes = block_m or strided_lanes(facts)
    if not facts.strided:
        return math.ceil(facts.n_lanes / lanes)
    return facts.n_lanes // max(1, facts.n_inner) * math.ceil(facts.n_inner / lanes)


def launched(config: LaunchConfig, facts: RowFacts) -> tuple[int, int]:
    """Return the programs a row schedule's wrapper launches and their tile, as its launch_sizes works them out."""
    rows, chunk = _tile_rows_and_chunk(config, facts)
    programs = row_programs(facts, rows)
    if config.schedule == "split_row":
        # Each row tile's chunks are dealt out to enough programs for PROGRAMS_PER_SM on every SM.
        programs *= max(1, min(_splits(config, facts), math.ceil(facts.n_reduce / chunk)))
    if config.pipelined:
        programs = min(programs, config.programs_per_sm * facts.multiprocessors)
    return programs, rows * chunk


def coalescing_lanes(facts: RowFacts, schedule: Schedule) -> int:
    """Return the fewest lanes a strided tile may take: 128-byte runs, fewer where the default takes fewer."""
    if not facts.strided or facts.ascend:  # measured on CUDA GPUs only
        return 1
    lanes = run_lanes(facts)
    while lanes > 1 and row_programs(facts, lanes) < facts.multiprocessors:
        lanes //= 2  # wide lanes would leave SMs without a program
    # The search starts from the default: a long reduced dim leaves a whole-row tile room for fewer lanes.
    return min(lanes, _tile_rows_and_chunk(default_row_config(facts, schedule), facts)[0])


def few_long_rows(facts: RowFacts) -> bool:
    """Say whether a normalization has too few long rows for a whole-row tile each (under two per SM)."""
    return (not facts.strided and facts.passes >= 3 and facts.n_reduce >= 8192
            and facts.n_lanes < 2 * facts.multiprocessors)


def padded_row(facts: RowFacts) -> bool:
    """Say whether a whole-row tile would be mostly padding on a long row that the looped row reads at most twice."""
    return (not facts.strided and facts.passes <= 2 and 4096 <= facts.n_reduce <= MAX_TILE_ELEMENTS
            and facts.n_reduce < 0.75 * next_pow2(facts.n_reduce))


def streamed_norm_row(facts: RowFacts) -> bool:
    """Say whether an fp32 row of 16-32 KB is reduced once and then written back (l2 normalize, rms_norm)."""
    # Looped in 2048-element chunks, the first pass's loads marked evict_last and the second's evict_first, so the
    # second reads the row from L2 (torch.compile's recipe). H200, [8192, 4096] fp32, 16 warps: l2 normalize 67.2
    # us against 68.5 whole (torch.compile 67.0; H100: 93.4 against 95.2), rms_norm 68.0 against 70.3; [4096, 8192]
    # level (68.0 against 68.3). Not for a softmax, whose loop also takes exponentials (84.1 us against 68.5), nor
    # for a layer_norm's three passes (72.9 against 71.5) or half types (bf16 l2 normalize 46.0 against 36.3).
    return (not facts.strided and facts.itemsize == 4 and facts.levels == 1 and facts.passes == 2 and not facts.online
            and 4096 <= facts.n_reduce <= 8192 and not padded_row(facts))


def default_row_config(facts: RowFacts, schedule: Schedule) -> LaunchConfig:
    """Return a sound first configuration: about 4 to 16 values per thread, enough programs for every SM."""
    config = _default_row_config(facts, schedule)
    if config.block_m > 1 and schedule != "split_row":
        # No more rows per program than leave every SM a program (the search's own rule).
        config = config.model_copy(update={"block_m": min(config.block_m, lanes_filling_the_sms(facts))})
    while config.num_warps > 1 and _tile(config, facts) < 32 * config.num_warps:
        config = config.model_copy(update={"num_warps": config.num_warps // 2})  # a thread per value at least
    if facts.ascend:
        config = config.model_copy(update={"num_warps": 4})  # the only warp count the Ascend space offers
    return config


def _default_split_config(facts: RowFacts) -> LaunchConfig:
    """Take 16 KB chunks and four programs per SM over all the rows' spans."""
    # Measured on an H100: a sum of all 33.5M fp32 elements of [8192, 4096] ran at 80% of the copy bandwidth with
    # 4096-element chunks, 8 warps and 512 programs (60% with 1024, 72% with 256); an L2 norm over [16, 2097152]
    # bf16 at 66% with 8192-element chunks and 16 warps, 42% with 4096 and 8.
    lanes = strided_lanes(facts)
    chunk = min(SPLIT_CHUNK_BYTES // facts.itemsize // lanes, next_pow2(facts.n_reduce))
    config = LaunchConfig(schedule="split_row", block_size=chunk, block_m=lanes, programs_per_sm=4,
                          num_warps=8 if facts.itemsize >= 4 else 16)
    # Where the wrapper would cap the spans at one per chunk ([64, 20000] fp16), fewer programs per SM launch the
    # same grid, and the search space, which drops the capped configurations, then holds the default.
    while config.programs_per_sm > 1 and _drop_reason(config, facts) == "more spans than chunks in a row":
        config = config.model_copy(update={"programs_per_sm": config.programs_per_sm // 2})
    return config


def _least_padded_chunk(n_reduce: int, chunks: tuple[int, ...], most: float, fallback: int) -> int:
    """Return the first chunk whose whole chunks span at most `most` times the row, else the fallback."""
    return next((c for c in chunks if -(-n_reduce // c) * c <= most * n_reduce), fallback)


def _default_row_config(facts: RowFacts, schedule: Schedule) -> LaunchConfig:
    if schedule == "split_row":
        return _default_split_config(facts)
    if schedule == "looped_row":
        if few_long_rows(facts):
            # H100, group_norm over 256 rows of 32768 fp16: 25.7 us in 4096-element chunks with 8 warps.
            return LaunchConfig(schedule="looped_row", block_size=4096, block_m=1, num_warps=8)
        if not facts.strided and facts.passes > 1 and facts.n_reduce >= 32768:
            # Measured on an H100: softmax over 50257 fp32 columns, two passes, 0.369 ms with 16384-element chunks
            # and 32 warps, 0.418 ms with 8192 and 16, 0.593 ms with 2048 and 4: fewer rows in flight leave the
            # first pass's data in L2 for the second. Half types take 8192 and 16 (log_softmax over [4096, 50257]
            # bf16: 0.453 ms, against 0.521 with 16384 and 32 and 0.480 with 4096 and 8).
            if facts.itemsize < 4:
                return LaunchConfig(schedule="looped_row", block_size=8192, block_m=1, num_warps=16)
            return LaunchConfig(schedule="looped_row", block_size=16384, block_m=1, num_warps=32)
        if not facts.strided and facts.n_reduce >= 16384:
            # A one-pass vocabulary row in 4096-element chunks, 64 bytes a thread: on an H200, cross-entropy over
            # 32000 fp16 columns 0.160 ms on 4 warps against 0.175 on 8 (level on an H100: 0.2037 against 0.2028),
            # over 32000 fp32 (mean) on 8 warps 0.265 against 0.268 in 2048-element chunks on 4.
            # Where 4096-element chunks pad the row by more than 5%, 2048 on 4 warps: over 50257 columns (13
            # chunks, the last 27% full) on an H200, label smoothing fp32 0.242 ms against 0.279 (three calls),
            # bf16 0.334 against 0.359, fp16 0.180 against 0.191 (32 bytes a thread in half types).
            chunk = _least_padded_chunk(facts.n_reduce, (4096,), 1.05, 2048)
            warps = 8 if facts.itemsize >= 4 and chunk == 4096 else 4
            return LaunchConfig(schedule="looped_row", block_size=chunk, block_m=1, num_warps=warps)
        if streamed_norm_row(facts):
            return LaunchConfig(schedule="looped_row", block_size=2048, block_m=1, num_warps=16)
        chunk = min(2048 if not facts.strided else 64, next_pow2(facts.n_reduce))
        if padded_row(facts):
            # The chunk that wastes least of the last one (H100, softmax over 5000 fp16 columns: 0.093 ms with
            # 1024-element chunks and 4 warps, 0.111 ms with 2048 and 8).
            chunk = _least_padded_chunk(facts.n_reduce, (2048, 1024), 1.15, 512)
        if strided_read_once(facts):
            # 64 rows of 128-byte runs a step on 8 warps (H200, mean over dim 1 in ms: [8, 4096, 4096] fp32 0.139
            # against 0.384 for the whole row's 4 lanes, fp16 0.075 against 0.343; [16, 2048, 1024] fp32 0.042
            # against 0.063; [64, 2048, 256] fp32 0.041 against 0.069).
            return LaunchConfig(schedule="looped_row", block_size=chunk, block_m=run_lanes(facts), num_warps=8)
        rows = 1 if not facts.strided else 64
        return LaunchConfig(schedule="looped_row", block_size=chunk, block_m=rows, num_warps=4 if chunk >= 1024 else 2)
    row = next_pow2(facts.n_reduce)
    if facts.strided:
        # Measured on an H100: mean over dim 1 of [64, 512, 1024] fp32, 55.5 us with 32 lanes of 512 and 16 warps
        # against 84 us with 8 lanes and 4 warps (the lanes are the contiguous dim: wide tiles coalesce).
        rows = strided_whole_lanes(facts)
    else:
        rows = max(1, min(64, 2048 // row))
    tile = min(rows * row, MAX_TILE_ELEMENTS)
    # Measured on an H100 (docs/results.md), with the streamed loads marked evict_first: 4 warps are best up to
    # 2048-element tiles, 16 above (row sum of [8192, 4096] fp32: 50.0 us against 52.6 with 4), and 32 for a
    # whole vocabulary row (cross-entropy at 32000 fp16 columns: 0.323 ms against 0.372 ms with 16).
    # Each reduction across a row is a round trip through shared memory and a barrier for all its warps: a tile of
    # 16 KB or less written after two reductions, or after one in a half type, takes 8. On an H200, 8 warps against
    # 16 (one call): layer_norm [8192, 4096] fp16 39.5 us against 45.3, instance_norm [8, 256, 64, 64] fp32 22.8
    # against 31.6, softmax [8192, 5000] fp16 52.8 against 57.2, rms_norm bf16 40.4 against 41.7; 4-byte rows
    # reduced once kept 16 (row sum 37.2 against 37.8, l2 normalize, cumsum).
    few_bytes_per_barrier = facts.passes >= 3 or (facts.passes == 2 and facts.itemsize < 4)
    if strided_read_once(facts):
        # 16-32 values a thread: 4 warps for a short row's 2048-4096 values, 16 for [512, 32] (see lanes.py).
        warps = min(32, max(4, tile // 1024))
    elif tile <= 2048:
        warps = 4
    elif tile <= 16384:
        warps = 8 if few_bytes_per_barrier and tile * facts.itemsize <= 16384 else 16
    else:
        warps = 32
    whole = LaunchConfig(schedule="whole_row", block_m=rows, num_warps=warps)
    if rows == 1 and tile == MAX_TILE_ELEMENTS:
        return pipelined_full_tile(facts, tile) or whole
    return whole


def row_space(facts: RowFacts, schedule: Schedule, preferred: Sequence[LaunchConfig] = ()) -> Space:
    """Enumerate a row schedule's configurations, drop what the rules rule out, rank and cap the rest."""
    warps = (4,) if facts.ascend else WARPS
    if schedule == "looped_row":
        chunks = STRIDED_CHUNKS + CHUNKS if facts.strided else CHUNKS
        candidates = [LaunchConfig(schedule="looped_row", block_size=c, block_m=m, num_warps=w)
                      for c, m, w in itertools.product(chunks, ROWS_PER_PROGRAM, warps)]
    elif schedule == "split_row":
        candidates = [LaunchConfig(schedule="split_row", block_size=c, block_m=m, num_warps=w, programs_per_sm=p)
                      for c, m, w, p in itertools.product(CHUNKS, ROWS_PER_PROGRAM, warps, SPLIT_PROGRAMS_PER_SM)]
    else:
        candidates = [LaunchConfig(schedule="whole_row", block_m=m, num_warps=w)
                      for m, w in itertools.product(ROWS_PER_PROGRAM, warps)]
        if pipelining_applies(facts):
            candidates += [LaunchConfig(schedule="whole_row", block_m=1, num_warps=w, num_stages=s, programs_per_sm=p)
                           for w, s, p in itertools.product(warps, PIPELINE_STAGES, PIPELINE_PROGRAMS_PER_SM)]
    least_lanes = 1 if schedule == "split_row" else coalescing_lanes(facts, schedule)  # once, not per candidate
    return pruned(schedule, candidates, lambda c: _drop_reason(c, facts, least_lanes), lambda c: _rank(c, facts),
                  preferred)


def _drop_reason(config: LaunchConfig, facts: RowFacts, least_lanes: int = 1) -> str | None:
    if config.schedule != "whole_row" and config.block_size >= 2 * next_pow2(facts.n_reduce):
        return "chunk longer than the row"
    if config.schedule == "split_row":
        if _splits(config, facts) * config.block_size > 2 * next_pow2(facts.n_reduce):
            return "more spans than chunks in a row"
        if facts.strided and config.block_m < strided_lanes(facts):
            return "lanes narrower than the inner dims (uncoalesced loads)"
    if _tile_rows_and_chunk(config, facts)[0] < least_lanes:
        return "lanes shorter than a 128-byte line (uncoalesced loads)"
    if config.block_m > 2 * next_pow2(facts.n_lanes):
        return "more rows per program than rows"
    if config.schedule == "whole_row" and next_pow2(facts.n_reduce) > MAX_TILE_ELEMENTS:
        return "row too long to hold in registers"
    tile = _tile(config, facts)
    if config.pipelined:
        if not pipelining_applies(facts):
            return "pipelined rows run along the last dim, on CUDA, without per-program partial sums"
        if staged_bytes(config, tile, facts) > STAGED_BYTES:
            return "staged tiles larger than shared memory"
    threads = 32 * config.num_warps
    if not facts.ascend:
        if tile / threads > REGISTER_BUDGET:
            return "too many values per thread (register spills)"
        if tile / threads < 1:
            return "idle threads (tile smaller than the warps)"
    programs = math.ceil(facts.n_lanes / _tile_rows_and_chunk(config, facts)[0])
    if config.schedule == "split_row":
        programs *= min(_splits(config, facts), math.ceil(facts.n_reduce / config.block_size))
        if programs < facts.multiprocessors:
            return "fewer programs than SMs"
    elif programs < facts.multiprocessors and config.block_m > 1:
        return "fewer programs than SMs"
    return None


def _rank(config: LaunchConfig, facts: RowFacts) -> tuple[float, ...]:
    """Order by the usual sweet spot: 8-16 values per thread, 4-8 warps, then fewer rows per program."""
    per_thread = _tile(config, facts) / (32 * config.num_warps)
    rank = (abs(math.log2(max(per_thread, 1)) - 3.5), abs(math.log2(config.num_warps) - 2.5),
            math.log2(config.block_m))
    if config.schedule == "split_row":
        return (*rank[:2], abs(math.log2(config.programs_per_sm) - 2), rank[2])  # then about 4 programs per SM
    return rank


def _splits(config: LaunchConfig, facts: RowFacts) -> int:
    """Return the programs per row a split row's wrapper launches (before the cap of one per chunk)."""
    return math.ceil(config.programs_per_sm * facts.multiprocessors / row_programs(facts, config.block_m))
