"""Roofline placement of measured versions, checked against rounds recorded on an NVIDIA H200."""

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from agent.generators.base import LaunchConfig
from agent.roofline import COMPUTE_SM_PCT, LAUNCH_BOUND_MS, MIN_TILES_PER_SM, launched_tiles, place

RECORDED = json.loads((Path(__file__).parent / "data" / "h200_bias_add_gelu.json").read_text())
JOB = RECORDED["jobs"]["A_poor_start_target_5"]
PEAK_TFLOPS = JOB["device"]["peak_tflops"]  # 67.0
SMS = JOB["device"]["multiprocessors"]  # 132
ELEMENTS = 8192 * 4096  # x [8192, 4096] fp16


def _round(index: int) -> dict[str, Any]:
    return copy.deepcopy(JOB["rounds"][index])


def _counters(index: int) -> dict[str, float]:
    return _round(index)["profile"]["counters"]


def _tiles(index: int) -> int:
    return int(_counters(index)["grid_size"])


def _scaled(performance: dict[str, Any], factor: float) -> dict[str, Any]:
    """Shrink every case's time and bytes by a factor (same bandwidth and FLOP rate)."""
    scaled = copy.deepcopy(performance)
    for case in scaled["cases"]:
        case["triton_ms"] *= factor
        case["bytes"] = int(case["bytes"] * factor)
    return scaled


def test_poor_start_places_memory_bound_as_recorded() -> None:
    recorded = _round(0)
    placement = place(recorded["performance"], PEAK_TFLOPS, SMS, _tiles(0), _counters(0))
    assert placement is not None
    assert _counters(0)["sm_throughput_pct"] < COMPUTE_SM_PCT  # 68.7% SM, 24.8% DRAM: not instruction-bound
    assert placement.bound == "memory"
    assert "below the ridge 16.2" in placement.why and "31.8% of the copy bandwidth" in placement.why
    expected = recorded["profile"]["roofline"]
    assert placement.ridge == pytest.approx(expected["ridge"])
    assert placement.worst.intensity == pytest.approx(expected["worst"]["intensity"])
    assert placement.worst.pct_of_roofline == pytest.approx(expected["worst"]["pct_of_roofline"])
    assert placement.tiles == 131072 and placement.multiprocessors == SMS


def test_searched_round_is_compute_bound_by_ncu_sm_throughput() -> None:
    recorded = _round(1)
    placement = place(recorded["performance"], PEAK_TFLOPS, SMS, _tiles(1), _counters(1))
    assert placement is not None
    assert placement.worst.intensity < placement.ridge  # not compute-bound by intensity: by the counters
    assert placement.bound == "compute"
    assert "SM throughput 78%" in placement.why and "DRAM runs at 48%" in placement.why
    assert placement.bound == recorded["profile"]["roofline"]["bound"]


def test_searched_round_without_counters_falls_back_to_memory_bound() -> None:
    placement = place(_round(1)["performance"], PEAK_TFLOPS, SMS, _tiles(1), None)
    assert placement is not None
    assert placement.bound == "memory"
    assert "below the ridge" in placement.why


def test_high_sm_throughput_with_busy_dram_stays_memory_bound() -> None:
    counters = _counters(1) | {"dram_pct": 75.0}  # SM 78% but DRAM past 60%: the bytes still limit it
    placement = place(_round(1)["performance"], PEAK_TFLOPS, SMS, _tiles(1), counters)
    assert placement is not None and placement.bound == "memory"


def test_case_under_ten_microseconds_is_latency_bound() -> None:
    performance = _scaled(_round(0)["performance"], 0.07)  # 102 µs → 7.1 µs
    assert performance["cases"][0]["triton_ms"] < LAUNCH_BOUND_MS
    placement = place(performance, PEAK_TFLOPS, SMS, 4, _counters(0))  # even with few tiles: launch comes first
    assert placement is not None
    assert placement.bound == "latency/launch"
    assert "7.1 µs" in placement.why


def test_fewer_tiles_than_two_per_sm_is_under_utilized() -> None:
    performance = _round(0)["performance"]
    limit = MIN_TILES_PER_SM * SMS  # 264 on the H200
    short = place(performance, PEAK_TFLOPS, SMS, limit - 1, _counters(0))
    enough = place(performance, PEAK_TFLOPS, SMS, limit, _counters(0))
    assert short is not None and enough is not None
    assert short.bound == "under-utilized"
    assert f"{limit - 1} programs for {SMS} SMs" in short.why
    assert enough.bound == "memory"


def test_low_occupancy_far_from_roofline_is_under_utilized() -> None:
    counters = _counters(0) | {"occupancy_pct": 20.0}
    placement = place(_round(0)["performance"], PEAK_TFLOPS, SMS, _tiles(0), counters)
    assert placement is not None and placement.bound == "under-utilized"
    assert "occupancy 20%" in placement.why


def test_worst_case_is_the_lowest_share_of_its_roofline() -> None:
    performance = _round(0)["performance"]
    fast = copy.deepcopy(performance["cases"][0])
    fast.update(triton_ms=fast["triton_ms"] / 2, gbs=fast["gbs"] * 2, tflops=fast["tflops"] * 2)
    performance["cases"] = [fast, performance["cases"][0]]
    placement = place(performance, PEAK_TFLOPS, SMS, _tiles(0), _counters(0))
    assert placement is not None and len(placement.cases) == 2
    worst = placement.worst
    assert worst.triton_ms == performance["cases"][1]["triton_ms"]
    memory_ms = performance["cases"][1]["bytes"] / (performance["copy_gbs"] * 1e9) * 1e3
    assert worst.attainable_ms == pytest.approx(memory_ms)
    assert worst.pct_of_roofline == pytest.approx(100.0 * worst.attainable_ms / worst.triton_ms)
    assert worst.pct_of_roofline < placement.cases[0].pct_of_roofline


def test_compute_heavy_case_is_held_to_the_compute_peak() -> None:
    performance = _round(0)["performance"]
    case = performance["cases"][0]
    case["tflops"] = 60.0  # intensity far above the ridge: the FLOPs at 67 TFLOP/s take longer than the bytes
    placement = place(performance, PEAK_TFLOPS, SMS, _tiles(0), _counters(0))
    assert placement is not None
    compute_ms = 60.0 / PEAK_TFLOPS * case["triton_ms"]
    assert placement.worst.attainable_ms == pytest.approx(compute_ms)
    assert placement.bound == "compute"
    assert "above the ridge" in placement.why


def test_nothing_measured_places_nothing() -> None:
    skipped = {"op": "bias_add_gelu", "device": "cpu", "config": {"BLOCK_SIZE": 1024, "NUM_WARPS": 4},
               "status": "skipped", "reason": "not measured: no accelerator (CPU interpreter)"}
    assert place(skipped, None, None, None) is None
    no_cases = _round(0)["performance"] | {"cases": []}
    assert place(no_cases, PEAK_TFLOPS, SMS, _tiles(0), _counters(0)) is None
    no_copy = _round(0)["performance"] | {"copy_gbs": None}
    assert place(no_copy, PEAK_TFLOPS, SMS, _tiles(0), _counters(0)) is None


def test_unknown_peak_places_on_bandwidth_alone() -> None:
    placement = place(_round(0)["performance"], None, None, None)
    assert placement is not None
    assert placement.ridge is None
    assert placement.bound == "memory"
    assert placement.worst.pct_of_roofline == pytest.approx(_round(0)["performance"]["cases"][0]["pct_of_copy"])


@pytest.mark.parametrize("index", [0, 1, 2, 3], ids=["flat-256", "flat-2048", "rows-2x1024", "persistent-8-per-sm"])
def test_launched_tiles_match_ncu_grid_size(index: int) -> None:
    config = LaunchConfig(**_round(index)["config"])
    assert launched_tiles(config.constants(), ELEMENTS, SMS) == _tiles(index)


def test_launched_tiles_round_up_partial_tiles() -> None:
    assert launched_tiles({"BLOCK_SIZE": 1024, "NUM_WARPS": 4}, 1025, SMS) == 2
    assert launched_tiles({"BLOCK_M": 4, "BLOCK_N": 256, "NUM_WARPS": 4}, 3 * 1000, SMS) == math.ceil(3000 / 1024)


def test_persistent_grid_is_capped_at_programs_per_sm() -> None:
    constants = LaunchConfig(schedule="persistent", block_size=1024, programs_per_sm=4).constants()
    assert launched_tiles(constants, ELEMENTS, SMS) == 4 * SMS
    assert launched_tiles(constants, 100 * 1024, SMS) == 100  # fewer tiles than the cap: one program each
    assert launched_tiles(constants, ELEMENTS, None) == ELEMENTS // 1024  # unknown SM count: no cap


def test_a_split_row_counts_the_programs_its_rows_are_dealt_out_to() -> None:
    constants = LaunchConfig(schedule="split_row", block_size=4096, block_m=1, programs_per_sm=4).constants()
    assert launched_tiles(constants, 1, SMS) == 4 * SMS  # one output, a whole GPU of programs: not under-used
    assert launched_tiles(constants, 100_000, SMS) == 100_000  # more rows than that: one program a row at least


def test_a_16_bit_product_is_placed_against_the_tensor_core_peak() -> None:
    # 4096^3 fp16 in 0.2 ms: 687 TFLOP/s, 69% of 989 on the tensor cores (it would read 1025% of the fp32 rate).
    case = {"shapes": {"A": [4096, 4096], "B": [4096, 4096]}, "dtypes": {"A": "float16", "B": "float16"},
            "triton_ms": 0.2, "bytes": 3 * 4096 * 4096 * 2, "gbs": 503.3, "tflops": 2 * 4096**3 / 0.2e-3 / 1e12,
            "pct_of_copy": 17.0}
    placement = place({"copy_gbs": 2950.0, "cases": [case]}, 67.0, 132, 528, tensor_tflops=989.4)
    assert placement is not None and placement.bound == "compute"
    assert placement.worst.pct_of_roofline == pytest.approx(100 * 2 * 4096**3 / 989.4e12 / 0.2e-3, rel=1e-6)
    assert placement.worst.peak_tflops == 989.4
