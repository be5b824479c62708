"""With an LLM configured the model reads the spec too: agreement goes on, a disagreement ends as a question that
shows both readings, and a spec only the model can read goes on with the model's reading, marked as such."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings
from tests.scripted_llm import MODEL, ScriptedLLM, scripted_llm

QUICK_GELU = "QuickGELU: x * sigmoid(1.702 * x) for x in float32, shape [30, 64]."


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


def _reading(ir: str, shape: list[int], name: str = "quick_gelu") -> str:
    return json.dumps({
        "supported": True, "name": name, "description": "an activation", "semantics": ir, "ir": ir,
        "inputs": [{"name": "x", "shapes": [shape], "dtypes": ["float32"]}], "params": [], "output": "out",
        "output_shapes": [shape], "edge_cases": [], "flops_per_output": 4,
    })


def _run(tmp_path: Path, llm: ScriptedLLM, text: str) -> tuple[dict[str, Any], Path]:
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}", work_dir=tmp_path / "work",
        llm_base_url=llm.url, llm_model=MODEL, llm_max_retries=0, llm_timeout_s=60)
    out = tmp_path / "out"
    request = JobRequest(spec_text=text, out_dir=str(out), device="cpu", llm="auto", rounds=1)
    return dict(run_job(request, settings, lambda stage, message: None)), out


def test_when_the_readings_agree_the_job_goes_on_and_says_so(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", _reading("x * sigmoid(1.702 * x)", [30, 64]))
    final, out = _run(tmp_path, llm, QUICK_GELU)
    assert final["status"] == "verified", final.get("message")
    assert llm.stages() == ["requirements"]  # the offline generator writes the kernel: one call, for the reading
    understood = json.loads((out / "report.json").read_text())["understood"]
    assert understood["source"] == "text" and "the model's reading agrees" in understood["notes"]
    assert "Understood as" not in llm.seen("requirements")[0].user_text  # the model reads without seeing ours


def test_a_disagreement_is_a_question_showing_both_readings(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", _reading("sigmoid(x)", [30, 64]))
    final, _ = _run(tmp_path, llm, QUICK_GELU)
    assert final["status"] == "rejected"
    message = str(final["message"])
    assert "read this spec differently" in message
    assert "x * sigmoid(1.702 * x)" in message and "sigmoid(x)" in message  # both readings, neither chosen


def test_different_inputs_are_a_disagreement_too(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", _reading("x * sigmoid(1.702 * x)", [64, 30]))
    final, _ = _run(tmp_path, llm, QUICK_GELU)
    assert final["status"] == "rejected" and "the inputs differ" in str(final["message"])


def test_a_spec_only_the_model_reads_goes_on_with_the_models_reading(tmp_path: Path, llm: ScriptedLLM) -> None:
    llm.script("requirements", _reading("x * sigmoid(x)", [33, 65], name="frobnicate"))
    final, out = _run(tmp_path, llm, "frobnicate x [33, 65] fp32")
    assert final["status"] == "verified", final.get("message")
    understood = json.loads((out / "report.json").read_text())["understood"]
    assert understood["source"] == "model" and understood["ir"] == "x * sigmoid(x)"
    assert "no operation was recognised ('frobnicate'" in llm.seen("requirements")[0].user_text  # our question
