"""The loop's target: a stated speedup stops the loop once met; without one it runs to the limit or stalls."""

from typing import Any

import pytest

from agent.diagnosis import Diagnosis, diagnose_version, search_key
from agent.documents import render
from agent.generators.base import LaunchConfig
from agent.log_figures import bottleneck, utilisation, why_not_timed
from agent.state import RoundRecord
from agent.targets import LIMIT_PCT, stalled, target_text, vs_compile
from tests.agent.test_diagnosis import SCHEDULES, _placed, _round, _with_worst

FLAT = LaunchConfig(schedule="flat", block_size=1024, num_warps=4)


def _diagnose_at(pct: float, speedup: float, target: float | None, compile_speedup: float | None) -> Diagnosis:
    """Diagnose a recorded memory-bound H200 round with its worst case moved to `pct` of the roofline."""
    placement, counters = _placed("A_poor_start_target_5", 0)
    placement = _with_worst(placement, pct_of_roofline=pct)
    return diagnose_version(placement, counters, speedup=speedup, target=target, current=FLAT, schedules=SCHEDULES,
                            row_broadcast=True, done=set(), patterns=[], compile_speedup=compile_speedup)


def _record(index: int, speedup: float | None, cases: list[dict[str, Any]] | None = None,
            repair_of: int | None = None) -> RoundRecord:
    return RoundRecord(index=index, edit_type="initial" if index == 0 else "parameter", config=FLAT, reason="",
                       accuracy_status="pass", speedup=speedup, performance={"cases": cases or []},
                       repair_of=repair_of)


def test_without_a_target_a_kernel_far_faster_than_eager_keeps_optimizing_below_the_limit() -> None:
    # The old default (x1.0 eager) stopped here after the first version.
    diagnosis = _diagnose_at(pct=60.0, speedup=3.0, target=None, compile_speedup=1.4)
    assert diagnosis.action is not None and diagnosis.action.key == search_key("flat")


def test_without_a_target_near_the_roofline_but_behind_torch_compile_keeps_optimizing() -> None:
    diagnosis = _diagnose_at(pct=LIMIT_PCT + 2, speedup=1.5, target=None, compile_speedup=0.8)
    assert diagnosis.action is not None


def test_without_a_target_the_limit_stops_the_loop_with_the_figures() -> None:
    diagnosis = _diagnose_at(pct=LIMIT_PCT + 2, speedup=1.5, target=None, compile_speedup=1.05)
    assert diagnosis.action is None
    assert diagnosis.stop_reason is not None
    assert diagnosis.stop_reason.startswith("at the limit") and "x1.05 torch.compile" in diagnosis.stop_reason
    assert diagnosis.evidence["speedup_vs_compile"] == 1.05


def test_a_stated_target_stops_once_met_even_far_below_the_limit() -> None:
    diagnosis = _diagnose_at(pct=40.0, speedup=1.3, target=1.2, compile_speedup=0.5)
    assert diagnosis.action is None
    assert diagnosis.stop_reason is not None and diagnosis.stop_reason.startswith("target met")


def test_a_stated_target_not_met_keeps_going_past_the_limit_share() -> None:
    diagnosis = _diagnose_at(pct=LIMIT_PCT + 2, speedup=1.1, target=2.0, compile_speedup=1.2)
    assert diagnosis.action is not None


def test_speedup_over_torch_compile_pairs_each_case_with_the_first_rounds_compile_time() -> None:
    recorded = _round("A_poor_start_target_5", 0)["performance"]["cases"]
    first = _record(0, 1.0, recorded)
    faster = _record(1, 2.0, [c | {"triton_ms": c["triton_ms"] / 2} for c in recorded])
    expected = recorded[0]["compile_ms"] / recorded[0]["triton_ms"]
    assert vs_compile(first, first) == pytest.approx(recorded[0]["speedup_vs_compile"], rel=1e-6)
    assert vs_compile(first, faster) == pytest.approx(2 * expected, rel=1e-6)
    assert vs_compile(_record(0, 1.0, [{k: v for k, v in c.items() if k != "compile_ms"} for c in recorded]),
                      faster) is None  # torch.compile was not timed (e.g. it failed): no figure, not zero


def test_two_rounds_within_noise_stall_the_loop_but_one_does_not() -> None:
    assert stalled([_record(0, 1.00), _record(1, 1.005)]) is None
    reason = stalled([_record(0, 1.00), _record(1, 1.005), _record(2, 0.98)])
    assert reason is not None and "+0.5%" in reason and "-2.5%" in reason
    assert stalled([_record(0, 1.00), _record(1, 1.005), _record(2, 1.10)]) is None
    # A failed version counts as no gain; repair rounds are not optimization rounds.
    assert stalled([_record(0, 1.0), _record(1, None), _record(2, 1.0, repair_of=1)]) is None
    reason = stalled([_record(0, 1.0), _record(1, None), _record(2, 1.0, repair_of=1), _record(3, 1.01)])
    assert reason is not None and "no new version, +1.0%" in reason


def _round_section(record: RoundRecord, base: RoundRecord | None, target: float | None, **figures: Any) -> str:
    """Render a round's log section with the figures the log node would pass."""
    return render("round.md.j2", r=record, base=base, target=target, device="H100", pattern=None, coverage="",
                  fmt=lambda v, p: "not measured" if v is None else p.format(v), accuracy_shapes="",
                  timed_shapes="", not_timed=why_not_timed(record), figures=utilisation(record),
                  bottleneck=bottleneck(record), change=None, triton_file="op_triton.py", success=[], failure=[],
                  next=[], **figures)


def test_documents_say_which_target_the_loop_aims_for() -> None:
    assert target_text(1.5) == "≥ 1.5× over eager PyTorch"
    assert "roofline" in target_text(None) and "torch.compile" in target_text(None)
    text = _round_section(_record(0, None), None, None, compile_speedup=None, pct_of_roofline=None,
                          target_met="not measured")
    assert "met (是否达到目标): not measured" in text and target_text(None) in text
    measured = _round_section(_record(1, 1.234), _record(0, 1.0), 1.5, compile_speedup=0.9, pct_of_roofline=88.0,
                              target_met="no")
    assert "x1.234 vs eager (+23.4% against v0), x0.900 vs torch.compile, 88.0% of the roofline bound" in measured
    assert "≥ 1.5× over eager PyTorch; met (是否达到目标): no" in measured
