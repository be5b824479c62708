"""Rounds teach the pattern store, and the next job of the same kind starts from what it learned."""

from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.diagnosis import Action, Diagnosis, PatternHint
from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.nodes.classify import classify
from agent.nodes.edit import edit
from agent.nodes.generate import generate
from agent.nodes.log import log
from agent.nodes.search import search
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from agent.state import JobRequest, JobState, RoundRecord
from storage import crud
from storage.db import make_engine

SPEC = "fused bias-add + GELU, x [16, 96] fp32, bias [96]"
H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
CPU = DeviceInfo(kind="cpu", name="CPU, Triton interpreter")


def _runtime(tmp_path: Path) -> Runtime[JobContext]:
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    return Runtime(context=JobContext(engine=engine, work_dir=tmp_path / "work"))


def _state(tmp_path: Path, runtime: Runtime[JobContext], device: DeviceInfo, **extra: Any) -> JobState:
    spec = read_spec(SPEC)
    job_id = crud.create_job(runtime.context.engine, SPEC, str(tmp_path / "out"))
    files = ElementwiseGenerator().generate(spec, LaunchConfig(block_size=256, num_warps=8))
    v0 = RoundRecord(index=0, edit_type="initial", config=files.config, reason="first", accuracy_status="pass",
                     performance_status="pass", speedup=1.25, accepted=True)
    state: JobState = {
        "job_id": job_id, "request": JobRequest(spec_text=SPEC), "spec": spec, "device": device,
        "out_dir": str(tmp_path / "out"), "files": files, "best_files": files, "rounds": [v0], "best_round": 0,
        "category": "elementwise/row-broadcast", "done": [], "refusals": [],
    }
    state.update(extra)  # type: ignore[typeddict-item]
    return state


def _measured_round(config: LaunchConfig, speedup: float) -> RoundRecord:
    return RoundRecord(
        index=1, edit_type="parameter", config=config, reason="search", accuracy_status="pass",
        performance_status="pass", speedup=speedup, action="parameter search (flat)", base_index=0,
        diagnosis={"bottleneck": "memory", "evidence": {"pct_of_copy": 30.9}, "predicted_gain": "+5-30%"},
    )


def test_a_round_that_helped_is_filed_and_becomes_the_best(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    better = LaunchConfig(block_size=1024, num_warps=1)
    candidate = ElementwiseGenerator().generate(read_spec(SPEC), better)
    state = _state(tmp_path, runtime, H200, files=candidate, pending=_measured_round(better, 2.5))
    updates = log(state, runtime)
    assert updates["best_round"] == 1 and updates["best_files"] == candidate
    [pattern] = crud.list_patterns(runtime.context.engine, device="NVIDIA H200")
    assert (pattern.change, pattern.times_applied, pattern.times_helped) == ("parameter search (flat)", 1, 1)
    assert pattern.mean_gain == pytest.approx(1.0) and pattern.best_speedup == pytest.approx(2.5)
    assert pattern.params_after == better.label() and pattern.bottleneck == "memory"
    log_md = next(a for a in crud.list_artifacts(runtime.context.engine, state["job_id"])
                  if a.name == "optimization_log.md")
    assert "helped 1 of 1 times" in log_md.content and "Diagnosis of v0" in log_md.content


def test_a_slower_round_is_reverted_and_filed_as_not_helping(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    worse = LaunchConfig(block_size=128, num_warps=1)
    candidate = ElementwiseGenerator().generate(read_spec(SPEC), worse)
    state = _state(tmp_path, runtime, H200, files=candidate, pending=_measured_round(worse, 1.0))
    updates = log(state, runtime)
    assert "best_round" not in updates and updates["files"] == state["best_files"]
    assert "reverted" in updates["rounds"][-1].verdict
    [pattern] = crud.list_patterns(runtime.context.engine)
    assert pattern.times_helped == 0 and pattern.mean_gain == pytest.approx(-0.2)


def test_the_next_job_starts_from_the_best_known_configuration(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    known = PatternHint(change="parameter search (flat)", times_applied=1, times_helped=1, mean_gain=1.0,
                        best_speedup=2.5, params_after="flat: BLOCK_SIZE=1024, NUM_WARPS=1")
    state = _state(tmp_path, runtime, H200, patterns=[known])
    assert generate(state, runtime)["pending"].config == LaunchConfig(block_size=1024, num_warps=1)
    forced = LaunchConfig(block_size=256, num_warps=8)
    state["request"] = JobRequest(spec_text=SPEC, initial_config=forced)
    assert generate(state, runtime)["pending"].config == forced  # an asked-for start always wins
    state["request"], state["patterns"] = JobRequest(spec_text=SPEC), []
    assert generate(state, runtime)["pending"].config == LaunchConfig()  # no patterns: the default


def _diagnosis(key: str, schedule: str, expected: str) -> Diagnosis:
    action = Action(key=key, schedule=schedule, expected_edit=expected)  # type: ignore[arg-type]
    return Diagnosis(bottleneck="memory", evidence={"pct_of_copy": 50.0}, action=action, change=key,
                     predicted_gain="+5%")


def test_a_schedule_switch_is_searched_and_classified_as_logic(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    state = _state(tmp_path, runtime, CPU, proposal=_diagnosis("schedule flat -> rows", "rows", "logic"))
    state.update(edit(state, runtime))  # type: ignore[typeddict-item]
    assert state["pending"].config.schedule == "rows" and state["done"] == ["schedule flat -> rows"]
    state.update(search(state, runtime))  # type: ignore[typeddict-item]
    pending = state["pending"]
    assert pending.search["status"] == "pass" and len(pending.search["trials"]) >= 2
    assert all(t["config"].startswith("rows:") for t in pending.search["trials"])
    assert pending.config.label() == pending.search["winner"] and "BLOCK_M" in pending.diff
    state.update(classify(state, runtime))  # type: ignore[typeddict-item]
    assert state["pending"] is not None and state["pending"].edit_type == "logic"


def test_a_parameter_search_changes_only_the_kernel_file(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path)
    state = _state(tmp_path, runtime, CPU, proposal=_diagnosis("parameter search (flat)", "flat", "parameter"))
    state.update(edit(state, runtime))  # type: ignore[typeddict-item]
    state.update(search(state, runtime))  # type: ignore[typeddict-item]
    pending = state["pending"]
    if pending.accuracy_status == "unchanged":  # the interpreter's clock kept the start: nothing to apply
        assert pending.config == state["best_files"].config
        return
    changed = [name for name, text in state["files"].files.items() if state["best_files"].files[name] != text]
    assert changed == [state["files"].name_of("triton")]
    state.update(classify(state, runtime))  # type: ignore[typeddict-item]
    assert state["pending"] is not None and state["pending"].edit_type == "parameter"
