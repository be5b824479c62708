"""Stage 4a: static check, then the accuracy test in the sandbox."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.runtime.sandbox import run_file
from agent.runtime.static_check import StaticCheckError, check_triton_file
from agent.state import JobState


def accuracy(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Refuse a kernel that does not launch Triton; else run `<op>_accuracy.py`."""
    files, pending, ctx = state["files"], state["pending"], runtime.context
    try:
        check_triton_file(files.source("triton"), files.op)
    except StaticCheckError as exc:
        ctx.report("accuracy", f"round {pending.index}: refused by the static check: {exc}")
        return {"pending": pending.model_copy(update={"accuracy_status": "refused", "verdict": str(exc)})}
    workdir = ctx.work_dir / f"job-{state['job_id']}" / f"round-{pending.index}-accuracy"
    run = run_file(
        files.files, files.name_of("accuracy"), workdir,
        device=state["device"].kind, timeout_s=ctx.accuracy_timeout_s,
    )
    result = run.result | {"stderr_tail": run.stderr_tail[-4000:]} if run.status != "pass" else run.result
    summary = (
        f"{result.get('cases_run', 0) - result.get('cases_failed', 0)}/{result.get('cases_run', 0)} cases pass"
        if "cases_run" in result else result.get("message", run.status)
    )
    skipped = len(result.get("skipped", []))
    note = f", {skipped} skipped (interpreter size limit)" if skipped else ""
    ctx.report("accuracy", f"round {pending.index}: {run.status}: {summary}{note} in {run.seconds:.1f} s")
    return {"pending": pending.model_copy(update={"accuracy_status": run.status, "accuracy": result})}
