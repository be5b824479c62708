"""Stage 4c: read the best version's measured figures; stop, or name the bottleneck and the next change."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.diagnosis import Diagnosis, diagnose_version, evidence_of, good_enough
from agent.llm.authoring import hints_of, propose
from agent.llm.client import LlmError
from agent.roofline import Placement
from agent.runtime.results import failure_cause
from agent.state import JobState, RoundRecord
from agent.targets import stalled, vs_compile

EXHAUSTED = "every schedule and parameter search"


def diagnose(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Stop when verified and good enough or out of options; else propose the next action (rules, then the LLM)."""
    ctx, spec, rounds = runtime.context, state["spec"], state["rounds"]
    best_index = state.get("best_round")
    stop = _stop_reason(state)
    if stop is not None:
        ctx.report("diagnose", stop)
        return {"proposal": None, "message": stop, "status": "verified" if best_index is not None else "failed"}
    assert best_index is not None
    best = rounds[best_index]
    placement = Placement.model_validate(best.profile["roofline"])
    counters = best.profile.get("counters", {})
    speedup = best.speedup or 0.0
    compile_speedup = vs_compile(rounds[0], best)
    if state["best_files"].origin == "offline":
        diagnosis = diagnose_version(
            placement, counters, speedup=speedup, target=spec.target_speedup,
            current=best.config, schedules=ctx.generator.schedules(spec),
            row_broadcast=state.get("category", "").endswith("row-broadcast"),
            done=set(state.get("done", [])), patterns=state.get("patterns", []), compile_speedup=compile_speedup,
        )
        if diagnosis.action is not None:
            ctx.report("diagnose", _summary(diagnosis))
            return {"proposal": diagnosis}
        if ctx.llm is None or not (diagnosis.stop_reason or "").startswith(EXHAUSTED):
            message = f"{diagnosis.stop_reason}; best is v{best.index} at x{speedup:.3f}"
            ctx.report("diagnose", f"{diagnosis.bottleneck}-bound: {message}")
            return {"proposal": None, "message": message, "status": "verified"}
        rule = f"{diagnosis.bottleneck}-bound; {diagnosis.stop_reason}"
    else:
        done_why = good_enough(speedup, spec.target_speedup, placement.worst.pct_of_roofline, compile_speedup)
        if done_why is not None:
            message = f"{done_why}; best is v{best.index}"
            ctx.report("diagnose", message)
            return {"proposal": None, "message": message, "status": "verified"}
        rule = f"{placement.bound}-bound: {placement.why}"
    return _ask_model(state, ctx, placement, counters, rule)


def _ask_model(state: JobState, ctx: JobContext, placement: Placement, counters: dict[str, float],
               rule: str) -> dict[str, Any]:
    assert ctx.llm is not None
    spec, best = state["spec"], state["rounds"][state["best_round"] or 0]
    figures = evidence_of(placement, counters) | {"speedup": best.speedup, "target": spec.target_speedup}
    tried = [r.reason[:160] for r in state["rounds"] if r.origin == "llm" and r.repair_of is None and r.index]
    try:
        reply = propose(ctx.llm, spec, state["device"], state["best_files"], best_index=best.index,
                        speedup=best.speedup or 0.0, figures=figures, rule_diagnosis=rule,
                        hints=hints_of(state.get("patterns", [])), tried=tried,
                        definition=state.get("definition", ""))
    except LlmError as exc:
        message = f"the LLM could not diagnose v{best.index}: {exc}; best is v{best.index} at x{best.speedup:.3f}"
        ctx.report("diagnose", message)
        return {"proposal": None, "message": message, "status": "verified"}
    if reply.stop:
        message = f"the model proposes no further change ({reply.evidence}); best is v{best.index}"
        ctx.report("diagnose", message)
        return {"proposal": None, "message": message, "status": "verified"}
    ctx.report("diagnose", f"{reply.bottleneck}-bound ({reply.evidence[:160]}); next ({reply.edit_type}): "
               f"{reply.change[:160]}; expected {reply.predicted_gain}")
    return {"proposal": None, "llm_proposal": reply.model_dump()}


def _summary(diagnosis: Diagnosis) -> str:
    e = diagnosis.evidence
    assert diagnosis.action is not None
    return (f"{diagnosis.bottleneck}-bound ({e['pct_of_copy']}% of copy, {e['pct_of_roofline']}% of roofline "
            f"on {e['case']}); next: {diagnosis.action.key}; expected {diagnosis.predicted_gain}")


def _failure(record: RoundRecord) -> str:
    """Say in a line why a version failed: the refusal, the first exception its run raised, or what it reported."""
    check = record.accuracy.get("cross_check") or {}
    message = failure_cause(record.accuracy) or failure_cause(check) or _failed_cases(record.accuracy) \
        or _failed_cases(check) or record.verdict
    return f"v{record.index} {record.accuracy_status}: {message}"[:400]


def _failed_cases(result: dict[str, Any]) -> str | None:
    """Say how many cases gave wrong values, and by how much (None when the result lists no failed case)."""
    failed, run = result.get("cases_failed"), result.get("cases_run")
    if not isinstance(failed, int) or not isinstance(run, int) or not failed:
        return None
    error = result.get("max_abs_err")
    return f"{failed} of {run} cases give wrong values" + (
        f" (max abs error {error:.3g})" if isinstance(error, int | float) else "")


def _stop_reason(state: JobState) -> str | None:
    spec, rounds = state["spec"], state["rounds"]
    best_index = state.get("best_round")
    if state.get("llm_error"):
        return state["llm_error"] + (f"; best is v{best_index}" if best_index is not None else "")
    if best_index is None:
        if state.get("generator", "offline") == "offline":
            return (f"no version passed the accuracy test ({_failure(rounds[-1]) if rounds else 'none ran'}); "
                    "the offline generator does not repair kernels (every case's result is in report.json)")
        return (f"no version passed the accuracy test after {state.get('repair_attempts', 0)} repair attempts; "
                f"the last: {_failure(rounds[-1]) if rounds else 'none ran'} (see the rounds in report.json)")
    best = rounds[best_index]
    if state["device"].kind == "cpu":
        return ("verified on the CPU interpreter; performance is not measured without an accelerator, "
                "so the optimization loop ends after accuracy")
    if best.performance_status != "pass" or best.speedup is None or not best.profile.get("roofline"):
        cause = failure_cause(best.performance) if best.performance_status != "pass" else None
        return (f"the performance test did not complete ({best.performance_status}{': ' + cause if cause else ''}); "
                "the kernel is verified only")
    optimization_rounds = [r for r in rounds if r.repair_of is None]
    if len(optimization_rounds) > spec.max_rounds:
        return f"all {spec.max_rounds} optimization rounds used; best is v{best.index} at x{best.speedup:.3f}"
    no_gain = stalled(rounds)
    if no_gain is not None:
        return f"{no_gain}; best is v{best.index} at x{best.speedup:.3f}"
    return None
