"""Stage 4b: the performance test in the sandbox (only after accuracy passed)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.runtime.sandbox import run_file
from agent.state import JobState


def performance(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Run `<op>_performance.py`; torch.compile is timed once, in the first round."""
    files, pending, ctx = state["files"], state["pending"], runtime.context
    workdir = ctx.work_dir / f"job-{state['job_id']}" / f"round-{pending.index}-performance"
    args = () if pending.index == 0 else ("--no-compile",)
    with ctx.measure_lock:
        run = run_file(
            files.files, files.name_of("performance"), workdir,
            device=state["device"].kind, timeout_s=ctx.performance_timeout_s, args=args,
        )
    result = run.result
    speedup = result.get("speedup_geomean")
    pct = result.get("pct_of_copy_min")
    if run.status == "pass" and speedup is not None:
        ctx.report("performance", f"round {pending.index}: geomean speedup x{speedup:.3f}, "
                   f"{pct:.1f}% of measured copy bandwidth (worst case)")
    else:
        reason = result.get("reason") or result.get("message") or run.stderr_tail[-500:]
        ctx.report("performance", f"round {pending.index}: {run.status}: {reason}")
    return {"pending": pending.model_copy(update={
        "performance_status": run.status, "performance": result, "speedup": speedup, "pct_of_copy": pct,
    })}
