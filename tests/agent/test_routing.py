"""Routers decide the next stage from the state alone, without any LLM."""

from agent import routing
from agent.diagnosis import Action, Diagnosis
from agent.generators.base import LaunchConfig
from agent.state import RoundRecord


def _round(accuracy: str) -> RoundRecord:
    return RoundRecord(index=0, edit_type="initial", config=LaunchConfig(), reason="", accuracy_status=accuracy)


def test_rejected_spec_goes_straight_to_finalize() -> None:
    assert routing.after_requirements({"status": "rejected"}) == "finalize"
    assert routing.after_requirements({"status": "running", "spec": object()}) == "definition"  # type: ignore[typeddict-item]


def test_missing_device_ends_the_job() -> None:
    assert routing.after_definition({"status": "failed"}) == "finalize"
    assert routing.after_definition({"status": "running"}) == "generate"


def test_only_accurate_versions_are_timed() -> None:
    assert routing.after_accuracy({"pending": _round("pass")}) == "performance"
    for status in ("fail", "error", "timeout", "crashed", "refused"):
        assert routing.after_accuracy({"pending": _round(status)}) == "log"


def test_diagnosis_with_an_action_edits_else_finishes() -> None:
    action = Action(key="parameter search (flat)", schedule="flat", expected_edit="parameter")
    go = Diagnosis(bottleneck="memory", evidence={}, action=action, change="search", predicted_gain="+5%")
    stop = Diagnosis(bottleneck="memory", evidence={}, action=None, change="none", predicted_gain="none",
                     stop_reason="target met")
    assert routing.after_diagnosis({"proposal": go}) == "edit"
    assert routing.after_diagnosis({"proposal": stop}) == "finalize"
    assert routing.after_diagnosis({"proposal": None}) == "finalize"


def test_a_search_that_changed_nothing_is_logged_not_tested() -> None:
    assert routing.after_search({"pending": _round("unchanged")}) == "log"
    assert routing.after_search({"pending": _round("search failed")}) == "log"
    assert routing.after_search({"pending": _round("not run")}) == "classify"


def test_refused_edit_returns_to_diagnosis() -> None:
    assert routing.after_classify({"pending": None}) == "diagnose"
    assert routing.after_classify({"pending": _round("not run")}) == "accuracy"
