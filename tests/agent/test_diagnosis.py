"""Diagnosis rules: from recorded H200 figures to the next change, or a reason to stop."""

import copy
import json
from pathlib import Path
from typing import Any

from agent.diagnosis import NEAR_ROOFLINE_PCT, Diagnosis, PatternHint, diagnose_version, search_key, switch_key
from agent.generators.base import LaunchConfig, Schedule
from agent.roofline import Placement, place

RECORDED = json.loads((Path(__file__).parent / "data" / "h200_bias_add_gelu.json").read_text())
SCHEDULES: list[Schedule] = ["flat", "rows", "persistent"]
SEARCH = search_key("flat")
ROWS = switch_key("flat", "rows")
PERSISTENT = switch_key("flat", "persistent")


def _round(job: str, index: int) -> dict[str, Any]:
    return copy.deepcopy(RECORDED["jobs"][job]["rounds"][index])


def _placed(job: str, index: int) -> tuple[Placement, dict[str, float]]:
    """Place a recorded round on the H200 roofline with its ncu counters."""
    device, recorded = RECORDED["jobs"][job]["device"], _round(job, index)
    counters = recorded["profile"]["counters"]
    placement = place(recorded["performance"], device["peak_tflops"], device["multiprocessors"],
                      int(counters["grid_size"]), counters)
    assert placement is not None
    return placement, counters


def _diagnose(
    job: str = "A_poor_start_target_5", index: int = 0, *, placement: Placement | None = None,
    speedup: float | None = None, target: float | None = None, row_broadcast: bool = True,
    done: set[str] | None = None, patterns: list[PatternHint] | None = None,
) -> Diagnosis:
    recorded = _round(job, index)
    placed, counters = _placed(job, index)
    return diagnose_version(
        placement or placed, counters, speedup=recorded["speedup"] if speedup is None else speedup,
        target=RECORDED["jobs"][job]["target_speedup"] if target is None else target,
        current=LaunchConfig(**recorded["config"]), schedules=SCHEDULES, row_broadcast=row_broadcast,
        done=done or set(), patterns=patterns or [],
    )


def _sequence(**kwargs: Any) -> list[str]:
    """Follow the diagnoses, marking each proposed action done, until one stops."""
    done: set[str] = set()
    keys: list[str] = []
    while (diagnosis := _diagnose(done=set(done), **kwargs)).action is not None:
        assert diagnosis.action.key not in done
        keys.append(diagnosis.action.key)
        done.add(diagnosis.action.key)
    assert diagnosis.stop_reason
    return keys


def _with_worst(placement: Placement, **update: Any) -> Placement:
    worst = placement.worst.model_copy(update=update)
    return placement.model_copy(update={"worst": worst, "cases": [worst]})


def test_poor_start_first_searches_parameters_as_recorded() -> None:
    diagnosis = _diagnose()
    assert diagnosis.bottleneck == "memory"
    assert diagnosis.action is not None
    assert diagnosis.action.key == SEARCH == "parameter search (flat)"
    assert diagnosis.action.schedule == "flat" and diagnosis.action.expected_edit == "parameter"
    assert diagnosis.stop_reason is None
    recorded = _round("A_poor_start_target_5", 1)["diagnosis"]  # the decision the loop made after round 0
    assert diagnosis.change == recorded["change"]
    assert diagnosis.predicted_gain == recorded["predicted_gain"]


def test_evidence_carries_the_measured_figures() -> None:
    evidence = _diagnose().evidence
    assert evidence["pct_of_copy"] == 31.8
    assert evidence["pct_of_roofline"] == 31.8
    assert evidence["ncu_dram_pct"] == 24.8
    assert evidence["ncu_sm_throughput_pct"] == 68.66
    assert evidence["tiles"] == 131072 and evidence["multiprocessors"] == 132
    assert evidence["ridge_flop_per_byte"] == 16.2
    assert evidence["speedup"] == 1.267 and evidence["target"] == 5.0
    assert evidence == _round("A_poor_start_target_5", 1)["diagnosis"]["evidence"]


def test_memory_bound_row_broadcast_switches_to_rows_then_persistent() -> None:
    rows = _diagnose(done={SEARCH})
    assert rows.action is not None
    assert rows.action.key == ROWS == "schedule flat -> rows"
    assert rows.action.schedule == "rows" and rows.action.expected_edit == "logic"
    persistent = _diagnose(done={SEARCH, ROWS})
    assert persistent.action is not None
    assert persistent.action.key == PERSISTENT
    assert persistent.action.schedule == "persistent" and persistent.action.expected_edit == "logic"


def test_rows_never_proposed_without_a_row_broadcast_input() -> None:
    assert _sequence(row_broadcast=False) == [SEARCH, PERSISTENT]


def test_compute_bound_tries_rows_before_the_search() -> None:
    job = "C_default_start_target_2.43"
    first = _diagnose(job, 0)
    assert first.bottleneck == "compute"
    assert first.action is not None and first.action.key == ROWS
    assert first.action.key == _round(job, 1)["action"]  # what the loop did on the H200
    second = _diagnose(job, 0, done={ROWS})
    assert second.action is not None and second.action.key == SEARCH
    assert second.action.key == _round(job, 2)["action"]
    assert _sequence(job="C_default_start_target_2.43", index=0) == [ROWS, SEARCH, PERSISTENT]


def test_searched_round_continues_with_the_schedules_as_recorded() -> None:
    job = "A_poor_start_target_5"
    diagnosis = _diagnose(job, 1, done={SEARCH, ROWS})  # round 2 (rows) was rejected: round 1 stays best
    assert diagnosis.bottleneck == "compute"
    assert diagnosis.action is not None and diagnosis.action.key == _round(job, 3)["action"] == PERSISTENT


def test_latency_bound_only_searches_then_stops() -> None:
    placement, _ = _placed("A_poor_start_target_5", 0)
    launch = _with_worst(placement, triton_ms=0.007)
    launch = launch.model_copy(update={"bound": "latency/launch"})
    first = _diagnose(placement=launch)
    assert first.bottleneck == "latency/launch"
    assert first.action is not None and first.action.key == SEARCH
    after = _diagnose(placement=launch, done={SEARCH})
    assert after.action is None
    assert after.stop_reason is not None


def test_target_met_stops_below_the_roofline() -> None:
    diagnosis = _diagnose(speedup=5.0, target=5.0)  # met exactly counts
    assert diagnosis.evidence["pct_of_roofline"] < NEAR_ROOFLINE_PCT
    assert diagnosis.action is None
    assert diagnosis.stop_reason is not None and "target" in diagnosis.stop_reason
    assert diagnosis.predicted_gain == "none"
    assert _diagnose(speedup=4.99, target=5.0).action is not None  # just short of the target: keep going


def test_near_roofline_stops() -> None:
    placement, _ = _placed("A_poor_start_target_5", 0)
    near = _diagnose(placement=_with_worst(placement, pct_of_roofline=NEAR_ROOFLINE_PCT))
    assert near.action is None
    assert near.stop_reason is not None and "roofline" in near.stop_reason
    below = _diagnose(placement=_with_worst(placement, pct_of_roofline=NEAR_ROOFLINE_PCT - 1.0))
    assert below.action is not None


def test_all_actions_done_stops_with_a_reason() -> None:
    diagnosis = _diagnose(done={SEARCH, ROWS, PERSISTENT})
    assert diagnosis.action is None
    assert diagnosis.stop_reason
    assert diagnosis.change == "none: " + diagnosis.stop_reason


def test_helpful_pattern_with_higher_speedup_goes_first() -> None:
    patterns = [
        PatternHint(change=SEARCH, times_applied=3, times_helped=2, mean_gain=0.4, best_speedup=2.0,
                    params_after="flat: BLOCK_SIZE=2048, NUM_WARPS=2"),
        PatternHint(change=ROWS, times_applied=2, times_helped=2, mean_gain=0.15, best_speedup=2.6,
                    params_after="rows: BLOCK_M=2, BLOCK_N=1024, NUM_WARPS=4"),
    ]
    diagnosis = _diagnose(patterns=patterns)
    assert diagnosis.action is not None and diagnosis.action.key == ROWS
    assert diagnosis.action.preferred == [LaunchConfig(schedule="rows", block_m=2, block_size=1024, num_warps=4)]
    then = _diagnose(patterns=patterns, done={ROWS})
    assert then.action is not None and then.action.key == SEARCH
    assert then.action.preferred == [LaunchConfig(schedule="flat", block_size=2048, num_warps=2)]


def test_pattern_of_another_schedule_gives_no_preferred_config() -> None:
    hint = PatternHint(change=ROWS, times_applied=1, times_helped=1, mean_gain=0.1, best_speedup=2.5,
                       params_after="flat: BLOCK_SIZE=2048, NUM_WARPS=2")
    diagnosis = _diagnose(patterns=[hint])
    assert diagnosis.action is not None and diagnosis.action.key == ROWS
    assert diagnosis.action.preferred == []


def test_pattern_that_never_helped_moves_last() -> None:
    failed = PatternHint(change=SEARCH, times_applied=2, times_helped=0, mean_gain=-0.02, best_speedup=None,
                         params_after="flat: BLOCK_SIZE=256, NUM_WARPS=8")
    assert _sequence(patterns=[failed]) == [ROWS, PERSISTENT, SEARCH]
    once = failed.model_copy(update={"times_applied": 1})  # a single miss is not yet a pattern
    assert _sequence(patterns=[once]) == [SEARCH, ROWS, PERSISTENT]


def test_predicted_gain_names_the_gap_and_the_pattern_record() -> None:
    plain = _diagnose()
    assert "+215% (the gap to the roofline)" in plain.predicted_gain  # 100 / 31.8% - 1
    hint = PatternHint(change=SEARCH, times_applied=4, times_helped=3, mean_gain=0.12, best_speedup=2.47,
                       params_after="flat: BLOCK_SIZE=2048, NUM_WARPS=2")
    hinted = _diagnose(patterns=[hint])
    assert "helped 3 of 4 times" in hinted.predicted_gain
    assert "mean +12.0%" in hinted.predicted_gain
    assert "reaching x2.47" in hinted.predicted_gain
    assert "+215% (the gap to the roofline)" in hinted.predicted_gain



def test_one_change_filed_under_two_bottlenecks_ranks_by_its_best_row() -> None:
    best = PatternHint(change=SEARCH, times_applied=1, times_helped=1, mean_gain=1.0, best_speedup=3.0,
                       params_after="flat: BLOCK_SIZE=2048, NUM_WARPS=2")
    weaker = best.model_copy(update={"best_speedup": 1.3, "params_after": "flat: BLOCK_SIZE=512, NUM_WARPS=1"})
    rows = PatternHint(change=ROWS, times_applied=1, times_helped=1, mean_gain=0.1, best_speedup=2.5,
                       params_after="rows: BLOCK_M=2, BLOCK_N=1024, NUM_WARPS=4")
    for order in ([best, weaker, rows], [weaker, rows, best]):
        diagnosis = _diagnose(patterns=order)
        assert diagnosis.action is not None and diagnosis.action.key == SEARCH
        assert diagnosis.action.preferred == [LaunchConfig(schedule="flat", block_size=2048, num_warps=2)]
        assert "helped 2 of 2 times" in diagnosis.predicted_gain


ROW_SCHEDULES: list[Schedule] = ["whole_row", "looped_row"]  # the generator's order: rows in registers first
LOOPED_FIRST: list[Schedule] = ["looped_row", "whole_row"]  # a row read once when looped, or too long to hold


def _row_sequence(current: LaunchConfig, bottleneck: str, schedules: list[Schedule] = ROW_SCHEDULES) -> list[str]:
    """Follow a row kernel's diagnoses on the recorded figures, moved to `bottleneck`, until one stops."""
    placement, counters = _placed("A_poor_start_target_5", 0)
    placement = placement.model_copy(update={"bound": bottleneck})
    done: list[str] = []
    while (d := diagnose_version(placement, counters, speedup=1.0, target=None, current=current,
                                 schedules=schedules, row_broadcast=False, done=set(done),
                                 patterns=[])).action is not None:
        done.append(d.action.key)
    assert d.stop_reason is not None
    return done


def test_a_memory_bound_looped_row_first_tries_the_row_in_registers_then_searches() -> None:
    looped = LaunchConfig(schedule="looped_row", block_size=2048, block_m=1, num_warps=4)
    placement, counters = _placed("A_poor_start_target_5", 0)
    first = diagnose_version(placement, counters, speedup=1.0, target=None, current=looped, schedules=ROW_SCHEDULES,
                             row_broadcast=False, done=set(), patterns=[])
    assert first.action is not None and first.action.key == switch_key("looped_row", "whole_row")
    assert first.action.expected_edit == "logic" and "once per reduction level" in first.change
    assert _row_sequence(looped, "memory") == [switch_key("looped_row", "whole_row"), search_key("looped_row")]


def test_a_looped_row_the_generator_starts_looped_is_searched_before_trying_the_row_in_registers() -> None:
    # A one-pass cross-entropy row gains nothing from whole_row's "fewer passes" (H100: 73% of copy against 87%).
    looped = LaunchConfig(schedule="looped_row", block_size=4096, block_m=1, num_warps=8)
    assert _row_sequence(looped, "memory", LOOPED_FIRST) == [search_key("looped_row"),
                                                              switch_key("looped_row", "whole_row")]


def test_a_row_the_generator_starts_looped_is_not_promised_fewer_passes_by_the_row_in_registers() -> None:
    # The H200's cross-entropy job was told "+20-60% (fewer passes)" for whole_row, and lost 36%.
    looped = LaunchConfig(schedule="looped_row", block_size=4096, block_m=1, num_warps=4)
    placement, counters = _placed("A_poor_start_target_5", 0)
    for schedules, promised in ((LOOPED_FIRST, False), (ROW_SCHEDULES, True)):
        d = diagnose_version(placement, counters, speedup=1.0, target=None, current=looped, schedules=schedules,
                             row_broadcast=False, done={search_key("looped_row")}, patterns=[])
        assert d.action is not None and d.action.key == switch_key("looped_row", "whole_row")
        assert ("fewer passes" in d.predicted_gain) is promised
        assert ("once per reduction level" in d.change) is promised
        assert promised or d.predicted_gain.startswith("+0-10%")


def test_a_row_in_registers_searches_first_then_tries_the_looped_row() -> None:
    whole = LaunchConfig(schedule="whole_row", block_m=1, num_warps=16)
    for bottleneck in ("memory", "under-utilized", "compute"):
        assert _row_sequence(whole, bottleneck) == [search_key("whole_row"), switch_key("whole_row", "looped_row")]


def test_an_under_used_gpu_on_few_long_rows_tries_the_split_row_first() -> None:
    looped = LaunchConfig(schedule="looped_row", block_size=4096, block_m=1, num_warps=8)
    offered: list[Schedule] = ["looped_row", "whole_row", "split_row"]
    sequence = _row_sequence(looped, "under-utilized", offered)
    assert sequence[:2] == [switch_key("looped_row", "split_row"), search_key("looped_row")]
    assert switch_key("looped_row", "whole_row") in sequence  # still tried, after
    assert _row_sequence(looped, "memory", offered)[0] == search_key("looped_row")  # rows enough: no split first
