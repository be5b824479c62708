"""A job whose kernel raises ends saying why: in its message, its job row and report.json."""

from __future__ import annotations

import json
from pathlib import Path

from agent.generators.base import LaunchConfig
from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine

CAUSE = "arange's range must be a power of 2"


def test_a_kernel_that_raises_ends_the_job_with_the_exception_and_no_error_figure(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    out = tmp_path / "out"
    lines: list[tuple[str, str]] = []
    # Built directly, past the rules the CLI and the API check first: the kernel's tl.arange(0, 300) raises.
    broken = LaunchConfig(schedule="flat", block_size=300, num_warps=4)
    request = JobRequest(spec_text="ReLU on x [4, 4] fp32", out_dir=str(out), device="cpu", rounds=1,
                         initial_config=broken)
    final = run_job(request, settings, lambda stage, message: lines.append((stage, message)))
    assert final["status"] == "failed"
    assert CAUSE in final["message"]
    job = crud.get_job(make_engine(settings.database_url), final["job_id"])
    assert job is not None and job.status == "failed" and CAUSE in job.message  # the API's `error` is this
    accuracy_line = next(message for stage, message in lines if stage == "accuracy")
    assert "0/" in accuracy_line and f"first error: InterpreterError: ValueError(\"{CAUSE}\")" in accuracy_line
    accuracy = json.loads((out / "report.json").read_text())["rounds"][0]["accuracy"]
    assert accuracy["status"] == "error" and accuracy["cases_run"] == accuracy["cases_failed"] > 0
    assert accuracy["max_abs_err"] is None  # nothing was compared: no error of 0.0 to claim
    assert all(c["status"] == "error" and "max_abs_err" not in c for c in accuracy["cases"])
    assert CAUSE in accuracy["cause"]
