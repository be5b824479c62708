"""Every stage's prompt renders from the job's data, carries the shared rules, and refuses missing data."""

import jinja2
import pytest

from agent.llm.authoring import prompt_context
from agent.llm.failure import FailingCase, Failure
from agent.llm.prompts import STAGES, render_prompt
from agent.llm.replies import DiagnosisReply, SpecReply
from agent.runtime.devices import DeviceInfo
from tests.agent.llm.answers import SPEC, source

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
FILES = {"prefix_sum_triton.py": source("triton"), "prefix_sum_baseline.py": source("baseline")}


def _context(stage: str) -> dict[str, object]:
    spec = SpecReply.model_validate(SPEC).to_spec()
    extra: dict[str, object] = {
        "requirements": {"request_text": "cumsum of x [8, 1000]", "offline_note": "not elementwise"},
        "definition": {"figures": "64,000 bytes"},
        "triton": {"hints": ["`parameter search (flat)` helped 2 of 3 times"]},
        "baseline": {"given": FILES}, "accuracy": {"given": FILES}, "performance": {"given": FILES},
        "repair": {"given": FILES, "failure": Failure(stage="failed accuracy", summary="3/30 cases failed", cases=[
            FailingCase(shapes={"x": [5, 1023]}, dtypes={"x": "float16"}, seed=1, status="fail", max_abs_err=0.5,
                        max_rel_err=1.0)]), "failed_index": 0, "attempt": 1, "max_attempts": 3, "earlier": []},
        "diagnosis": {"given": FILES, "best_index": 0, "speedup": "1.100", "figures": {"pct_of_copy": 41.0},
                      "rule_diagnosis": "memory-bound", "hints": [], "tried": []},
        "edit": {"given": FILES, "proposal": DiagnosisReply(bottleneck="memory", evidence="41% of copy",
                                                            change="BLOCK_SIZE 2048", edit_type="parameter")},
    }[stage]
    return prompt_context(spec, H200, DEFINITION, **extra)


# A definition document's shape: the figures, constraints and strategy sections, the last one last.
DEFINITION = "\n\n".join(f"## {i}. Section {i}\n" + "figures and reasons " * 60 for i in range(1, 8)) + \
    "\n\nThe last line of the document."


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_renders_with_the_shared_rules(stage: str) -> None:
    system, user = render_prompt(stage, **_context(stage))
    assert system["role"] == "system" and user["role"] == "user"
    for rule in ("Mask every load and store", "torch_npu", "TRITON_INTERPRET", "torch doing the work",
                 "Skipped outputs"):
        assert rule in system["content"]
    assert "NVIDIA H200" in system["content"]


@pytest.mark.parametrize("stage", ["triton", "baseline", "accuracy", "performance", "repair", "edit"])
def test_file_stages_carry_the_four_file_contract(stage: str) -> None:
    user = render_prompt(stage, **_context(stage))[1]["content"]
    assert "make_inputs(shapes, dtypes, seed, device)" in user and "def prefix_sum(x)" in user
    assert "--json PATH" in user and "```python block" in user


@pytest.mark.parametrize("stage", ["repair", "diagnosis", "edit"])
def test_stages_that_change_code_explain_the_edit_types(stage: str) -> None:
    user = render_prompt(stage, **_context(stage))[1]["content"]
    assert "Only `prefix_sum_triton.py` may change" in user and "All four files\n  change together" in user


def test_the_repair_prompt_carries_the_failing_case_and_the_code() -> None:
    user = render_prompt("repair", **_context("repair"))[1]["content"]
    assert "shapes {'x': [5, 1023]}, dtypes {'x': 'float16'}, seed 1" in user
    assert "max abs error 0.5, max rel error 1.0" in user and "tl.cumsum(values, axis=0)" in user


def test_a_missing_value_is_an_error_not_a_blank() -> None:
    context = _context("repair")
    del context["failure"]
    with pytest.raises(jinja2.UndefinedError, match="failure"):
        render_prompt("repair", **context)


def test_an_unknown_stage_is_refused() -> None:
    with pytest.raises(ValueError, match="no prompt for stage 'softmax'"):
        render_prompt("softmax")


@pytest.mark.parametrize("stage", ["triton", "repair", "diagnosis", "edit"])
def test_stages_that_write_or_change_the_kernel_get_the_whole_definition_document(stage: str) -> None:
    user = render_prompt(stage, **_context(stage))[1]["content"]
    assert DEFINITION in user  # every section, to its last line
