"""`kernelgen run` with an LLM: chosen on the command line, refused clearly when missing or unreachable."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent.llm.answers import SPEC_TEXT, definition_json, first_version, spec_json
from tests.scripted_llm import MODEL, scripted_llm


def _kernelgen(tmp_path: Path, *args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGEN_LLM")} | (extra or {}) | {
        "KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}", "KERNELGEN_WORK_DIR": str(tmp_path / "work"),
        "KERNELGEN_LLM_MAX_RETRIES": "0", "COLUMNS": "200",
        "KERNELGEN_OFFLINE_ENGINES": '["elementwise"]',  # prefix sum stands for an op offline does not write
    }
    return subprocess.run([sys.executable, "-m", "kernelgen", "run", SPEC_TEXT, "--device", "cpu", *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def test_an_unknown_op_offline_says_an_llm_can_write_it(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path)
    assert run.returncode == 1
    assert "scans" in run.stdout and "KERNELGEN_LLM_BASE_URL" in run.stdout and "No kernel was written" in run.stdout


def test_asking_for_an_llm_without_an_endpoint_is_a_usage_error(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path, "--llm", "openai")
    assert run.returncode == 2 and "KERNELGEN_LLM_BASE_URL" in run.stdout + run.stderr


def test_an_unreachable_endpoint_fails_the_job_with_the_reason(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path, "--llm", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m")
    assert run.returncode == 1
    assert "could not be reached" in run.stdout and "No kernel was written" in run.stdout


@pytest.mark.bubblewrap
def test_the_command_line_runs_an_llm_job_to_a_verified_kernel(tmp_path: Path) -> None:
    with scripted_llm() as llm:
        llm.script("requirements", spec_json())
        llm.script("definition", definition_json())
        for stage, answer in first_version():
            llm.script(stage, answer)
        run = _kernelgen(tmp_path, "--llm-base-url", llm.url, "--llm-model", MODEL, "--out", str(tmp_path / "o"))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"generator: openai:{MODEL}" in run.stdout
    assert (tmp_path / "o" / "prefix_sum_triton.py").exists()


@pytest.mark.bubblewrap
def test_a_kernel_that_raises_ends_the_run_with_the_exception_not_only_a_count(tmp_path: Path) -> None:
    with scripted_llm() as llm:
        llm.script("requirements", spec_json())
        llm.script("definition", definition_json())
        for stage, answer in first_version("triton_arange_300"):
            llm.script(stage, answer)
        run = _kernelgen(tmp_path, "--llm-base-url", llm.url, "--llm-model", MODEL, "--out", str(tmp_path / "o"),
                         extra={"KERNELGEN_LLM_MAX_REPAIRS": "0"})
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    cause = "arange's range must be a power of 2"
    accuracy = next(line for line in run.stdout.splitlines() if line.strip().startswith("accuracy"))
    assert "first error:" in accuracy and cause in accuracy
    assert cause in run.stdout.split("no version passed the accuracy test")[-1]  # the job's message says it too
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert cause in report["message"] and report["rounds"][0]["accuracy"]["max_abs_err"] is None
