"""The pruned launch-configuration space: what each rule drops, what it keeps, and how the rest is ordered."""

import math

import pytest

from agent.generators.base import LaunchConfig, Schedule
from agent.generators.offline.elementwise import ElementwiseGenerator, shape_facts
from agent.generators.offline.space import (
    ASCEND_TILE_BYTES,
    MAX_CONFIGS,
    REGISTER_BUDGET,
    VECTOR_BYTES,
    ShapeFacts,
    Space,
    config_space,
    tile_elements,
)
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo

SCHEDULES: tuple[Schedule, ...] = ("flat", "rows", "persistent")
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", multiprocessors=132)
ASCEND = DeviceInfo(kind="npu", name="Ascend910B", multiprocessors=40)

# fused bias-add + GELU on x [8192, 4096] fp16 (x, bias, out) on an H200.
BIG_FP16 = ShapeFacts(largest_elements=8192 * 4096, n_cols=4096, n_rows=8192, narrowest_itemsize=2, n_tensors=3,
                      multiprocessors=132)
BIG_FP32 = ShapeFacts(largest_elements=8192 * 4096, n_cols=4096, n_rows=8192, narrowest_itemsize=4, n_tensors=3,
                      multiprocessors=132)
# The same op on a tiny x [64, 1000] fp16: 64 000 elements, fewer than one 512-element tile per SM.
TINY_FP16 = ShapeFacts(largest_elements=64 * 1000, n_cols=1000, n_rows=64, narrowest_itemsize=2, n_tensors=3,
                       multiprocessors=132)
# A short-row tensor [65536, 64] fp16: a whole row is 128 bytes, under one 256-byte span.
SHORT_ROWS = ShapeFacts(largest_elements=65536 * 64, n_cols=64, n_rows=65536, narrowest_itemsize=2, n_tensors=3,
                        multiprocessors=132)
ASCEND_BIG = ShapeFacts(largest_elements=8192 * 4096, n_cols=4096, n_rows=8192, narrowest_itemsize=2, n_tensors=3,
                        multiprocessors=40, ascend=True)
ALL_FACTS = {"big fp16": BIG_FP16, "big fp32": BIG_FP32, "tiny fp16": TINY_FP16, "short rows": SHORT_ROWS,
             "ascend": ASCEND_BIG}
GRID_SIZES = {"flat": 8 * 5, "rows": 7 * 7 * 5, "persistent": 8 * 5 * 3 * 4}
ASCEND_GRID_SIZES = {"flat": 8, "rows": 7 * 7, "persistent": 8 * 4}


def _per_thread(config: LaunchConfig) -> float:
    return tile_elements(config) / (32 * config.num_warps)


def _flat(block_size: int, num_warps: int) -> LaunchConfig:
    return LaunchConfig(schedule="flat", block_size=block_size, num_warps=num_warps)


def _rows(block_n: int, block_m: int, num_warps: int) -> LaunchConfig:
    return LaunchConfig(schedule="rows", block_size=block_n, block_m=block_m, num_warps=num_warps)


def _kept_uncapped(facts: ShapeFacts, schedule: Schedule, config: LaunchConfig) -> bool:
    """Tell whether a config survives pruning, whatever its rank (preferred survivors come first, past the cap)."""
    return config in config_space(facts, schedule, preferred=[config]).kept


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_kept_cuda_configs_move_full_vectors_without_spilling(schedule: Schedule) -> None:
    for name, facts in ALL_FACTS.items():
        if facts.ascend:
            continue
        for config in config_space(facts, schedule).kept:
            per_thread = _per_thread(config)
            assert per_thread * facts.narrowest_itemsize >= VECTOR_BYTES, (name, config.label())
            assert per_thread * facts.n_tensors <= REGISTER_BUDGET, (name, config.label())
            tiles = math.ceil(facts.largest_elements / tile_elements(config))
            assert tiles >= facts.multiprocessors or tile_elements(config) <= 512, (name, config.label())
            if schedule == "persistent":
                assert config.programs_per_sm * facts.multiprocessors < tiles, (name, config.label())


def test_big_fp16_flat_drops_thin_and_fat_threads_only() -> None:
    space = config_space(BIG_FP16, "flat")
    assert space.candidates == GRID_SIZES["flat"]
    # 128 elements over 4 warps is one fp16 value (2 bytes) per thread; 16384 over 1 warp is 512 values.
    assert _flat(128, 4) not in space.kept
    assert _flat(16384, 1) not in space.kept
    assert set(space.dropped) == {"under 16 bytes per thread (no full vector access)",
                                  "too many values per thread (register spills)"}
    assert _flat(1024, 4) in space.kept  # the generator's default: 8 fp16 values, one 16-byte vector per thread
    # The usual sweet spot ranks first: two 16-byte vectors per thread.
    first = space.kept[0]
    assert _per_thread(first) * BIG_FP16.narrowest_itemsize == 2 * VECTOR_BYTES
    assert first.num_warps in (4, 8)


def test_vector_width_rule_depends_on_the_narrowest_dtype() -> None:
    # 128 elements on one warp: 4 values per thread, 16 bytes in fp32 but only 8 in fp16.
    thin = _flat(128, 1)
    assert _kept_uncapped(BIG_FP32, "flat", thin)
    assert not _kept_uncapped(BIG_FP16, "flat", thin)
    # 8192 elements on 4 warps: 64 values per thread; with three tensors that is 192 registers.
    fat = _flat(8192, 4)
    assert not _kept_uncapped(BIG_FP32, "flat", fat)
    assert not _kept_uncapped(BIG_FP16, "flat", fat)
    assert (config_space(BIG_FP16, "flat").dropped["under 16 bytes per thread (no full vector access)"]
            > config_space(BIG_FP32, "flat").dropped["under 16 bytes per thread (no full vector access)"])


def test_big_rows_tiles_stay_in_range_and_cover_cache_lines() -> None:
    space = config_space(BIG_FP16, "rows")
    assert space.candidates == GRID_SIZES["rows"]
    assert space.kept
    for config in space.kept:
        assert 512 <= tile_elements(config) <= 16384, config.label()
        assert config.block_size <= 4096, config.label()
        assert config.block_size * BIG_FP16.narrowest_itemsize >= 256, config.label()
    assert space.dropped["row tile outside 512-16384 elements"] > 0
    # 64 fp16 columns are 128 bytes: partial cache lines on a 4096-wide row...
    assert not _kept_uncapped(BIG_FP16, "rows", _rows(64, 16, 2))
    assert space.dropped["BLOCK_N under 256 bytes of a longer row (partial cache lines)"] > 0
    # ...but the whole row when the row is only 64 wide.
    assert _kept_uncapped(SHORT_ROWS, "rows", _rows(64, 16, 2))


def test_tiny_tensor_keeps_small_tiles_that_fill_the_machine() -> None:
    flat = config_space(TINY_FP16, "flat")
    assert flat.kept
    assert all(c.block_size <= 512 for c in flat.kept)
    assert flat.dropped["fewer tiles than SMs"] > 0
    rows = config_space(TINY_FP16, "rows")
    assert rows.kept
    for config in rows.kept:
        assert config.block_size <= 1024, config.label()  # never wider than next_pow2(1000)
        assert config.block_m <= 64, config.label()
        assert tile_elements(config) <= 512, config.label()
    assert rows.dropped["BLOCK_N wider than the last dimension"] > 0
    assert rows.dropped["tile larger than the tensor"] > 0
    persistent = config_space(TINY_FP16, "persistent")
    assert persistent.dropped["persistent grid as large as the tile count (same as flat)"] > 0
    # A 1-D tensor of 210 elements has no 1024-element tiles, and too few tiles for a persistent grid.
    small = ShapeFacts(largest_elements=210, n_cols=210, n_rows=1, narrowest_itemsize=4, n_tensors=2,
                       multiprocessors=132)
    assert not _kept_uncapped(small, "flat", _flat(1024, 8))
    assert config_space(small, "flat").dropped["tile larger than the tensor"] > 0
    assert config_space(small, "persistent").kept == []


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_ascend_has_one_warp_value_no_stages_and_fits_the_unified_buffer(schedule: Schedule) -> None:
    space = config_space(ASCEND_BIG, schedule)
    assert space.candidates == ASCEND_GRID_SIZES[schedule]
    assert space.kept
    assert {c.num_warps for c in space.kept} == {4}
    assert {c.num_stages for c in space.kept} == {1}
    for config in space.kept:
        assert tile_elements(config) * 4 * ASCEND_BIG.n_tensors <= ASCEND_TILE_BYTES, config.label()
    assert space.dropped["tiles overflow Ascend's unified buffer"] > 0
    # No warps on Ascend, so the CUDA per-thread rules do not apply.
    assert "under 16 bytes per thread (no full vector access)" not in space.dropped
    assert "too many values per thread (register spills)" not in space.dropped


def test_ascend_buffer_limit_counts_every_tensor() -> None:
    big_tile = _flat(16384, 4)  # 64 KiB of fp32 per tensor
    two = ShapeFacts(largest_elements=1 << 25, n_cols=1 << 25, n_rows=1, narrowest_itemsize=2, n_tensors=2,
                     multiprocessors=40, ascend=True)
    assert not _kept_uncapped(two, "flat", big_tile)  # 128 KiB > 96 KiB
    assert _kept_uncapped(two, "flat", _flat(8192, 4))  # 64 KiB fits
    assert _kept_uncapped(ASCEND_BIG, "flat", _flat(128, 4))  # a tile CUDA would drop for thin threads


@pytest.mark.parametrize("facts_name", list(ALL_FACTS))
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_dropped_and_kept_add_up_to_the_candidates(facts_name: str, schedule: Schedule) -> None:
    facts = ALL_FACTS[facts_name]
    space = config_space(facts, schedule)
    grid = ASCEND_GRID_SIZES if facts.ascend else GRID_SIZES
    assert space.candidates == grid[schedule]
    survivors = space.candidates - sum(space.dropped.values())
    assert len(space.kept) == min(survivors, MAX_CONFIGS)
    assert len(set(map(LaunchConfig.label, space.kept))) == len(space.kept)
    assert all(c.schedule == schedule for c in space.kept)


def test_the_cap_keeps_the_best_ranked_configs() -> None:
    space = config_space(BIG_FP16, "persistent")
    assert space.candidates - sum(space.dropped.values()) > MAX_CONFIGS
    assert len(space.kept) == MAX_CONFIGS
    # The cap cuts the tail of the ranking: a survivor far from the sweet spot (1 warp, 3 stages) is left out.
    outlier = LaunchConfig(schedule="persistent", block_size=256, num_warps=1, num_stages=3, programs_per_sm=1)
    assert _kept_uncapped(BIG_FP16, "persistent", outlier)
    assert outlier not in space.kept


def test_preferred_survivors_come_first_in_their_order() -> None:
    plain = config_space(BIG_FP16, "flat")
    last, second_last = plain.kept[-1], plain.kept[-2]
    pruned = _flat(128, 4)
    other_schedule = _rows(1024, 2, 4)
    space = config_space(BIG_FP16, "flat", preferred=[last, pruned, other_schedule, second_last])
    assert space.kept[:2] == [last, second_last]
    assert pruned not in space.kept  # a preferred config still has to pass the rules
    assert other_schedule not in space.kept
    assert sorted(map(LaunchConfig.label, space.kept)) == sorted(map(LaunchConfig.label, plain.kept))


def test_preferred_config_beyond_the_cap_is_still_measured() -> None:
    outlier = LaunchConfig(schedule="persistent", block_size=256, num_warps=1, num_stages=3, programs_per_sm=1)
    space = config_space(BIG_FP16, "persistent", preferred=[outlier])
    assert space.kept[0] == outlier
    assert len(space.kept) == MAX_CONFIGS


def test_summary_names_every_reason_with_its_count() -> None:
    space = config_space(TINY_FP16, "rows")
    text = space.summary()
    assert text.startswith(f"{space.candidates} rows configurations, {len(space.kept)} kept; dropped: ")
    assert len(space.dropped) >= 5
    for reason, count in space.dropped.items():
        assert f"{count} {reason}" in text
    # The commonest reason is named first.
    top_reason, top_count = space.dropped.most_common(1)[0]
    assert text.split("dropped: ")[1].startswith(f"{top_count} {top_reason}")
    untouched = Space(schedule="flat", kept=[_flat(1024, 4)], candidates=1)
    assert untouched.summary() == "1 flat configurations, 1 kept"


def test_shape_facts_come_from_the_spec_and_the_device() -> None:
    spec = read_spec("fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]")
    assert shape_facts(spec, H200) == BIG_FP16
    assert shape_facts(spec, ASCEND) == ShapeFacts(
        largest_elements=8192 * 4096, n_cols=4096, n_rows=8192, narrowest_itemsize=2, n_tensors=3,
        multiprocessors=40, ascend=True)
    mixed = read_spec("fused bias-add + GELU, x [16, 300] fp32 and fp16, bias [300]")
    assert shape_facts(mixed, H200).narrowest_itemsize == 2
    unknown = DeviceInfo(kind="cpu", name="CPU, Triton interpreter")
    assert shape_facts(spec, unknown).multiprocessors == 132  # pruned as for an H100 when no accelerator is here
    generated = ElementwiseGenerator().config_space(spec, "rows", H200)
    assert generated.kept == config_space(BIG_FP16, "rows").kept
