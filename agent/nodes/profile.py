"""Stage 5a: place the measured version on the roofline and read hardware counters (ncu / msprof)."""

from __future__ import annotations

import math
from typing import Any

from langgraph.runtime import Runtime

from agent.analysis import PRODUCT_FAMILIES
from agent.context import JobContext
from agent.definition_figures import launch_geometry, tiled_launch
from agent.diagnosis import ROW_SCHEDULES
from agent.generators.base import LaunchConfig
from agent.ir.family import family_of
from agent.roofline import launched_tiles, place
from agent.runtime.devices import DeviceInfo
from agent.runtime.profiling import ProfileResult, profile_kernel, summarize
from agent.runtime.spec_inputs import spec_inputs_module
from agent.runtime.tuning import search_cases
from agent.spec import OpSpec
from agent.state import JobState


def profile(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Profile the largest case's kernel launch in the sandbox, then compute the roofline reading."""
    ctx, spec, pending, files, device = (runtime.context, state["spec"], state["pending"], state["files"],
                                         state["device"])
    if pending.performance_status != "pass":
        return {}
    shape_index, dtype_index = search_cases(spec)[0]
    workdir = ctx.work_dir / f"job-{state['job_id']}" / f"round-{pending.index}-profile"
    sources = files.files
    if files.origin == "llm":  # the profiled problem is the spec's, not one the model's file chose
        sources = sources | {files.name_of("performance"): spec_inputs_module(spec)}
    if last_round(state):
        # Counters feed the next round's diagnosis alone; after the last round none follows, and a profiler run
        # costs a process, a compile and the kernel's replays (about 10 s on an H200). The roofline needs the timing.
        counters = ProfileResult(tool="none", status="skipped", metrics={}, seconds=0.0,
                                 message="no round follows, so no diagnosis reads counters (round "
                                         f"{pending.index} is the last of {spec.max_rounds})")
    else:
        with ctx.accelerators.hold(device.kind):
            counters = profile_kernel(sources, files.op, workdir, device=device.kind,
                                      timeout_s=ctx.profile_timeout_s, case_index=shape_index,
                                      dtype_index=dtype_index, trusted=files.trusted)
    metrics = counters.metrics if counters.status == "measured" else {}
    tiles = int(metrics["grid_size"]) if "grid_size" in metrics else programs(spec, pending.config, device,
                                                                               shape_index)
    products = spec.category != "custom" and family_of(spec.expr) in PRODUCT_FAMILIES
    placement = place(pending.performance, device.peak_tflops, device.multiprocessors, tiles, metrics,
                      tensor_tflops=device.peak_tensor_tflops if products else None)
    ctx.report("profile", f"round {pending.index}: {summarize(counters)}")
    if placement is not None:
        ctx.report("profile", f"round {pending.index}: {placement.bound}-bound: {placement.why}; worst case at "
                   f"{placement.worst.pct_of_roofline:.1f}% of its roofline")
    record = {"tool": counters.tool, "status": counters.status, "message": counters.message,
              "counters": metrics, "roofline": placement.model_dump() if placement else None}
    return {"pending": pending.model_copy(update={"profile": record})}


def last_round(state: JobState) -> bool:
    """Say whether the pending round is the job's last optimization round (a repair of it is not counted)."""
    pending = state["pending"]
    earlier = [r for r in state.get("rounds", []) if r.repair_of is None]
    return pending.repair_of is None and len(earlier) + 1 > state["spec"].max_rounds


def programs(spec: OpSpec, config: LaunchConfig, device: DeviceInfo, shape_index: int) -> int:
    """Count the programs a configuration launches for a shape case, as its wrapper computes them."""
    if config.schedule in ROW_SCHEDULES:
        # One program per row or lane tile, not per output element: a softmax of [64, 1000] launches 64.
        return launch_geometry(spec, config, device).rows[shape_index].programs
    if config.schedule in ("tiled", "flash"):
        return tiled_launch(spec, spec.shape_cases()[shape_index], config, device.multiprocessors or 0)[0]
    elements = math.prod(spec.output_shape(spec.shape_cases()[shape_index]))
    return launched_tiles(config.constants(), elements, device.multiprocessors)
