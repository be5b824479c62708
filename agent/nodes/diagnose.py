"""Stage 4c: read the measured figures and decide to stop or what to change next."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.state import JobState, Proposal

# Within this share of the measured copy bandwidth a streaming kernel has little left to gain.
NEAR_ROOFLINE_PCT = 90.0


def diagnose(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Stop when verified and good enough (or out of options); else propose the next config."""
    ctx, spec, rounds = runtime.context, state["spec"], state["rounds"]
    best_index = state.get("best_round")
    best = rounds[best_index] if best_index is not None else None
    stop = _stop_reason(state)
    if stop is not None:
        status = "verified" if best is not None else "failed"
        ctx.report("diagnose", stop)
        return {"proposal": None, "message": stop, "status": status}
    assert best is not None and best.speedup is not None and best.pct_of_copy is not None
    untried = [c for c in ctx.generator.candidate_configs(spec) if c.label() not in state.get("tried", [])]
    if not untried:
        message = "every launch configuration the offline generator knows was tried"
        ctx.report("diagnose", message)
        return {"proposal": None, "message": message, "status": "verified"}
    shortfall = []
    if best.speedup < spec.target_speedup:
        shortfall.append(f"speedup x{best.speedup:.3f} is below the target x{spec.target_speedup}")
    if best.pct_of_copy < NEAR_ROOFLINE_PCT:
        shortfall.append(f"the worst case reaches {best.pct_of_copy:.1f}% of the measured copy bandwidth")
    reason = (
        f"Memory-bound kernel; {' and '.join(shortfall)}. A different block size / warp count changes "
        f"how many bytes each program keeps in flight: try {untried[0].label()} "
        f"(was {best.config.label()})."
    )
    ctx.report("diagnose", reason)
    return {"proposal": Proposal(config=untried[0], reason=reason)}


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
    if best.performance_status != "pass" or best.speedup is None or best.pct_of_copy is None:
        return f"the performance test did not complete ({best.performance_status}); the kernel is verified only"
    if len(rounds) >= spec.max_rounds:
        return f"all {spec.max_rounds} rounds used; best is v{best.index} at x{best.speedup:.3f}"
    if best.speedup >= spec.target_speedup and best.pct_of_copy >= NEAR_ROOFLINE_PCT:
        return (f"target met: x{best.speedup:.3f} ≥ x{spec.target_speedup}, and within "
                f"{100 - NEAR_ROOFLINE_PCT:.0f}% of the measured copy bandwidth")
    return None
