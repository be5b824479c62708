"""`kernelgen batch`: every task of a task book, folder or JSONL runs; --resume skips what finished; a report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from storage.db import make_engine
from storage.models import Job

BOOK = """# 任务书

## 任务 1：ReLU

- 输入参数：x：torch.Tensor，形状 [64, 64]，数据类型 float32
- 功能描述：out = relu(x)

## 任务 2：看不懂的

- 做点什么
"""


def _kernelgen(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}",
                        "KERNELGEN_WORK_DIR": str(tmp_path / "work"), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "kernelgen", *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


def _jobs(tmp_path: Path) -> int:
    with Session(make_engine(f"sqlite:///{tmp_path / 'kg.db'}")) as session:
        return int(session.exec(select(func.count()).select_from(Job)).one())


def test_a_task_book_batch_writes_each_task_and_a_report_and_resumes(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text(BOOK)
    out = tmp_path / "out"
    first = _kernelgen(tmp_path, "batch", str(book), "--out", str(out), "--device", "cpu")
    assert first.returncode == 1, first.stdout + first.stderr  # one task could not be read
    assert "verified 1 of 2" in first.stdout
    assert "every task runs on the CPU through the Triton interpreter: accuracy only" in " ".join(first.stdout.split())
    assert (out / "task_001_relu" / "relu_triton.py").exists()
    report = json.loads((out / "report.json").read_text())
    assert [t["status"] for t in report["tasks"]] == ["verified", "rejected"]
    assert "| verified | 1 of 2 (50%) |" in (out / "report.md").read_text()
    assert "<table>" in (out / "report.html").read_text()
    assert all((out / f"{name}.png").read_bytes()[:4] == b"\x89PNG" for name in ("fast_p", "speedups", "roofline"))
    jobs = _jobs(tmp_path)
    again = _kernelgen(tmp_path, "batch", str(book), "--out", str(out), "--device", "cpu", "--resume")
    assert again.returncode == 1 and "verified 1 of 2" in again.stdout
    assert _jobs(tmp_path) == jobs  # finished tasks are not run again


@pytest.mark.slow
def test_a_folder_and_a_jsonl_are_batches_too(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "relu.md").write_text("ReLU on a float32 tensor x of shape [16, 16]")
    (specs / "notes.bin").write_text("not a spec")
    done = _kernelgen(tmp_path, "batch", str(specs), "--out", str(tmp_path / "a"), "--device", "cpu")
    assert done.returncode == 0 and "verified 1 of 1" in done.stdout, done.stdout + done.stderr
    lines = tmp_path / "specs.jsonl"
    lines.write_text('{"spec": "sigmoid of x [8, 8] float32", "name": "sig"}\nnot json\n')
    refused = _kernelgen(tmp_path, "batch", str(lines), "--out", str(tmp_path / "b"))
    assert refused.returncode == 2 and "line 2: not JSON" in refused.stderr


def test_a_suite_with_references_runs_two_tasks_at_once(tmp_path: Path) -> None:
    suite = tmp_path / "suite.jsonl"
    suite.write_text(
        '{"name": "relu", "spec": "x [32, 48] float32", "reference": "def reference(x):\\n    return torch.relu(x)"}\n'
        '{"name": "rowsum", "spec": "Sum each row of x, x [9, 33] fp32"}\n')
    out = tmp_path / "out"
    done = _kernelgen(tmp_path, "bench", str(suite), "--out", str(out), "--device", "cpu", "--jobs", "2")
    assert done.returncode == 0 and "verified 2 of 2" in done.stdout, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert [(t["title"], t["op"], t["status"]) for t in report["tasks"]] == [
        ("relu", "relu", "verified"), ("rowsum", "reduce_sum", "verified")]
    assert "reference" in (out / "task_001_relu" / "relu_baseline.py").read_text()  # the record's code is the baseline
    assert all(t["seconds"] is not None and t["seconds"] > 0 for t in report["tasks"])  # each task's run time


def test_an_unknown_suite_is_refused_with_the_built_in_names(tmp_path: Path) -> None:
    refused = _kernelgen(tmp_path, "bench", "no-such-suite")
    assert refused.returncode == 2 and "families" in refused.stderr
