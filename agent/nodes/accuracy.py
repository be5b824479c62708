"""Stage 4a: static checks, then the accuracy test in the sandbox; for model-written files our own check, and an
audit of the model's test (the spec's cases, a deliberately wrong kernel)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.llm.contract import check_files
from agent.runtime.accuracy_audit import missing_cases, passes_a_wrong_kernel
from agent.runtime.cross_check import cross_check
from agent.runtime.results import clean_accuracy, failure_cause
from agent.runtime.sandbox import run_file
from agent.runtime.static_check import StaticCheckError, check_triton_file
from agent.state import JobState


def accuracy(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Refuse a kernel that breaks the contract; else run `<op>_accuracy.py` and, for LLM files, the cross-check."""
    files, pending, ctx = state["files"], state["pending"], runtime.context
    try:
        if files.origin == "llm":  # the whole contract, the kernel's static check included
            problem = check_files(files.files, files.op)
            if problem is not None:
                raise StaticCheckError(problem)
        else:
            check_triton_file(files.source("triton"), files.op)
    except StaticCheckError as exc:
        ctx.report("accuracy", f"round {pending.index}: refused by the static check: {exc}")
        return {"pending": pending.model_copy(update={"accuracy_status": "refused", "verdict": str(exc),
                                                      "accuracy": {"status": "refused", "message": str(exc)}})}
    folder = ctx.work_dir / f"job-{state['job_id']}"
    # The test runs kernels, on a device no job is timing on; other jobs' checks may share it (nothing is timed).
    with ctx.accelerators.hold(state["device"].kind, shared=True):
        run = run_file(
            files.files, files.name_of("accuracy"), folder / f"round-{pending.index}-accuracy",
            device=state["device"].kind, timeout_s=ctx.accuracy_timeout_s, trusted=files.trusted,
        )
        status = run.status
        result = run.result | {"stderr_tail": run.stderr_tail[-4000:]} if run.status != "pass" else dict(run.result)
        if files.origin == "llm":
            result = clean_accuracy(result)  # the model wrote the file that wrote this
        summary = (
            f"{result.get('cases_run', 0) - result.get('cases_failed', 0)}/{result.get('cases_run', 0)} cases pass"
            if "cases_run" in result else result.get("message", run.status)
        )
        if files.origin == "llm" and status in ("pass", "fail"):
            # The model wrote the test too: an independent check with our inputs and cases must agree.
            previous = None
            if pending.edit_type == "interface":  # the reference changed with the signature: it must mean the same
                # ... as the best version's, or, before any version passed, as the first version's.
                before = state["best_files"] if state.get("best_round") is not None else state["first_files"]
                previous = before.source("baseline")
            check = cross_check(files, state["spec"], folder / f"round-{pending.index}-cross-check",
                                device=state["device"].kind, timeout_s=ctx.accuracy_timeout_s,
                                previous_reference=previous)
            result["cross_check"] = check.result | ({"stderr_tail": check.stderr_tail[-2000:]}
                                                    if check.status != "pass" else {})
            checked = check.result.get("cases_run", 0) - check.result.get("cases_failed", 0)
            summary += f"; independent check {checked}/{check.result.get('cases_run', 0)} cases pass"
            if check.status != "pass" and status == "pass":
                status = "fail"
            if run.status == "pass":  # a test that passed must have run the spec's cases, and must be able to fail
                problems = [p for p in (
                    missing_cases(result, state["spec"], state["device"].kind),
                    passes_a_wrong_kernel(files, folder / f"round-{pending.index}-audit", device=state["device"].kind,
                                          timeout_s=ctx.accuracy_timeout_s)) if p]
                if problems:
                    result["audit"] = {"status": "fail", "message": "; ".join(problems)}
                    summary += f"; the accuracy test itself fails the contract: {problems[0][:200]}"
                    status = "fail"
    skipped = result.get("skipped", [])
    reasons = "; ".join(dict.fromkeys(str(s.get("reason", "")) for s in skipped if isinstance(s, dict)))
    note = f", {len(skipped)} skipped ({reasons or 'no reason given'})" if skipped else ""
    cause = failure_cause(result) if status != "pass" else None
    if cause:  # the first exception, in a line: the whole of each case's message stays in report.json
        result["cause"] = cause
        note += f"; first error: {cause}" if "cases_run" in result else ""
    ctx.report("accuracy", f"round {pending.index}: {status}: {summary}{note} in {run.seconds:.1f} s")
    return {"pending": pending.model_copy(update={"accuracy_status": status, "accuracy": result})}
