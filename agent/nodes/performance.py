"""Stage 4b: the performance test in the sandbox (only after accuracy passed)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.runtime.results import number
from agent.runtime.sandbox import run_file
from agent.runtime.timing import disagreement, time_entry
from agent.state import JobState


def performance(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Run `<op>_performance.py`; a model-written version is timed by the service's harness as well."""
    files, pending, ctx = state["files"], state["pending"], runtime.context
    folder = ctx.work_dir / f"job-{state['job_id']}"
    # torch.compile is timed once; the flag is part of the offline file's interface, not of the model's contract.
    args = () if pending.index == 0 or files.origin == "llm" else ("--no-compile",)
    device = state["device"].kind
    with ctx.accelerators.hold(device):
        run = run_file(files.files, files.name_of("performance"), folder / f"round-{pending.index}-performance",
                       device=device, timeout_s=ctx.performance_timeout_s, args=args, trusted=files.trusted)
        if files.origin == "llm":
            own = run
            run = time_entry(files, state["spec"], folder / f"round-{pending.index}-timing", device=device,
                             timeout_s=ctx.performance_timeout_s)
    result = dict(run.result)
    if files.origin == "llm":
        model_speedup = number(own.result.get("speedup_geomean"))
        result["model_file"] = {"status": own.status, "speedup_geomean": model_speedup,
                                "message": str(own.result.get("message") or own.result.get("reason") or "")[:500]}
        flag = disagreement(result.get("speedup_geomean"), model_speedup)
        if flag:
            result["model_file"]["suspect"] = flag
            ctx.report("performance", f"round {pending.index}: {flag}")
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
