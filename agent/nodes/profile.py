"""Stage 5a: place the measured version on the roofline and read hardware counters (ncu / msprof)."""

from __future__ import annotations

import math
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.roofline import launched_tiles, place
from agent.runtime.profiling import profile_kernel, summarize
from agent.runtime.spec_inputs import spec_inputs_module
from agent.runtime.tuning import search_cases
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
    with ctx.measure_lock:
        counters = profile_kernel(sources, files.op, workdir, device=device.kind,
                                  timeout_s=ctx.profile_timeout_s, case_index=shape_index, dtype_index=dtype_index,
                                  trusted=files.trusted)
    metrics = counters.metrics if counters.status == "measured" else {}
    elements = math.prod(spec.output_shape(spec.shape_cases()[shape_index]))
    tiles = int(metrics["grid_size"]) if "grid_size" in metrics else launched_tiles(
        pending.config.constants(), elements, device.multiprocessors)
    placement = place(pending.performance, device.peak_tflops, device.multiprocessors, tiles, metrics)
    ctx.report("profile", f"round {pending.index}: {summarize(counters)}")
    if placement is not None:
        ctx.report("profile", f"round {pending.index}: {placement.bound}-bound: {placement.why}; worst case at "
                   f"{placement.worst.pct_of_roofline:.1f}% of its roofline")
    record = {"tool": counters.tool, "status": counters.status, "message": counters.message,
              "counters": metrics, "roofline": placement.model_dump() if placement else None}
    return {"pending": pending.model_copy(update={"profile": record})}
