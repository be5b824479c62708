"""Stage 4c: read the best version's measured figures; stop, or name the bottleneck and the next change."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.diagnosis import Diagnosis, diagnose_version
from agent.roofline import Placement
from agent.state import JobState


def diagnose(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Stop when verified and good enough or out of options; else propose the next action."""
    ctx, spec, rounds = runtime.context, state["spec"], state["rounds"]
    best_index = state.get("best_round")
    stop = _stop_reason(state)
    if stop is not None:
        ctx.report("diagnose", stop)
        return {"proposal": None, "message": stop, "status": "verified" if best_index is not None else "failed"}
    assert best_index is not None
    best = rounds[best_index]
    placement = Placement.model_validate(best.profile["roofline"])
    diagnosis = diagnose_version(
        placement, best.profile.get("counters", {}), speedup=best.speedup or 0.0, target=spec.target_speedup,
        current=best.config, schedules=ctx.generator.schedules(spec),
        row_broadcast=state.get("category", "").endswith("row-broadcast"),
        done=set(state.get("done", [])), patterns=state.get("patterns", []),
    )
    if diagnosis.action is None:
        message = f"{diagnosis.stop_reason}; best is v{best.index} at x{best.speedup:.3f}"
        ctx.report("diagnose", f"{diagnosis.bottleneck}-bound: {message}")
        return {"proposal": None, "message": message, "status": "verified"}
    ctx.report("diagnose", _summary(diagnosis))
    return {"proposal": diagnosis}


def _summary(diagnosis: Diagnosis) -> str:
    e = diagnosis.evidence
    assert diagnosis.action is not None
    return (f"{diagnosis.bottleneck}-bound ({e['pct_of_copy']}% of copy, {e['pct_of_roofline']}% of roofline "
            f"on {e['case']}); next: {diagnosis.action.key}; expected {diagnosis.predicted_gain}")


def _stop_reason(state: JobState) -> str | None:
    spec, rounds = state["spec"], state["rounds"]
    best_index = state.get("best_round")
    if best_index is None:
        return ("no version passed the accuracy test; the offline generator does not repair kernels "
                "(see the accuracy result in report.json)")
    best = rounds[best_index]
    if state["device"].kind == "cpu":
        return ("verified on the CPU interpreter; performance is not measured without an accelerator, "
                "so the optimization loop ends after accuracy")
    if best.performance_status != "pass" or best.speedup is None or "roofline" not in best.profile:
        return f"the performance test did not complete ({best.performance_status}); the kernel is verified only"
    if len(rounds) > spec.max_rounds:
        return f"all {spec.max_rounds} optimization rounds used; best is v{best.index} at x{best.speedup:.3f}"
    return None
