"""What the repair prompt is told about a failed version: distinct failing shapes first, every reason given."""

from agent.generators.base import LaunchConfig
from agent.llm.failure import MAX_CASES, describe_failure
from agent.state import RoundRecord


def _case(shape: list[int], seed: int, dtype: str = "float32") -> dict[str, object]:
    return {"shapes": {"x": shape}, "dtypes": {"x": dtype}, "seed": seed, "status": "fail", "max_abs_err": 1.0}


def _record(accuracy: dict[str, object]) -> RoundRecord:
    return RoundRecord(index=0, edit_type="initial", config=LaunchConfig(), reason="first version",
                       accuracy_status="fail", accuracy=accuracy)


def test_every_failing_shape_shows_before_the_seeds_and_dtypes_of_one_shape_repeat() -> None:
    # Six cases of [1, 1] come first in the run's order; [3, 257], [5, 100] and [2, 1031] failed too.
    cases = [_case([1, 1], seed, dtype) for dtype in ("float32", "float16") for seed in (0, 1, 2)]
    cases += [_case(shape, 0) for shape in ([3, 257], [5, 100], [2, 1031])]
    failure = describe_failure(_record({"status": "fail", "cases_run": 9, "cases_failed": 9, "cases": cases}))
    shown = [c.shapes["x"] for c in failure.cases]
    assert len(shown) == MAX_CASES
    assert shown[:4] == [[1, 1], [3, 257], [5, 100], [2, 1031]]


def test_an_audit_failure_is_the_summary_when_both_checks_passed() -> None:
    accuracy = {"status": "pass", "cases_run": 1, "cases_failed": 0, "cases": [],
                "cross_check": {"status": "pass", "cases_run": 36, "cases_failed": 0, "cases": []},
                "audit": {"status": "fail", "message": "the accuracy test ran 1 of the 4 cases the spec lists"}}
    failure = describe_failure(_record(accuracy))
    assert failure.summary == "the accuracy test ran 1 of the 4 cases the spec lists"
