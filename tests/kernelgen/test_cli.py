"""The README's main job: `kernelgen run` from a spec to a verified kernel, or a clear refusal."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from kernelgen.cli import app
from storage.db import make_engine
from storage.models import Artifact, Job, Round


def _kernelgen(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {
        "KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}",
        "KERNELGEN_WORK_DIR": str(tmp_path / "work"),
        "COLUMNS": "200",
    }
    return subprocess.run([sys.executable, "-m", "kernelgen", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def test_relu_spec_gives_a_verified_kernel_whose_files_run_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _kernelgen(tmp_path, "run", "ReLU on a float32 tensor x of shape [1000, 1000]", "--out", str(out),
                     "--device", "cpu")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verified" in run.stdout
    names = {"relu_triton.py", "relu_baseline.py", "relu_accuracy.py", "relu_performance.py", "definition.md",
             "optimization_log.md", "report.json"}
    assert names <= {p.name for p in out.iterdir()}
    assert (out / "rounds" / "round_0" / "relu_triton.py").exists()
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "verified" and report["entry_point"] == "relu_triton.relu"
    assert report["rounds"][0]["accuracy_status"] == "pass"
    for role in ("triton", "baseline", "accuracy", "performance"):
        result = tmp_path / f"{role}.json"
        ran = subprocess.run([sys.executable, f"relu_{role}.py", "--json", str(result)], cwd=out,
                             capture_output=True, text=True, timeout=300, env=os.environ | {"TRITON_INTERPRET": "1"})
        assert ran.returncode == 0, ran.stdout + ran.stderr
        status = json.loads(result.read_text())["status"]
        assert status == ("skipped" if role == "performance" else "pass")
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    with Session(engine) as session:
        job = session.exec(select(Job)).one()
        assert job.status == "verified" and job.op_name == "relu"
        assert len(session.exec(select(Round)).all()) == 1
        stored = {a.name for a in session.exec(select(Artifact)).all()}
    assert {"relu_triton.py", "definition.md", "report.json", "optimization_log.md"} <= stored


def test_definition_document_carries_computed_figures(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _kernelgen(tmp_path, "run", "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]", "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    text = (out / "definition.md").read_text()
    # read: 8192*4096 + 4096 fp16 elements; written: 8192*4096 fp16 elements
    assert "| 67,117,056 | 67,108,864 |" in text
    assert "memory-bandwidth bound" in text


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("ReLU on a float32 tensor x", "shape"),
        ("relu on x [10, 10] int8", "int8"),
        ("x [3, 4] + y [5] fp32", "broadcast"),
        # Softmax, prefix sums, losses, products and conv2d are written offline now: these two are still refused.
        ("F.conv1d(x, w) x [1, 3, 8] w [4, 3, 3] fp32", "conv1d is not written offline yet"),
        ("torch.sum(x, dim=(0, 2)) x [3, 4, 5]", "not adjacent"),
        ("please make it fast", "shape"),
    ],
)
def test_bad_spec_ends_with_a_clear_error_and_no_kernel(spec: str, words: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _kernelgen(tmp_path, "run", spec, "--out", str(out))
    assert run.returncode != 0
    assert "rejected" in run.stdout and words in run.stdout.lower()
    assert not out.exists() or not any(out.rglob("*.py"))


def test_a_bad_initial_config_is_refused_before_anything_runs_naming_the_rule(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path, "run", "ReLU on x [4, 4]", "--initial-config", "flat: BLOCK_SIZE=300",
                     "--device", "cpu")
    assert run.returncode == 2
    assert "BLOCK_SIZE=300: it must be a power of two" in run.stdout + run.stderr
    assert not (tmp_path / "kernelgen_out").exists() and not (tmp_path / "kg.db").exists()  # nothing ran


@pytest.mark.parametrize("command", [[], ["run"], ["read"], ["patterns"], ["serve"], ["users"], ["users", "add"],
                                     ["users", "revoke"], ["users", "list"]], ids=lambda c: " ".join(c) or "kernelgen")
def test_help_texts_keep_every_word_and_no_space_before_a_full_stop(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = [line.strip(" │") for line in result.output.splitlines()]
    assert not [line for line in lines if re.search(r" [.,;:](?:\s|$)", line)], result.output
    if command == ["run"]:  # bracketed text in a help string is read as markup and vanishes
        for words in ("(default kernelgen_out/<op>)", "(env KERNELGEN_INITIAL_CONFIG)", "(env KERNELGEN_LLM)",
                      "(env KERNELGEN_LLM_BASE_URL)", "(env KERNELGEN_LLM_MODEL)"):
            assert words in result.output


def test_a_rejection_is_printed_once_with_its_reason(tmp_path: Path) -> None:
    run = _kernelgen(tmp_path, "run", "conv1d stride 1 padding 1, x [8, 64, 56] w [64, 64, 3] fp16",
                     "--device", "cpu")
    assert run.returncode == 1
    assert "input w: float16 [64, 64, 3]" in run.stdout  # the reading names both tensors
    assert run.stdout.count("conv1d is not written offline yet") == 1, run.stdout
    assert "rejected: the generate line above says why" in run.stdout and "No kernel was written." in run.stdout


def test_a_question_exits_2_as_kernelgen_read_says_and_only_a_question_does(tmp_path: Path) -> None:
    asked = _kernelgen(tmp_path, "run", "please make it fast", "--device", "cpu")
    assert asked.returncode == 2, asked.stdout + asked.stderr
    assert "rejected" in asked.stdout and "No kernel was written." in asked.stdout
    assert _kernelgen(tmp_path, "read", "please make it fast").returncode == 2
    # A refusal at generation is not a question: exit code 1 (test_a_rejection_is_printed_once_with_its_reason).
