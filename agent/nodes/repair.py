"""Stage 4a': give the model the failure of the version just logged and take its fix (bounded attempts)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.llm.authoring import repair as ask_repair
from agent.llm.changes import apply_changes
from agent.llm.client import LlmError
from agent.llm.failure import describe_failure
from agent.state import JobState, RoundRecord


def repair(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Ask for a fix with the error, failing cases and code; the fixed version goes back to accuracy."""
    ctx, spec, rounds = runtime.context, state["spec"], state["rounds"]
    assert ctx.llm is not None
    failed_record, failed = rounds[-1], state["last_files"]
    attempt, limit = state.get("repair_attempts", 0) + 1, ctx.llm.config.max_repairs
    earlier = [f"v{r.index} {f.stage}: {f.summary[:200]}" for r in rounds[-attempt:-1] for f in [describe_failure(r)]]
    failure = describe_failure(failed_record)
    ctx.report("repair", f"attempt {attempt}/{limit} on v{failed_record.index}: {failure.summary[:200]}")
    try:
        changed = ask_repair(ctx.llm, spec, state["device"], failed, failure, failed_index=failed_record.index,
                             attempt=attempt, max_attempts=limit, earlier=earlier,
                             definition=state.get("definition", ""))
        change = apply_changes(ctx.llm, spec, state["device"], failed, changed)
    except LlmError as exc:
        message = f"the LLM could not repair v{failed_record.index}: {exc}"
        ctx.report("repair", message)
        return {"llm_error": message, "message": message, "pending": None}
    index = len(rounds)
    notes = "; ".join(change.notes)
    pending = RoundRecord(
        index=index, edit_type=change.edit_type, config=change.files.config, origin="llm",
        reason=f"repair {attempt}/{limit} of v{failed_record.index} ({failure.stage}: {failure.summary[:300]})"
               + (f"; {notes}" if notes else ""),
        accuracy_status="not run", repair_of=failed_record.index, base_index=failed_record.index,
        triton_source=change.files.source("triton"), diff=change.diff(failed, f"v{failed_record.index}", f"v{index}"),
    )
    if change.problem is not None:
        pending = pending.model_copy(update={"accuracy_status": "refused", "verdict": change.problem})
    ctx.report("repair", f"v{index}: {change.edit_type} edit of {', '.join(sorted(changed))}"
               + (f" ({notes})" if notes else "") + (f"; refused: {change.problem}" if change.problem else ""))
    return {"files": change.files, "pending": pending, "repair_attempts": attempt}
