"""The optimization log says what ran, what was measured and what was learned, round by round."""

import difflib
import json
import re
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.diagnosis import Action, Diagnosis
from agent.generators.base import KernelFiles, LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.nodes.accuracy import accuracy
from agent.nodes.classify import classify
from agent.nodes.edit import edit
from agent.nodes.generate import generate
from agent.nodes.log import judge, log
from agent.nodes.performance import performance
from agent.nodes.profile import profile
from agent.nodes.search import search
from agent.reader import read_spec
from agent.runner import run_job
from agent.runtime.devices import DeviceInfo, detect
from agent.state import JobRequest, JobState, RoundRecord
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine

RECORDED = json.loads((Path(__file__).parents[1] / "data" / "h200_bias_add_gelu.json").read_text())
H200_SPEC = "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]"
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)


def _runtime(tmp_path: Path) -> Runtime[JobContext]:
    return Runtime(context=JobContext(engine=make_engine(f"sqlite:///{tmp_path / 'kg.db'}"),
                                      work_dir=tmp_path / "work"))


def _round(text: str, index: int) -> str:
    """Return one round's section of a log."""
    return text.split(f"## Round {index}:")[1].split("## Round ")[0]


def _lessons(section: str) -> dict[str, list[str]]:
    """Read the success / failure / next-direction lists of a round's lessons."""
    parts = re.split(r"\*\*(Success|Failure|Next direction) \([^)]*\)\*\*", section.split("### Lessons")[1])
    return {name: [line[2:] for line in body.splitlines() if line.startswith("- ")]
            for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_a_cpu_job_logs_the_shapes_that_ran_and_says_speed_was_not_measured(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite:///{tmp_path / 'kg.db'}",  # type: ignore[call-arg]
                        work_dir=tmp_path / "work")
    out = tmp_path / "out"
    final = run_job(JobRequest(spec_text="relu of x with shapes [64, 64] and [4096, 2048] fp32", out_dir=str(out),
                               device="cpu", rounds=1), settings, lambda stage, message: None)
    assert final["status"] == "verified"
    text = (out / "optimization_log.md").read_text()
    # The large spec shape is over the interpreter's cap: it is named as not run, never as tested.
    assert ("- Shapes checked for accuracy (正确性测试 Shape): x [64, 64], beside 4 odd-shape case(s); "
            "not run: x [4096, 2048] (too large for the CPU interpreter") in text
    assert "- Shapes timed (性能测试 Shape): not measured on this device: no accelerator (CPU interpreter)" in text
    assert "met (是否达到目标): not measured on this device" in text and "met (是否达到目标): no\n" not in text
    assert "Test shapes" not in text
    assert "| Memory bandwidth (% of the measured copy bandwidth) | not measured on this device |" in text
    assert "| L2 cache hit rate | not measured on this device |" in text
    lessons = _lessons(_round(text, 0))
    assert lessons["Success"][0].startswith("v0 passed accuracy on ")
    assert lessons["Failure"] == ["none in this round"]
    assert lessons["Next direction"][0].startswith("time v0 on an accelerator")
    assert lessons["Next direction"][1] == "check the spec shapes not run here on an accelerator: x [4096, 2048]"


def test_a_schedule_switch_logs_the_changed_kernel_lines_before_and_after(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    text = "fused bias-add + GELU, x [16, 96] fp32, bias [96]"
    job_id = crud.create_job(runtime.context.engine, text, str(tmp_path / "out"))
    state: JobState = {"job_id": job_id, "request": JobRequest(spec_text=text), "spec": read_spec(text),
                       "device": detect("cpu"), "out_dir": str(tmp_path / "out"), "rounds": [], "best_round": None,
                       "category": "elementwise/row-broadcast", "done": [], "patterns": []}
    for node in (generate, accuracy, performance, profile, log):
        state.update(node(state, runtime))  # type: ignore[typeddict-item]
    action = Action(key="schedule flat -> rows", schedule="rows", expected_edit="logic")
    state["proposal"] = Diagnosis(bottleneck="memory", evidence={}, action=action, change="2-D tiles",
                                  predicted_gain="+5-20%")
    for node in (edit, search, classify, accuracy, performance, profile, log):
        state.update(node(state, runtime))  # type: ignore[typeddict-item]
    section = _round((tmp_path / "out" / "optimization_log.md").read_text(), 1)
    before = section.split("Before (修改前代码), v0 `bias_add_gelu_triton.py`, changed lines:")[1].split("```")[1]
    after = section.split("After (修改后代码), v1 `bias_add_gelu_triton.py`, changed lines:")[1].split("```")[1]
    assert "\n-BLOCK_SIZE = 1024\n" in before and "BLOCK_SIZE" not in after
    assert "\n+BLOCK_M = " in after and "\n+BLOCK_N = " in after and "BLOCK_M" not in before
    assert "**Type (修改类型)**: logic (schedule flat -> rows): all four files." in section
    lessons = _lessons(section)
    assert lessons["Success"][0].startswith("v1 passed accuracy on ")
    assert any(line.startswith("the search's fastest correct configuration of ") and "`rows: BLOCK_M=" in line
               for line in lessons["Success"])
    # Nothing is timed on the CPU, so the switch cannot be shown faster: reverted, and the log says why.
    assert lessons["Failure"][0].startswith("not timed against v0: not measured")
    assert lessons["Next direction"][0].startswith("time v0 on an accelerator")


def _replayed(job: str, index: int) -> tuple[RoundRecord, KernelFiles]:
    """Rebuild a recorded H200 round as the log node receives it: figures as measured, files as generated."""
    recorded = RECORDED["jobs"][job]["rounds"][index]
    spec = read_spec(H200_SPEC)
    config = LaunchConfig(**recorded["config"])
    files = ElementwiseGenerator().generate(spec, config)
    fields: dict[str, Any] = {k: recorded[k] for k in ("edit_type", "action", "speedup", "pct_of_copy",
                                                       "performance", "profile", "diagnosis")}
    # The recording kept no accuracy result; every recorded round was timed, so it passed on the spec case.
    record = RoundRecord(index=index, config=config, reason=recorded["diagnosis"].get("change", "first version"),
                         accuracy_status="pass", performance_status="pass",
                         accuracy={"status": "pass", "cases_run": 1, "cases_failed": 0,
                                   "cases": [{"kind": "spec", "shapes": {"x": [8192, 4096], "bias": [4096]}}]},
                         base_index=index - 1 if index else None, **fields)
    return record, files


def _with_diff(record: RoundRecord, files: KernelFiles, base: KernelFiles) -> RoundRecord:
    name = files.name_of("triton")
    diff = "".join(difflib.unified_diff(
        base.source("triton").splitlines(keepends=True), files.source("triton").splitlines(keepends=True),
        fromfile=f"v{record.base_index}/{name}", tofile=f"v{record.index}/{name}"))
    return record.model_copy(update={"diff": diff})


def test_measured_rounds_log_utilisation_figures_and_lessons_from_the_recorded_h200_job(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    job = "A_poor_start_target_5"
    job_id = crud.create_job(runtime.context.engine, H200_SPEC, str(tmp_path / "out"))
    v0, files0 = _replayed(job, 0)
    spec = read_spec(H200_SPEC).model_copy(update={"target_speedup": RECORDED["jobs"][job]["target_speedup"]})
    state: JobState = {"job_id": job_id, "request": JobRequest(spec_text=H200_SPEC), "spec": spec,
                       "device": H200, "out_dir": str(tmp_path / "out"), "rounds": [], "best_round": None,
                       "category": "elementwise/row-broadcast", "patterns": [], "files": files0, "pending": v0,
                       "done": []}
    state.update(log(state, runtime))  # type: ignore[typeddict-item]
    for index in (1, 2):
        record, files = _replayed(job, index)
        state.update({"pending": _with_diff(record, files, state["best_files"]), "files": files,
                      "done": [*state["done"], record.action]})
        state.update(log(state, runtime))  # type: ignore[typeddict-item]
    text = (tmp_path / "out" / "optimization_log.md").read_text()

    first = _round(text, 1)
    assert "- Shapes timed (性能测试 Shape): x [8192, 4096], bias [4096]" in first
    assert "Main bottleneck of v1 (主要瓶颈): **compute-bound**: SM throughput 78% of peak" in first
    assert "| Memory bandwidth (% of the measured copy bandwidth) | 61.8% (2562 GB/s) |" in first
    assert "| Parallelism (programs launched per SM) | 16,384 programs on 132 SMs (124.1 per SM) | ncu grid size |" \
        in first
    assert "| DRAM throughput (% of peak) | 47.8% | ncu |" in first
    assert "| Achieved occupancy (warps resident / maximum) | 39.6% | ncu |" in first
    assert "| Registers per thread | 72 | ncu |" in first
    assert "| Register spills (local memory loads / stores) | none | ncu |" in first
    before = first.split("changed lines:")[1].split("```")[1]
    after = first.split("changed lines:")[2].split("```")[1]
    assert before == "diff\n-BLOCK_SIZE = 256\n-NUM_WARPS = 8\n"
    assert after == "diff\n+BLOCK_SIZE = 2048\n+NUM_WARPS = 2\n"
    assert "≥ 5× over eager PyTorch; met (是否达到目标): no\n" in first  # x2.47 against the recorded job's x5
    lessons = _lessons(first)
    assert "`flat: BLOCK_SIZE=2048, NUM_WARPS=2` (parameter search (flat)) is +94.8% over v0: the new best version" \
        in lessons["Success"]
    assert lessons["Failure"] == ["none in this round"]
    # What the diagnosis of v1 picks is what the recorded job did next.
    assert lessons["Next direction"][0].startswith("v1 is compute-bound: next `schedule flat -> rows` (logic edit)")

    second = _round(text, 2)
    lessons = _lessons(second)
    assert lessons["Failure"][0].startswith("-4.3% against v1: ")
    assert lessons["Next direction"][0].startswith("v1 is compute-bound: next `schedule flat -> persistent`")
    assert "After (修改后代码), v2 `bias_add_gelu_triton.py`, changed lines:" in second


def test_without_counters_the_log_keeps_the_timing_figures_and_says_why_the_rest_is_missing(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    job_id = crud.create_job(runtime.context.engine, H200_SPEC, str(tmp_path / "out"))
    # The recorded H200 timing, profiled here where ncu cannot run: the profile node records why.
    record, files = _replayed("A_poor_start_target_5", 0)
    device = H200.model_copy(update={"kind": "cpu"})
    state: JobState = {"job_id": job_id, "request": JobRequest(spec_text=H200_SPEC), "spec": read_spec(H200_SPEC),
                       "device": device, "out_dir": str(tmp_path / "out"), "rounds": [], "best_round": None,
                       "patterns": [], "done": [], "files": files, "pending": record.model_copy(update={"profile": {}})}
    state.update(profile(state, runtime))  # type: ignore[typeddict-item]
    state.update(log(state, runtime))  # type: ignore[typeddict-item]
    text = (tmp_path / "out" / "optimization_log.md").read_text()
    assert "| Memory bandwidth (% of the measured copy bandwidth) | 31.8% (1314 GB/s) |" in text
    assert "| Parallelism (programs launched per SM) | 131,072 programs on 132 SMs (993.0 per SM) | launch arithmetic" \
        in text
    assert "| L2 cache hit rate | not measured: no accelerator" in text


def test_a_slower_round_is_called_slower_and_a_level_one_noise() -> None:
    def measured(index: int, speedup: float) -> RoundRecord:
        return RoundRecord(index=index, edit_type="parameter", config=LaunchConfig(), reason="r",
                           accuracy_status="pass", speedup=speedup)

    assert judge(measured(2, 1.4), measured(1, 2.0)) == (False, "-30.0% (speedup) against v1: slower, reverted")
    kept, said = judge(measured(2, 2.005), measured(1, 2.0))
    assert not kept and said.endswith("against v1 (within the 1% noise): reverted")
