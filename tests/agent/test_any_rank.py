"""Any rank: a rank-7 broadcast chain reads, gets consistent odd-shape edge cases, and ends verified on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

from agent.ir.edges import edge_cases
from agent.reader import read_spec
from agent.runner import run_job
from agent.state import JobRequest
from kernelgen.settings import Settings

SPEC = "out = relu(x + bias), x [2, 1, 3, 1, 2, 3, 5] fp32, bias [5] fp32"


def test_rank_seven_edge_cases_keep_every_input_consistent() -> None:
    spec = read_spec(SPEC)
    cases = edge_cases(spec.expr, spec.shape_cases()[0], spec.dtype_cases()[0], {})
    assert cases and all(len(c["x"]) == 7 and c["bias"] == [c["x"][-1]] for c in cases)


def test_a_rank_seven_job_is_verified(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    final = run_job(JobRequest(spec_text=SPEC, out_dir=str(tmp_path / "out"), device="cpu", rounds=1), settings,
                    lambda stage, message: None)
    assert final["status"] == "verified", final.get("message")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["coverage"]["shapes"] == "spec" and report["coverage"]["edge_cases"] >= 2
