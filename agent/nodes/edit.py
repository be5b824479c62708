"""Stage 4d: carry out the diagnosis's action: the candidate starts from the best version's files."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.state import JobState, RoundRecord


def edit(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Keep the best version's schedule for a search, or regenerate all four files for a new schedule."""
    ctx, spec, diagnosis = runtime.context, state["spec"], state["proposal"]
    assert diagnosis is not None and diagnosis.action is not None
    action, best_index = diagnosis.action, state["best_round"]
    best = state["rounds"][best_index] if best_index is not None else None
    assert best is not None
    if action.schedule == best.config.schedule:
        start, files = best.config, state["best_files"]
    else:
        start = action.preferred[0] if action.preferred else ctx.generator.default_config(
            spec, action.schedule, state["device"])
        files = ctx.generator.generate(spec, start)
    pending = RoundRecord(
        index=len(state["rounds"]), edit_type=action.expected_edit, config=start, reason=diagnosis.change,
        accuracy_status="not run", action=action.key, base_index=best.index,
        diagnosis=diagnosis.model_dump(exclude={"action"}),
    )
    ctx.report("edit", f"round {pending.index}: {action.key} (from v{best.index}, {best.config.label()})")
    return {"files": files, "pending": pending, "done": [*state.get("done", []), action.key]}
