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
    assert routing.after_definition({"status": "rejected"}) == "finalize"  # the spec does not fit the device
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


def test_a_job_whose_model_could_not_write_the_files_ends() -> None:
    assert routing.after_generate({"status": "failed"}) == "finalize"
    assert routing.after_generate({"status": "running"}) == "accuracy"
    assert routing.after_requirements({"status": "failed"}) == "finalize"  # the endpoint was down


def test_a_failed_version_is_repaired_while_the_llm_has_attempts_left() -> None:
    llm = {"generator": "openai:m", "max_repairs": 2}
    for status in ("fail", "error", "timeout", "crashed", "refused"):
        assert routing.after_log({"rounds": [_round(status)], "repair_attempts": 0, **llm}) == "repair"  # type: ignore[typeddict-item]
        assert routing.after_log({"rounds": [_round(status)], "repair_attempts": 2, **llm}) == "diagnose"  # type: ignore[typeddict-item]
    for status in ("pass", "unchanged", "search failed"):
        assert routing.after_log({"rounds": [_round(status)], "repair_attempts": 0, **llm}) == "diagnose"  # type: ignore[typeddict-item]


def test_offline_jobs_and_a_gone_llm_are_never_repaired() -> None:
    assert routing.after_log({"rounds": [_round("fail")], "generator": "offline", "max_repairs": 3}) == "diagnose"
    gone = {"rounds": [_round("fail")], "generator": "openai:m", "max_repairs": 3, "llm_error": "timed out"}
    assert routing.after_log(gone) == "diagnose"  # type: ignore[arg-type]


def test_a_repair_or_model_edit_is_tested_unless_refused_or_missing() -> None:
    for router in (routing.after_repair, routing.after_llm_edit):
        assert router({"pending": _round("not run")}) == "accuracy"
        assert router({"pending": _round("refused")}) == "log"
        assert router({"pending": None}) == "diagnose"


def test_a_model_proposal_goes_to_the_model_edit() -> None:
    assert routing.after_diagnosis({"llm_proposal": {"change": "x"}, "proposal": None}) == "llm_edit"
