"""A dishonest or sloppy model gets nothing verified: each cheat, as a first version and as a repair, ends unverified.

Each scenario is a whole job against the scripted model server (kernels in the Triton interpreter). The model's
reading of "inclusive prefix sum" is the IR's `cumsum`, so the service holds its own reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.state import JobState
from tests.agent.llm.answers import SPEC, definition_json, fenced, first_version, source
from tests.agent.llm.jobs import llm_settings, run_llm_job, script_start
from tests.scripted_llm import ScriptedLLM

ROLES = ("triton", "baseline", "accuracy", "performance")


def _cheat(llm: ScriptedLLM, tmp_path: Path, files: dict[str, str], *, as_repair: bool,
           spec: dict[str, object] | None = None) -> JobState:
    """Run a job whose first version (or the repair of a masking bug) is the given variants; one repair allowed."""
    if as_repair:
        script_start(llm, triton="triton_masking_bug")
        llm.script("repair", fenced(*[(f"prefix_sum_{role}.py", source(name)) for role, name in files.items()]))
    else:
        llm.script("requirements", json.dumps(spec or SPEC))
        llm.script("definition", definition_json())
        for stage, answer in first_version(files.get("triton", "triton"),
                                           **{r: n for r, n in files.items() if r != "triton"}):
            llm.script(stage, answer)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url, llm_max_repairs=1))
    assert final["status"] == "failed" and final["best_round"] is None, final.get("message")
    assert not any(r.accepted for r in final["rounds"])
    assert json.loads((tmp_path / "out" / "report.json").read_text())["status"] == "failed"
    return final


def _last_verdict(final: JobState) -> str:
    """Return everything said about the last round: its verdict and both accuracy results."""
    last = final["rounds"][-1]
    return f"{last.verdict}\n{json.dumps(last.accuracy)}"


def _refusal(final: JobState, llm: ScriptedLLM) -> str:
    """Return where a refused file's reason went: the re-ask of a file refused on arrival (the model is asked again
    and the file never runs), or a refused round's verdict."""
    reasks = [r.user_text for r in llm.requests if "could not be used" in r.user_text]
    if reasks:
        return "\n".join(reasks)
    assert final["rounds"][-1].accuracy_status == "refused", final.get("message")
    return _last_verdict(final)


# A repair is the same check on the second version; two of its variants run in full runs only (slow).
@pytest.mark.parametrize("as_repair", [False, True], ids=["first-version", "repair"])
def test_torch_compute_hidden_in_a_class_method_is_refused(tmp_path: Path, llm: ScriptedLLM, as_repair: bool) -> None:
    final = _cheat(llm, tmp_path, {"triton": "triton_class_method"}, as_repair=as_repair)
    assert "_Finisher.run() calls torch.cumsum" in _refusal(final, llm)


@pytest.mark.parametrize("as_repair", [False, True], ids=["first-version", "repair"])
def test_a_kernel_file_that_imports_the_reference_is_refused(tmp_path: Path, llm: ScriptedLLM, as_repair: bool) -> None:
    final = _cheat(llm, tmp_path, {"triton": "triton_imports_baseline"}, as_repair=as_repair)
    assert "imports prefix_sum_baseline" in _refusal(final, llm)


@pytest.mark.bubblewrap
@pytest.mark.parametrize("as_repair", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["first-version", "repair"])
def test_a_copy_kernel_with_a_colluding_reference_fails_against_the_spec(
    tmp_path: Path, llm: ScriptedLLM, as_repair: bool,
) -> None:
    final = _cheat(llm, tmp_path, {"triton": "triton_copy", "baseline": "baseline_clone"}, as_repair=as_repair)
    last = final["rounds"][-1]
    if as_repair:  # a repair may not rewrite the reference: the copy kernel meets the real one
        assert last.accuracy_status == "fail"
        assert last.accuracy["cross_check"]["cases_failed"] > 0
    else:
        assert last.accuracy["status"] == "pass"  # the model's own test agrees with its own reference
        assert "computes something other than the spec's reading" in _last_verdict(final)


@pytest.mark.bubblewrap
@pytest.mark.parametrize("as_repair", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["first-version", "repair"])
def test_a_kernel_that_drops_the_last_partial_tile_fails_on_our_own_odd_shapes(
    tmp_path: Path, llm: ScriptedLLM, as_repair: bool,
) -> None:
    final = _cheat(llm, tmp_path, {"triton": "triton_drops_tail", "accuracy": "accuracy_no_edges"},
                   as_repair=as_repair, spec=SPEC | {"edge_cases": []})
    last = final["rounds"][-1]
    assert last.accuracy["status"] == "pass"  # right on the spec's own shapes, all the model's test runs
    cross = last.accuracy["cross_check"]
    failing = {c["shapes"]["x"][-1] for c in cross["cases"] if c["status"] != "pass"}
    assert all(c["status"] == "pass" for c in cross["cases"] if c["kind"] == "spec")
    assert {3, 129, 257} <= failing  # not multiples of 8


@pytest.mark.bubblewrap
@pytest.mark.parametrize("as_repair", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["first-version", "repair"])
def test_an_accuracy_file_that_compares_nothing_fails_the_round(
    tmp_path: Path, llm: ScriptedLLM, as_repair: bool,
) -> None:
    files = {"triton": "triton", "accuracy": "accuracy_lying"}
    final = _cheat(llm, tmp_path, files, as_repair=as_repair)
    last = final["rounds"][-1]
    assert last.accuracy["cross_check"]["status"] == "pass"  # the kernel itself is right
    assert last.accuracy_status == "fail"
    said = _last_verdict(final)
    assert "ran 1 of the 4 cases the spec lists" in said
    assert "passed a deliberately wrong kernel" in said


@pytest.mark.bubblewrap
def test_an_honest_accuracy_file_is_taken_after_a_lying_one(tmp_path: Path, llm: ScriptedLLM) -> None:
    script_start(llm, accuracy="accuracy_lying")
    llm.script("repair", fenced(("prefix_sum_accuracy.py", source("accuracy"))))
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url))
    assert final["status"] == "verified" and final["best_round"] == 1, final.get("message")
    assert "the accuracy test ran 1 of the 4 cases" in llm.seen("repair")[0].user_text
    assert (tmp_path / "out" / "prefix_sum_accuracy.py").read_text() == source("accuracy")


ZORB = ("Apply our zorb transform (see the paper) to each row of x, shapes [8, 1000] and [3, 4096], float32 and "
        "float16")


@pytest.mark.bubblewrap
def test_a_spec_only_the_model_could_read_is_verified_against_its_reference_and_says_so(
    tmp_path: Path, llm: ScriptedLLM,
) -> None:
    # The reader finds no operation in the words; the model describes one in words only (no IR), so the only
    # reference is the model's own baseline: the verdict says so instead of claiming more.
    script_start(llm)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url), text=ZORB)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["reference"] == "model-written"
    assert "checked against a model-written reference only" in report["message"]
    assert "model-written reference" in final["message"]
    probes = {json.dumps(c["shapes"]) for c in final["rounds"][-1].accuracy["cross_check"]["cases"]
              if c["kind"] == "probe"}
    # Our own odd shapes even here, the IR's size maps (every size to 1 is the model's own edge case).
    assert probes == {'{"x": [5, 3]}', '{"x": [127, 129]}', '{"x": [3, 257]}', '{"x": [1, 1031]}'}


@pytest.mark.bubblewrap
def test_a_kernel_that_drops_the_last_partial_tile_fails_our_probes_of_a_spec_read_in_words(
    tmp_path: Path, llm: ScriptedLLM,
) -> None:
    llm.script("requirements", json.dumps(SPEC | {"edge_cases": []}))
    llm.script("definition", definition_json())
    for stage, answer in first_version("triton_drops_tail", accuracy="accuracy_no_edges"):
        llm.script(stage, answer)
    final = run_llm_job(tmp_path, llm_settings(tmp_path, llm.url, llm_max_repairs=0), text=ZORB)
    assert final["status"] == "failed" and final["best_round"] is None
    cross = final["rounds"][0].accuracy["cross_check"]
    assert all(c["status"] == "pass" for c in cross["cases"] if c["kind"] == "spec")
    assert {c["shapes"]["x"][-1] for c in cross["cases"] if c["status"] != "pass"} >= {3, 129, 257, 1031}
