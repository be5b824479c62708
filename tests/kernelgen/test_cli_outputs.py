"""What the command line keeps and refuses: no output folder overwritten without a word, no accelerator faked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.output import fresh_folder
from kernelgen.cli import app
from server.batch_report import to_markdown, totals

# Read, then refused at generation (the offline generator does not write conv1d): a job that ends at once.
UNWRITTEN = "conv1d stride 1 padding 1, x [8, 64, 56] w [64, 64, 3] fp16"


def _kernelgen(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ) | {"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}",
                              "KERNELGEN_WORK_DIR": str(tmp_path / "work"), "COLUMNS": "200"} | env
    return subprocess.run([sys.executable, "-m", "kernelgen", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)


def test_bench_on_cuda_without_a_gpu_is_refused_once_and_fast(tmp_path: Path) -> None:
    """`kernelgen bench --device cuda` where torch sees no GPU: one clear error, nothing recorded, no task run."""
    began = time.monotonic()
    refused = _kernelgen(tmp_path, "bench", "--device", "cuda", "--out", str(tmp_path / "bench"),
                         CUDA_VISIBLE_DEVICES="")
    took = time.monotonic() - began
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = " ".join(refused.stderr.split())
    assert "cuda was asked for" in said and "no CUDA device" in said and "--device cpu" in said, said
    assert said.count("cuda was asked for") == 1  # once, not once per task
    assert took < 60, took  # the suite's 24 tasks ran to failure in 95 s
    assert not (tmp_path / "bench").exists() and not (tmp_path / "kg.db").exists()  # nothing was recorded


def test_run_into_a_folder_that_holds_files_is_refused_without_force(tmp_path: Path) -> None:
    """--out naming a folder with an earlier job's files: refused before anything runs; --force is named."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "relu_triton.py").write_text("# an earlier job's kernel\n")
    refused = CliRunner().invoke(app, ["run", "ReLU on x [4, 4] float32", "--out", str(out)],
                                 env={"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}"})
    assert refused.exit_code == 2 and "--force" in refused.output, refused.output
    assert (out / "relu_triton.py").read_text() == "# an earlier job's kernel\n"
    assert not (tmp_path / "kg.db").exists()  # nothing ran


def test_a_batch_into_a_used_folder_is_refused_unless_resumed_or_forced(tmp_path: Path) -> None:
    """A second batch into the --out of the first would write over its tasks and report: refused, with the ways out."""
    out = tmp_path / "results"
    out.mkdir()
    (out / "batch.json").write_text('{"batch": 1}')
    book = tmp_path / "book.md"
    book.write_text("ReLU on x [4, 4] float32\n")
    refused = CliRunner().invoke(app, ["batch", str(book), "--out", str(out), "--device", "cpu"],
                                 env={"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}"})
    said = " ".join(refused.output.replace("│", " ").split())
    assert refused.exit_code == 2 and "--resume" in said and "--force" in said, refused.output
    assert (out / "batch.json").read_text() == '{"batch": 1}'


def test_fresh_folder_never_reuses_one_that_holds_files(tmp_path: Path) -> None:
    """kernelgen_out/<op> first, then <op>-2, <op>-3; an empty folder is taken; --force takes the first."""
    base = tmp_path / "kernelgen_out" / "relu"
    assert fresh_folder(base) == base and base.is_dir()
    assert fresh_folder(base) == base  # still empty: nothing to lose
    (base / "report.json").write_text("{}")
    second = fresh_folder(base)
    assert second == base.with_name("relu-2") and second.is_dir()
    (second / "report.json").write_text("{}")
    assert fresh_folder(base) == base.with_name("relu-3")
    assert fresh_folder(base, overwrite=True) == base


@pytest.mark.slow  # three jobs, about 30 s on two cores
def test_a_second_job_of_the_same_op_writes_to_a_fresh_folder_and_says_so(tmp_path: Path) -> None:
    """Two `kernelgen run` of one op without --out: the second does not touch kernelgen_out/<op> and names its own."""
    first = _kernelgen(tmp_path, "run", UNWRITTEN, CUDA_VISIBLE_DEVICES="")
    # Before generation, a CPU job says that it is checked and never timed (issue 53, item 7).
    assert "Triton interpreter: accuracy only, nothing is timed" in " ".join(first.stdout.split()), first.stdout
    folders = sorted(p.name for p in (tmp_path / "kernelgen_out").iterdir())
    assert len(folders) == 1, (folders, first.stdout)
    kept = (tmp_path / "kernelgen_out" / folders[0] / "report.json").read_text()
    second = _kernelgen(tmp_path, "run", UNWRITTEN)
    assert (tmp_path / "kernelgen_out" / folders[0] / "report.json").read_text() == kept  # not overwritten
    fresh = tmp_path / "kernelgen_out" / f"{folders[0]}-2"
    assert (fresh / "report.json").exists(), second.stdout
    said = " ".join(second.stdout.split())
    assert "holds an earlier job's files" in said and f"{folders[0]}-2" in said, said
    forced = _kernelgen(tmp_path, "run", UNWRITTEN, "--force")
    assert "holds an earlier job's files" not in forced.stdout
    assert sorted(p.name for p in (tmp_path / "kernelgen_out").iterdir()) == [folders[0], f"{folders[0]}-2"]


def _line(status: str, coverage: str | None, eager: float | None = None) -> dict[str, Any]:
    return {"status": status, "coverage": coverage, "speedup_vs_eager": eager, "speedup_vs_compile": None}


def test_batch_summary_says_what_ran_when_no_spec_shape_ran_and_nothing_was_timed() -> None:
    """CPU, reduced shapes: not "verified 2 of 2 (100%)" nor "fast_p p=0.0: 100%", but what actually ran."""
    report = {"batch": 1, "name": "cpu", "source": "taskbook", "tasks": [],
              "totals": totals([_line("verified", "reduced"), _line("verified", "reduced")])}
    text = to_markdown(report)
    assert "(100%)" not in text and "100%" not in text, text
    assert "| verified | on the spec's shapes: 0 of 2; on reduced shapes only: 2 (the spec's shapes" in text, text
    assert "| fast_p vs eager | not measured: no task was timed" in text, text
    # On the spec's shapes and timed, the figures stay as they were.
    timed = {**report, "totals": totals([_line("verified", "spec", 2.0), _line("failed", None)])}
    text = to_markdown(timed)
    assert "| verified | 1 of 2 (50%) |" in text and "p=1.5: 50%" in text, text


def test_generated_files_are_readable_by_the_persons_other_tools(tmp_path: Path) -> None:
    """A job's files are written 0644 as a plain open() writes them, not mkstemp's 0600."""
    from agent.output import write_artifact
    from storage import crud
    from storage.db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    job_id = crud.create_job(engine, "ReLU on x [4, 4]", str(tmp_path / "out"))
    path = write_artifact(engine, job_id, str(tmp_path / "out"), "relu_triton.py", "import torch\n")
    assert path.stat().st_mode & 0o777 == 0o644
    assert path.read_text() == "import torch\n"


def test_a_report_of_several_lines_goes_under_its_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """`requirements Understood as: ...` ran the stage's name into the reading; it now stands on its own line."""
    import io

    from rich.console import Console

    from kernelgen import cli

    shown = io.StringIO()
    monkeypatch.setattr(cli, "console", Console(file=shown, width=200, color_system=None))
    progress = cli._Progress()
    progress("requirements", "Understood as: relu (elementwise, read from text)\n  out = torch.relu(x)")
    progress("generate", "round 0: flat")
    lines = shown.getvalue().splitlines()
    assert lines[0].strip() == "requirements", lines
    assert lines[1].strip() == "Understood as: relu (elementwise, read from text)" and "out = torch.relu(x)" in lines[2]
    assert lines[3].strip() == "generate round 0: flat", lines


def test_the_command_line_starts_without_torch() -> None:
    """`kernelgen patterns`, `users` and --help load no torch (it took seconds before any of them could start)."""
    check = "import sys, kernelgen.cli; print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert loaded.stdout.strip() == "False", loaded.stdout + loaded.stderr
