"""Run whole jobs against the scripted model server: settings, the request, the first version's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.runner import run_job
from agent.state import JobRequest, JobState
from kernelgen.settings import Settings
from tests.agent.llm.answers import SPEC_TEXT, definition_json, first_version, spec_json
from tests.scripted_llm import MODEL, ScriptedLLM


def llm_settings(tmp_path: Path, llm_url: str, **extra: Any) -> Settings:
    """Return settings that reach the scripted server, with SQLite and a work folder under tmp_path."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}", work_dir=tmp_path / "work",
        # The row engine is off: prefix sum stands for an op the offline generator does not write.
        **({"llm_base_url": llm_url, "llm_model": MODEL, "llm_max_retries": 0, "llm_timeout_s": 60,
            "offline_engines": ["elementwise"]} | extra),
    )


def run_llm_job(tmp_path: Path, settings: Settings, text: str = SPEC_TEXT) -> JobState:
    """Run one job on the CPU with the model as generator; return its final state."""
    request = JobRequest(spec_text=text, out_dir=str(tmp_path / "out"), device="cpu", llm="openai")
    return run_job(request, settings, lambda stage, message: None)


def script_start(llm: ScriptedLLM, triton: str = "triton", **roles: str) -> None:
    """Queue the reading, the definition and the four files (each role's file from data/, or a variant)."""
    llm.script("requirements", spec_json())
    llm.script("definition", definition_json())
    for stage, answer in first_version(triton, **roles):
        llm.script(stage, answer)
