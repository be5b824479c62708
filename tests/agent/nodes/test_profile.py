"""The profile node places a measured version on the roofline, and says why counters are missing."""

import json
from pathlib import Path

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.generators.base import LaunchConfig
from agent.generators.offline.elementwise import ElementwiseGenerator
from agent.nodes.profile import profile, programs
from agent.reader import read_spec
from agent.runtime.devices import DeviceInfo
from agent.state import JobState, RoundRecord
from storage.db import make_engine

RECORDED = json.loads((Path(__file__).parents[1] / "data" / "h200_bias_add_gelu.json").read_text())
SPEC = "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]"


def _state(device: DeviceInfo, performance_status: str = "pass") -> JobState:
    recorded = RECORDED["jobs"]["A_poor_start_target_5"]["rounds"][1]
    spec = read_spec(SPEC)
    config = LaunchConfig(**recorded["config"])
    pending = RoundRecord(index=1, edit_type="parameter", config=config, reason="search", accuracy_status="pass",
                          performance_status=performance_status, performance=recorded["performance"],
                          speedup=recorded["speedup"])
    return {"job_id": 1, "spec": spec, "device": device, "pending": pending,
            "files": ElementwiseGenerator().generate(spec, config)}


def test_without_counters_the_roofline_reading_is_still_recorded(tmp_path: Path) -> None:
    runtime = Runtime(context=JobContext(engine=make_engine(f"sqlite:///{tmp_path / 'kg.db'}"),
                                         work_dir=tmp_path / "work"))
    # The recorded H200 figures, read on a machine whose profiler cannot run (no CUDA device, no ncu here).
    device = DeviceInfo(kind="cpu", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
    record = profile(_state(device), runtime)["pending"].profile
    assert record["status"] == "unavailable" and "no accelerator" in record["message"]
    assert record["counters"] == {}
    roofline = record["roofline"]
    assert roofline["bound"] == "memory"  # without ncu's SM figures the compute limit cannot be seen
    assert roofline["tiles"] == 16384  # 8192 * 4096 / BLOCK_SIZE 2048
    assert 61.0 < roofline["worst"]["pct_of_roofline"] < 63.0


def test_a_version_without_performance_figures_is_not_profiled(tmp_path: Path) -> None:
    runtime = Runtime(context=JobContext(engine=make_engine(f"sqlite:///{tmp_path / 'kg.db'}"),
                                         work_dir=tmp_path / "work"))
    device = DeviceInfo(kind="cpu", name="CPU")
    assert profile(_state(device, performance_status="skipped"), runtime) == {}


def test_without_counters_a_row_kernel_counts_a_program_per_row_not_per_output_element() -> None:
    # A softmax of [64, 1000] writes 64,000 elements from 64 programs: 64 of 132 SMs busy is under-utilized.
    h100 = DeviceInfo(kind="cuda", name="NVIDIA H100", multiprocessors=132)
    softmax = read_spec("softmax over the last dim of x [64, 1000] fp32")
    assert programs(softmax, LaunchConfig(schedule="whole_row", block_m=1, num_warps=4), h100, 0) == 64
    assert programs(softmax, LaunchConfig(schedule="looped_row", block_size=256, block_m=2, num_warps=4), h100,
                    0) == 32
    gelu = read_spec(SPEC)
    assert programs(gelu, LaunchConfig(schedule="flat", block_size=1024, num_warps=4), h100, 0) == 8192 * 4096 // 1024


def test_the_last_round_reads_no_counters_but_keeps_its_roofline(tmp_path: Path) -> None:
    # No diagnosis follows the last round, so its profiler run (a process, a compile, replays) is not made.
    runtime = Runtime(context=JobContext(engine=make_engine(f"sqlite:///{tmp_path / 'kg.db'}"),
                                         work_dir=tmp_path / "work"))
    device = DeviceInfo(kind="cuda", name="NVIDIA H200", peak_gbs=4800.0, peak_tflops=67.0, multiprocessors=132)
    state = _state(device)
    state["spec"] = state["spec"].model_copy(update={"max_rounds": 1})
    state["rounds"] = [state["pending"].model_copy(update={"index": 0})]
    record = profile(state, runtime)["pending"].profile
    assert record["status"] == "skipped" and "no round follows" in record["message"]
    assert not (tmp_path / "work").exists()  # nothing ran
    assert record["roofline"]["tiles"] == 16384
    # With a round still to come, the same version is profiled (here: no GPU, so the profiler's failure is said)
    state["spec"] = state["spec"].model_copy(update={"max_rounds": 2})
    assert profile(state, runtime)["pending"].profile["status"] != "skipped"
