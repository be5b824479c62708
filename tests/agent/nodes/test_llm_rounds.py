"""Optimization rounds by the model on an accelerator: diagnosis from measured figures, then the edit it proposes.

The figures are an H200's (recorded); the model is a scripted HTTP endpoint reached through the openai client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.runtime import Runtime

from agent import routing
from agent.context import JobContext
from agent.diagnosis import PatternHint, search_key, switch_key
from agent.generators.base import KernelFiles, LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.llm.client import LlmClient
from agent.llm.config import LlmConfig
from agent.llm.replies import SpecReply
from agent.nodes.diagnose import diagnose
from agent.nodes.llm_edit import llm_edit
from agent.reader import read_spec
from agent.roofline import place
from agent.runtime.devices import DeviceInfo
from agent.state import JobRequest, JobState, RoundRecord
from storage import crud
from storage.db import make_engine
from tests.agent.llm.answers import SPEC, SPEC_TEXT, fenced, source
from tests.scripted_llm import MODEL, ScriptedLLM, scripted_llm

H200 = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
PREFIX_FILES = {f"prefix_sum_{role}.py": source(role) for role in ("triton", "baseline", "accuracy", "performance")}
# What prefix_sum v0 measured on the H200: few programs (8 rows), far from the copy bandwidth.
PERFORMANCE = {"status": "pass", "copy_gbs": 4150.0, "speedup_geomean": 1.1, "pct_of_copy_min": 0.4, "cases": [
    {"shapes": {"x": [8, 1000]}, "dtypes": {"x": "float32"}, "bytes": 64000, "triton_ms": 0.0385,
     "eager_ms": 0.0424, "speedup": 1.1, "gbs": 16.6, "pct_of_copy": 0.4, "tflops": 0.0002}]}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


def _runtime(tmp_path: Path, url: str) -> Runtime[JobContext]:
    engine = make_engine(f"sqlite:///{tmp_path / 'kg.db'}")
    config = LlmConfig(base_url=url, model=MODEL, max_retries=0, timeout_s=30)
    return Runtime(context=JobContext(engine=engine, work_dir=tmp_path / "work", llm=LlmClient(config)))


def _state(runtime: Runtime[JobContext], tmp_path: Path, spec_text: str, spec: Any, files: KernelFiles,
           **extra: Any) -> JobState:
    job_id = crud.create_job(runtime.context.engine, spec_text, str(tmp_path / "out"))
    placement = place(PERFORMANCE, H200.peak_tflops, H200.multiprocessors, tiles=8)
    assert placement is not None
    v0 = RoundRecord(index=0, edit_type="initial", config=files.config, reason="first", accuracy_status="pass",
                     performance_status="pass", performance=PERFORMANCE, speedup=1.1, accepted=True,
                     origin=files.origin, profile={"roofline": placement.model_dump(), "counters": {}})
    state: JobState = {
        "job_id": job_id, "request": JobRequest(spec_text=spec_text), "spec": spec, "device": H200,
        "out_dir": str(tmp_path / "out"), "files": files, "best_files": files, "rounds": [v0], "best_round": 0,
        "done": [], "refusals": [], "generator": f"openai:{MODEL}", "category": "custom/prefix_sum",
    }
    state.update(extra)  # type: ignore[typeddict-item]
    return state


def _prefix_state(runtime: Runtime[JobContext], tmp_path: Path, **extra: Any) -> JobState:
    spec = SpecReply.model_validate(SPEC).to_spec().model_copy(update={"target_speedup": 2.0})
    files = KernelFiles(op="prefix_sum", files=PREFIX_FILES, config=LaunchConfig(), origin="llm")
    return _state(runtime, tmp_path, SPEC_TEXT, spec, files, **extra)


def _proposal(edit_type: str, change: str) -> str:
    return json.dumps({"bottleneck": "under-utilized", "evidence": "8 programs on 132 SMs, 0.4% of copy",
                       "change": change, "edit_type": edit_type, "predicted_gain": "+20%"})


def test_the_model_diagnoses_the_figures_and_its_parameter_edit_touches_only_the_kernel(
    tmp_path: Path, llm: ScriptedLLM,
) -> None:
    runtime = _runtime(tmp_path, llm.url)
    hint = PatternHint(change="llm: BLOCK_SIZE 1024 -> 256", times_applied=2, times_helped=2, mean_gain=0.15,
                       best_speedup=1.4, params_after="flat: BLOCK_SIZE=256, NUM_WARPS=4")
    state = _prefix_state(runtime, tmp_path, patterns=[hint])
    llm.script("diagnosis", _proposal("parameter", "BLOCK_SIZE 1024 -> 256 and NUM_WARPS 4 -> 2"))
    faster = source("triton").replace("BLOCK_SIZE = 1024", "BLOCK_SIZE = 256").replace("NUM_WARPS = 4",
                                                                                         "NUM_WARPS = 2")
    llm.script("edit", fenced(("prefix_sum_triton.py", faster)))
    state.update(diagnose(state, runtime))  # type: ignore[typeddict-item]
    assert routing.after_diagnosis(state) == "llm_edit"
    prompt = llm.seen("diagnosis")[0].user_text
    assert '"pct_of_copy": 0.4' in prompt and "under-utilized" in prompt  # the measured figures and the rules
    assert "`llm: BLOCK_SIZE 1024 -> 256` (ending at flat: BLOCK_SIZE=256, NUM_WARPS=4) helped 2 of 2" in prompt
    state.update(llm_edit(state, runtime))  # type: ignore[typeddict-item]
    pending = state["pending"]
    assert pending is not None and pending.edit_type == "parameter" and pending.origin == "llm"
    assert pending.config.block_size == 256 and pending.config.num_warps == 2
    changed = [n for n in PREFIX_FILES if state["files"].files[n] != PREFIX_FILES[n]]
    assert changed == ["prefix_sum_triton.py"]
    assert routing.after_llm_edit(state) == "accuracy"
    assert "BLOCK_SIZE 1024 -> 256" in llm.seen("edit")[0].user_text


def test_the_model_calling_a_signature_change_logic_is_overruled_by_the_code(tmp_path: Path, llm: ScriptedLLM) -> None:
    runtime = _runtime(tmp_path, llm.url)
    state = _prefix_state(runtime, tmp_path)
    llm.script("diagnosis", _proposal("logic", "take the scan dimension as an argument"))
    llm.script("edit", fenced(("prefix_sum_triton.py", source("triton_dim"))))
    llm.script("baseline", fenced(("prefix_sum_baseline.py", source("baseline_dim"))))
    llm.script("accuracy", fenced(("prefix_sum_accuracy.py", source("accuracy") + "\n# dim-aware\n")))
    llm.script("performance", fenced(("prefix_sum_performance.py", source("performance") + "\n# dim-aware\n")))
    state.update(diagnose(state, runtime))  # type: ignore[typeddict-item]
    state.update(llm_edit(state, runtime))  # type: ignore[typeddict-item]
    pending = state["pending"]
    assert pending is not None and pending.edit_type == "interface"
    assert "(the model called it logic)" in pending.reason
    assert all(state["files"].files[n] != PREFIX_FILES[n] for n in PREFIX_FILES)  # all four rewritten


def test_a_model_that_sees_nothing_to_gain_ends_the_loop(tmp_path: Path, llm: ScriptedLLM) -> None:
    runtime = _runtime(tmp_path, llm.url)
    state = _prefix_state(runtime, tmp_path)
    llm.script("diagnosis", json.dumps({"bottleneck": "latency", "evidence": "38 us is launch latency",
                                        "change": "none", "edit_type": "parameter", "stop": True}))
    updates = diagnose(state, runtime)
    assert updates["status"] == "verified" and "no further change" in updates["message"]
    assert routing.after_diagnosis(state | updates) == "finalize"  # type: ignore[operator]


def test_a_known_family_hands_over_to_the_model_when_the_rules_run_out(tmp_path: Path, llm: ScriptedLLM) -> None:
    runtime = _runtime(tmp_path, llm.url)
    text = "fused bias-add + GELU, x [16, 96] fp32, bias [96]"
    spec = read_spec(text).model_copy(update={"target_speedup": 5.0})
    generator = ElementwiseGenerator()
    files = generator.generate(spec, LaunchConfig())
    schedules = generator.schedules(spec)
    tried = [search_key(s) for s in schedules] + [switch_key(a, b) for a in schedules for b in schedules]
    state = _state(runtime, tmp_path, text, spec, files, done=tried, category=generator.category(spec))
    llm.script("diagnosis", _proposal("logic", "compute GELU with fewer instructions"))
    updates = diagnose(state, runtime)
    assert updates.get("llm_proposal") is not None
    prompt = llm.seen("diagnosis")[0].user_text
    assert "every schedule and parameter search the offline generator knows was tried" in prompt
    assert files.source("triton").splitlines()[0] in prompt  # the offline kernel is the model's starting point


def test_without_an_llm_a_known_family_stops_when_the_rules_run_out(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "http://127.0.0.1:9/v1")
    runtime = Runtime(context=JobContext(engine=runtime.context.engine, work_dir=tmp_path / "work"))
    text = "fused bias-add + GELU, x [16, 96] fp32, bias [96]"
    spec = read_spec(text).model_copy(update={"target_speedup": 5.0})
    generator = ElementwiseGenerator()
    schedules = generator.schedules(spec)
    tried = [search_key(s) for s in schedules] + [switch_key(a, b) for a in schedules for b in schedules]
    state = _state(runtime, tmp_path, text, spec, generator.generate(spec, LaunchConfig()), done=tried,
                   generator="offline")
    updates = diagnose(state, runtime)
    assert updates["status"] == "verified" and "every schedule" in updates["message"]
