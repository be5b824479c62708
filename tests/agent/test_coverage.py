"""Verdicts say which shapes they cover, and a spec no device here can hold is refused up front with the figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.analysis import analyse
from agent.coverage import coverage_of, memory_refusal, planned
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.reader import read_spec
from agent.runner import run_job
from agent.runtime.devices import DeviceInfo, detect
from agent.state import JobRequest
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine

CPU = DeviceInfo(kind="cpu", name="CPU, Triton interpreter", memory_bytes=24 << 30)
H100 = DeviceInfo(kind="cuda", name="NVIDIA H100 80GB HBM3", peak_gbs=3350, peak_tflops=67, memory_bytes=80 << 30)


def _run(tmp_path: Path, text: str) -> tuple[dict[str, Any], Path, Settings]:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    out = tmp_path / "out"
    final = run_job(JobRequest(spec_text=text, out_dir=str(out), device="cpu", rounds=1), settings,
                    lambda stage, message: None)
    return dict(final), out, settings


def test_a_result_with_every_spec_shape_is_full_coverage() -> None:
    result = {"cases": [{"kind": "spec", "shapes": {"x": [64, 64]}}, {"kind": "edge", "shapes": {"x": [1, 1]}},
                        {"kind": "edge", "shapes": {"x": [3, 67]}}], "skipped": []}
    coverage = coverage_of(result)
    assert coverage.shapes == "spec" and coverage.edge_cases == 2
    assert coverage.line().startswith("checked on every spec shape (1)")


def test_a_skipped_spec_shape_makes_the_coverage_reduced_and_says_why() -> None:
    result = {"cases": [{"kind": "edge", "shapes": {"x": [1, 1]}}],
              "skipped": [{"kind": "spec", "shapes": {"x": [4096, 2048]},
                           "reason": "too large for the CPU interpreter"},
                          {"kind": "edge", "shapes": {"x": [4097, 2049]}, "reason": "too large"}]}
    coverage = coverage_of(result)
    assert coverage.shapes == "reduced" and [s["shapes"] for s in coverage.skipped] == [{"x": [4096, 2048]}]
    assert "reduced shapes only" in coverage.line() and "x [4096, 2048]" in coverage.line()
    assert "too large for the CPU interpreter" in coverage.line()


def test_the_definition_says_ahead_which_shapes_the_cpu_will_not_run() -> None:
    spec = read_spec("relu of x [4096, 2048] fp32")
    assert 4096 * 2048 > CPU_MAX_ELEMENTS
    assert "x [4096, 2048] will not be checked here" in planned(analyse(spec, CPU), CPU)
    assert planned(analyse(spec, H100), H100).startswith("every spec shape runs on NVIDIA H100")
    small = read_spec("relu of x [64, 64] fp32")
    assert planned(analyse(small, CPU), CPU).startswith("every spec shape runs in the Triton interpreter")


def test_tensors_larger_than_the_device_memory_are_refused_with_the_figure() -> None:
    spec = read_spec("relu of x [65536, 65536] fp32")  # 16 GiB in, 16 GiB out
    message = memory_refusal(analyse(spec, CPU), CPU)
    assert message is not None and "32.0 GiB" in message and "24.0 GiB" in message
    assert memory_refusal(analyse(spec, H100), H100) is None


def test_the_cpu_knows_its_memory() -> None:
    memory = detect("cpu").memory_bytes
    assert memory is not None and memory > 1 << 30


def test_a_job_checked_on_reduced_shapes_says_so_everywhere(tmp_path: Path) -> None:
    final, out, settings = _run(tmp_path, "relu of x [4096, 2048] fp32")
    assert final["status"] == "verified"
    assert "checked on reduced shapes only" in final["message"] and "x [4096, 2048]" in final["message"]
    report = json.loads((out / "report.json").read_text())
    assert report["coverage"]["shapes"] == "reduced" and report["coverage"]["edge_cases"] >= 2
    assert "will not be checked here" in (out / "definition.md").read_text()
    assert "- Coverage: checked on reduced shapes only" in (out / "optimization_log.md").read_text()
    job = crud.get_job(make_engine(settings.database_url), final["job_id"])
    assert job is not None and job.coverage == "reduced" and "reduced shapes" in job.message


def test_a_spec_no_device_here_can_hold_is_refused_before_any_file(tmp_path: Path) -> None:
    final, out, _ = _run(tmp_path, "relu of x [524288, 1048576] fp32")  # 2 TiB in, 2 TiB out
    assert final["status"] == "rejected"
    assert "need 4.0 TiB" in final["message"] and "more than the" in final["message"]
    assert not list(out.glob("*_triton.py"))
